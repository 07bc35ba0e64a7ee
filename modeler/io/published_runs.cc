#include "modeler/io/published_runs.h"

#include <algorithm>

#include "modeler/io/run_model_schema.h"
#include "modeler/io/yaml_reader.h"
#include "modeler/pipeline_layout.h"
#include "modeler/plan.h"

namespace shardplan::io {

namespace {

ModelDesc read_model(MapReader& r, int* seq_len, bool* moe) {
  ModelDesc m;
  read_run_model_shape(r, &m);
  m.ffn_hidden = r.positive_int("ffn_hidden");
  *seq_len = r.positive_int("seq_len");
  if (auto e = r.opt_map("moe")) m.moe = read_run_model_moe(*e, m);
  if (auto a = r.opt_map("mla")) m.mla = read_run_model_mla(*a);
  m.mtp_layers = r.opt_int("mtp_layers", 0, 1 << 20).value_or(0);  // MTP modules the architecture defines
  *moe = m.moe.has_value();
  // The schema does not name norm or positions: gated-MLP rows are Llama-family (RMSNorm, RoPE); the others are
  // GPT-style Megatron/MPT models with LayerNorm and learned absolute positions (Megatron's default
  // position_embedding_type; the llm-foundry rows' notes say the same).
  m.norm = m.gated_mlp ? NormKind::rmsnorm : NormKind::layernorm;
  m.position = m.gated_mlp ? PositionKind::rope : PositionKind::learned;
  m.max_position = *seq_len;
  check_run_model_heads(r, m);
  r.finish();
  return m;
}

Dtype read_precision(MapReader& r) {
  const std::string s = r.choice("precision", {"bf16", "fp16", "fp8", "mxfp8", "nvfp4", "fp32"});
  if (s == "fp16") return Dtype::fp16;
  if (s == "fp8" || s == "mxfp8") return Dtype::fp8;
  if (s == "nvfp4") return Dtype::fp4;
  if (s == "fp32") return Dtype::fp32;
  return Dtype::bf16;
}

PublishedRun read_run(const YAML::Node& node, const std::string& file) {
  PublishedRun run;
  run.line = node.Mark().line + 1;
  MapReader r(node, file, "");
  run.id = r.string("id");
  MapReader top(node, file, run.id);  // key paths below read "<id>.plan.tp"
  top.string("id");
  run.source = top.string("source");
  run.url = top.opt_string("url").value_or("");
  run.trust = top.opt_string("trust").value_or("");
  run.framework =
      top.choice("framework", {"megatron-lm", "nemo", "torchtitan", "llm-foundry", "megatron-deepspeed", "other"});
  run.notes = top.opt_string("notes").value_or("");
  run.framework_version = top.opt_string("framework_version").value_or("");
  run.date = top.opt_string("date").value_or("");
  if (!run.date.empty()) {
    const std::string& d = run.date;
    const bool digits4 =
        d.size() >= 4 && std::all_of(d.begin(), d.begin() + 4, [](char c) { return c >= '0' && c <= '9'; });
    const bool ok = digits4 && (d.size() == 4 || (d.size() == 7 && d[4] == '-' && d[5] >= '0' && d[5] <= '1' &&
                                                   d[6] >= '0' && d[6] <= '9'));
    if (!ok) top.fail("date", "expected YYYY or YYYY-MM, got '" + d + "'");
  }
  run.plan.compiled = top.opt_boolean("compiled");

  int seq_len = 0;
  MapReader model = top.map("model");
  run.model = read_model(model, &seq_len, &run.moe);

  MapReader sys = top.map("system");
  run.gpu = sys.string("gpu");
  run.system.gpus = sys.positive_int("gpus");
  run.system.gpus_per_node = sys.opt_positive_int("gpus_per_node").value_or(0);
  run.system.nvlink_domain = sys.opt_positive_int("nvlink_domain").value_or(0);
  // Bounded: 0.1 Gb/s is below any datacentre NIC and 1e6 W above any board (--nic-gbps, --power-limit-w agree).
  run.system.nic_gbps_per_gpu = sys.opt_number_in("nic_gbps_per_gpu", 0.1, 1e6).value_or(0);
  run.power_limit_w = sys.opt_number_in("power_limit_w", 1, 1e5);
  sys.finish();

  Plan& p = run.plan.plan;
  p.precision = read_precision(top);
  run.precision_name = node["precision"].Scalar();
  // precision mxfp8 states its recipe; fp8_recipe states any (null: not stated).
  if (node["precision"] && node["precision"].IsScalar() && node["precision"].Scalar() == "mxfp8")
    run.plan.fp8_recipe = Fp8Recipe::mxfp8;
  if (const auto name = top.opt_choice("fp8_recipe", {"delayed", "tensorwise", "blockwise", "mxfp8", "nvfp4"})) {
    if (p.precision != Dtype::fp8 && p.precision != Dtype::fp4)
      top.fail("fp8_recipe", "fp8_recipe '" + *name + "' needs precision fp8, mxfp8 or nvfp4");
    const Fp8Recipe recipe = *parse_fp8_recipe(*name);
    if ((recipe == Fp8Recipe::nvfp4) != (p.precision == Dtype::fp4))
      top.fail("fp8_recipe", "fp8_recipe '" + *name + "' does not match precision");
    if (run.plan.fp8_recipe && *run.plan.fp8_recipe != recipe)
      top.fail("fp8_recipe", "fp8_recipe '" + *name + "' contradicts precision mxfp8");
    run.plan.fp8_recipe = recipe;
  }
  p.seq_len = seq_len;
  MapReader plan = top.map("plan");
  p.tp = plan.positive_int("tp");
  p.pp = plan.positive_int("pp");
  p.vpp = plan.opt_positive_int("vpp").value_or(1);
  p.dp = plan.positive_int("dp");
  p.cp = plan.opt_positive_int("cp").value_or(1);
  p.ep = plan.opt_positive_int("ep").value_or(1);
  run.etp = plan.opt_positive_int("etp");
  p.etp = run.etp.value_or(p.tp);  // Megatron-Core: expert_tensor_parallel_size defaults to tensor_model_parallel_size
  p.zero = plan.opt_int("zero", 0, 3).value_or(0);
  run.plan.sequence_parallel = plan.opt_boolean("sequence_parallel");
  run.plan.micro_batch = plan.opt_positive_int("micro_batch");
  run.plan.tp_comm_overlap = plan.opt_boolean("tp_comm_overlap");
  run.plan.recompute_num_layers = plan.opt_int("recompute_num_layers", 0, 1 << 20);
  run.plan.fp8_param_gather = plan.opt_boolean("fsdp_fp8_all_gather");
  // Optional MoE keys (issue 13, docs/moe.md): the token dispatcher, node-limited routing (max nodes per token),
  // the capacity factor (0: dropless; token-drop runs pad every expert to capacity) and combined-1F1B EP overlap.
  if (const auto d = plan.opt_choice("moe_dispatcher", {"alltoall", "allgather", "deepep", "hybridep"}))
    p.moe_dispatcher = parse_moe_dispatcher(*d);
  p.moe_max_nodes = plan.opt_int("moe_max_nodes", 0, 1 << 20).value_or(0);
  p.capacity_factor = plan.opt_number_in("moe_capacity_factor", 0.0, 1e6).value_or(0.0);
  run.plan.ep_comm_overlap = plan.opt_boolean("ep_comm_overlap");
  // Multi-token prediction trained (Megatron-Core --mtp-num-layers) and a custom pipeline layout
  // (--pipeline-model-parallel-layout, modeler/pipeline_layout.h), as a recipe states them.
  p.mtp_layers = plan.opt_int("mtp_layers", 0, 1 << 20).value_or(0);
  if (const auto layout = plan.opt_string("pipeline_layout")) {
    std::string error;
    if (!parse_pipeline_layout(*layout, &error)) plan.fail("pipeline_layout", "'" + *layout + "': " + error);
    p.pipeline_layout = *layout;
  }
  p.global_batch = plan.positive_int("global_batch");
  if (const auto rc = plan.opt_choice("recompute", {"none", "selective", "full"})) {
    run.plan.recompute = *rc == "none" ? Recompute::none : *rc == "selective" ? Recompute::selective : Recompute::full;
  }
  // Megatron-Core's selective-recompute modules (TransformerConfig.recompute_modules, Megatron's spelling, joined by
  // + or ,), as a recipe states them; they need recompute selective (or null, which they then set).
  if (const auto mods = plan.opt_string("recompute_modules")) {
    std::string unknown;
    const std::optional<unsigned> set = parse_recompute_modules(*mods, &unknown);
    if (!set) plan.fail("recompute_modules", "unknown recompute module '" + unknown + "'");
    if (run.plan.recompute && *run.plan.recompute != Recompute::selective)
      plan.fail("recompute_modules", "recompute_modules needs recompute selective (or null)");
    run.plan.recompute = Recompute::selective;
    run.plan.plan.recompute_modules = *set;
    run.plan.recompute_modules_given = true;
  }
  if (run.plan.recompute_num_layers && run.plan.recompute && *run.plan.recompute != Recompute::full)
    plan.fail("recompute_num_layers", "recompute_num_layers needs recompute full (or null)");
  // Transformer Engine CPU offload of the first N layers' activations (Megatron-Core --cpu-offloading-num-layers,
  // Megatron-Bridge perf configs' cpu_offloading_num_layers). Megatron-Core refuses it with activation recompute
  // (transformer_config.py __post_init__), so a row that offloads recomputes nothing.
  p.activation_offload_layers = plan.opt_int("activation_offload_layers", 0, 1 << 20).value_or(0);
  if (p.activation_offload_layers > 0) {
    if (run.plan.recompute && *run.plan.recompute != Recompute::none)
      plan.fail("activation_offload_layers", "activation_offload_layers needs recompute none (or null)");
    run.plan.recompute = Recompute::none;
  }
  if (const std::string limit = plan_limit_violation(p); !limit.empty()) plan.fail_here(limit);
  plan.finish();

  MapReader meas = top.map("measured");
  run.measured_tokens_per_s_per_gpu = meas.positive("tokens_per_s_per_gpu");
  run.measured_step_time_s = meas.opt_positive("step_time_s");
  run.measured_model_tflops_per_gpu = meas.opt_positive("model_tflops_per_gpu");
  run.measured_peak_memory_gib = meas.opt_positive("peak_memory_gib");
  meas.opt_string("derived_from");
  meas.finish();
  top.finish();
  return run;
}

}  // namespace

std::vector<PublishedRun> parse_published_runs(std::string_view text, const std::string& filename) {
  const YAML::Node root = parse_yaml(text, filename);
  if (!root.IsSequence()) throw ConfigError(where(root, filename) + "expected a list of runs");
  std::vector<PublishedRun> runs;
  for (const YAML::Node& entry : root) runs.push_back(read_run(entry, filename));
  return runs;
}

std::vector<PublishedRun> load_published_runs(const std::string& path) {
  return parse_published_runs(read_file(path), path);
}

}  // namespace shardplan::io
