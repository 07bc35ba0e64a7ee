// torchtitan launch units in two release forms: the current Python config (torchtitan main b5bcd76, where a run
// is a function returning Trainer.Config, picked with --module/--config; TOML is no longer read) and the v0.2.x TOML
// job config (v0.2.2 torchtitan/config/job_config.py). Both derive from the torchtitan model flavor matching the
// model, write every stage's modules explicitly (module_fqns_per_model_part, so uneven splits and the embedding
// and output are placed exactly), and refuse what the release cannot express.
#include <sstream>

#include "modeler/finetune.h"
#include "modeler/io/emit_common.h"

namespace shardplan::io::detail {

namespace {

constexpr const char* kMainTarget = "torchtitan main b5bcd76 (Python Trainer.Config; run with --module/--config)";
constexpr const char* kTomlTarget = "torchtitan v0.2.2 (TOML job config: torchrun ... --job.config_file THIS_FILE)";

/// A torchtitan model flavor: the v0.2.2 [model] name/flavor and the main-branch config function deriving it.
struct TitanModel {
  const char* name;      // torchtitan model package
  const char* flavor;    // its flavor key
  const char* function;  // main: <package>.config_registry function; "" where main ships none
  int layers, hidden;
  bool moe;
};
// torchtitan/models/{llama3,deepseek_v3,qwen3}/__init__.py flavors (v0.2.2) and config_registry.py (main).
constexpr TitanModel kTitanModels[] = {
    {"llama3", "8B", "llama3_8b", 32, 4096, false},        {"llama3", "70B", "llama3_70b", 80, 8192, false},
    {"llama3", "405B", "llama3_405b", 126, 16384, false},  {"deepseek_v3", "671B", "deepseek_v3_671b", 61, 7168, true},
    {"qwen3", "30B-A3B", "qwen3_30b_a3b", 48, 2048, true}, {"qwen3", "235B-A22B", "", 94, 4096, true},
};

const TitanModel& titan_model(const ModelDesc& m, EmitFormat f) {
  for (const TitanModel& t : kTitanModels)
    if (t.layers == m.layers && t.hidden == m.hidden && t.moe == m.moe.has_value()) return t;
  throw ConfigError(what(f) + "torchtitan defines no model flavor matching " + m.name + " (" +
                    std::to_string(m.layers) + " layers, hidden " + std::to_string(m.hidden) +
                    "); its flavors are llama3 8B/70B/405B, deepseek_v3 671B, qwen3 30B-A3B/235B-A22B; --emit json "
                    "writes the plan");
}

/// Each stage's module names in model order (tok_embeddings first, norm and the output head last).
std::vector<std::vector<std::string>> stage_modules(const Plan& p, int layers, const char* head) {
  std::vector<std::vector<std::string>> out;
  int next = 0;
  const std::vector<int> counts = stage_layers(p, layers);
  for (size_t i = 0; i < counts.size(); ++i) {
    std::vector<std::string> s;
    if (i == 0) s.push_back("tok_embeddings");
    for (int k = 0; k < counts[i]; ++k) s.push_back("layers." + std::to_string(next++));
    if (i + 1 == counts.size()) {
      s.push_back("norm");
      s.push_back(head);
    }
    out.push_back(s);
  }
  return out;
}

std::string string_list(const std::vector<std::string>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", \"" : "\"") + v[i] + "\"";
  return s + "]";
}

std::string q(const std::string& s) { return "\"" + s + "\""; }

/// Checks both forms share: what torchtitan cannot run as the prediction assumed.
void check_common(const Plan& p, EmitFormat f) {
  // training.mixed_precision_param is Literal["bfloat16", "float32"] in both releases (v0.2.2
  // torchtitan/config/job_config.py, main torchtitan/config/configs.py): FSDP2 and autocast run in bf16 or fp32,
  // never fp16, so an fp16 plan has no torchtitan form (and writing bfloat16 would run another plan).
  if (p.precision == Dtype::fp16)
    throw ConfigError(what(f) + "torchtitan's training.mixed_precision_param takes bfloat16 or float32, not float16: "
                                "predict with --precision bf16, or keep fp16 with --framework megatron-lm and "
                                "--emit megatron");
  if (p.zero == 1) throw ConfigError(what(f) + "torchtitan has no optimizer-only sharding (ZeRO-1)");
  if (p.recompute == Recompute::full && p.recompute_layers > 0)
    throw ConfigError(what(f) + "torchtitan checkpoints every k-th layer, not the first " +
                      std::to_string(p.recompute_layers) + " of each chunk (--recompute-layers)");
  if (p.recompute == Recompute::selective && p.recompute_modules != kRecomputeCoreAttn)
    throw ConfigError(what(f) + "the plan recomputes Megatron-Core modules (" +
                      recompute_modules_string(p.recompute_modules) + "), which torchtitan does not offer");
}

/// torchtitan's module names of the adapter targets (models/common: wq, wkv builds wk and wv, wo, w1 gate, w3 up,
/// w2 down), for LoRAConverter.Config(target_modules=...).
std::vector<std::string> titan_lora_targets(unsigned t) {
  std::vector<std::string> out;
  if (t & kLoraQ) out.push_back("wq");
  if (t & (kLoraK | kLoraV)) out.push_back("wkv");
  if (t & kLoraO) out.push_back("wo");
  if (t & kLoraGate) out.push_back("w1");
  if (t & kLoraUp) out.push_back("w3");
  if (t & kLoraDown) out.push_back("w2");
  return out;
}

}  // namespace

std::string emit_torchtitan_toml(const EmitInput& in) {
  const Plan& p = in.estimate.plan;
  const ModelDesc& m = desc_of(in);
  const EmitFormat f = EmitFormat::torchtitan_toml;
  check_common(p, f);
  const TitanModel& t = titan_model(m, f);
  // v0.2.2: no LoRA (components/lora.py came later) and Adam/AdamW only (components/optimizer.py).
  if (base_frozen(p))
    throw ConfigError(what(f) + "torchtitan v0.2.2 has no LoRA; --emit torchtitan writes the current release's "
                                "LoRAConverter config");
  if (p.finetune.optimizer != Optimizer::adamw)
    throw ConfigError(what(f) + "torchtitan v0.2.2 offers Adam and AdamW, not " + to_string(p.finetune.optimizer));
  if (p.precision == Dtype::fp4)
    throw ConfigError(what(f) +
                      "torchtitan v0.2.2 has no fp4 converter (NVFP4 came later); --emit torchtitan writes "
                      "the current release's config");
  const Fp8Recipe recipe = fp8_recipe_of(p, in.framework);
  std::ostringstream o;
  o << header(in, "#", kTomlTarget);
  o << "\n[model]\nname = " << q(t.name) << "\nflavor = " << q(t.flavor) << "\n";
  if (p.precision == Dtype::fp8)
    o << "converters = [" << q(recipe == Fp8Recipe::mxfp8 ? "quantize.linear.mx" : "quantize.linear.float8") << "]\n";
  // FSDP2 shards over the data-parallel ranks for ZeRO 2 and 3 (reshard after forward never / always); ZeRO 0 is
  // replication (DDP), which framework_rules.cc admits only when data parallelism is the whole mesh.
  // HSDP (plan dp_shard): replicate dp / dp_shard x shard dp_shard (torchtitan config/configs.py).
  const bool shard = p.zero >= 2;
  const int shard_degree = p.dp_shard > 0 ? p.dp_shard : p.dp, replicate = p.dp / shard_degree;
  o << "\n[parallelism]\n"
    << "data_parallel_replicate_degree = " << (shard ? replicate : p.dp) << "\n"
    << "data_parallel_shard_degree = " << (shard ? shard_degree : 1) << "\n";
  if (shard) o << "fsdp_reshard_after_forward = " << q(p.zero == 3 ? "always" : "never") << "\n";
  o << "tensor_parallel_degree = " << p.tp << "\n"
    << "enable_async_tensor_parallel = " << (p.tp_comm_overlap ? "true" : "false") << "\n"
    << "pipeline_parallel_degree = " << p.pp << "\n";
  if (p.pp > 1) {
    o << "pipeline_parallel_schedule = " << q(p.vpp > 1 ? "Interleaved1F1B" : "1F1B") << "\n"
      << "pipeline_parallel_microbatch_size = " << p.micro_batch << "\n"
      << "module_fqns_per_model_part = [";
    const auto stages = stage_modules(p, m.layers, "output");
    for (size_t i = 0; i < stages.size(); ++i) o << (i ? ", " : "") << string_list(stages[i]);
    o << "]\n";
  }
  o << "context_parallel_degree = " << p.cp << "\n";
  // PyTorch's context parallelism passes K/V around the ring with its all-to-all rotater, or all-gathers them
  // (torch/distributed/tensor/experimental/_attention.py _AllToAllRotater, _AllGatherRotater).
  if (p.cp > 1)
    o << "context_parallel_rotate_method = " << q(p.cp_kind == CpKind::ring ? "alltoall" : "allgather") << "\n";
  if (in.moe)
    o << "expert_parallel_degree = " << p.ep << "\n"
      << "expert_tensor_parallel_degree = " << p.etp << "\n";
  // With pipelining the local batch is split into pipeline micro-batches; without, global / (local x dp) is the
  // gradient-accumulation count.
  const int local = p.pp > 1 ? p.global_batch / p.dp : p.micro_batch;
  o << "\n[training]\n"
    << "local_batch_size = " << local << "\n"
    << "global_batch_size = " << p.global_batch << "\n"
    << "seq_len = " << p.seq_len << "\n"
    << "mixed_precision_param = " << q("bfloat16") << "\n";
  if (p.param_offload) o << "enable_cpu_offload = true\n";
  o << "\n[activation_checkpoint]\n"
    << "mode = " << q(p.recompute == Recompute::none ? "none" : to_string(p.recompute)) << "\n";
  // The selective recompute the prediction models is op-level SAC (framework.h selective_is_op_sac).
  if (p.recompute == Recompute::selective) o << "selective_ac_option = " << q("op") << "\n";
  // Async TP runs only inside torch.compile (torchtitan/distributed/tensor_parallel.py maybe_enable_async_tp).
  o << "\n[compile]\nenable = " << (p.tp_comm_overlap ? "true" : "false") << "\n"
    << "components = [" << q("model") << ", " << q("loss") << "]\n";
  if (p.precision == Dtype::fp8 && recipe != Fp8Recipe::mxfp8)
    o << "\n[quantize.linear.float8]\nrecipe_name = " << q("tensorwise") << "\n";
  if (p.precision == Dtype::fp8 && recipe == Fp8Recipe::mxfp8)
    o << "\n[quantize.linear.mx]\nrecipe_name = " << q("mxfp8_cublas") << "\n";
  return o.str();
}

std::string emit_torchtitan_python(const EmitInput& in) {
  const Plan& p = in.estimate.plan;
  const ModelDesc& m = desc_of(in);
  const EmitFormat f = EmitFormat::torchtitan;
  check_common(p, f);
  const TitanModel& t = titan_model(m, f);
  if (std::string(t.function).empty())
    throw ConfigError(what(f) + "torchtitan main ships no config for " + t.name + " " + t.flavor +
                      "; --emit torchtitan-toml writes the v0.2.2 form");
  if (p.cp > 1 && !emit_writes_cp_kind(f, p.cp_kind))
    throw ConfigError(
        what(f) +
        "torchtitan main has no context_parallel_rotate_method: K/V are all-gathered "
        "(PyTorch's default), not passed around a ring; use --cp-kind allgather or --emit torchtitan-toml");
  if (in.moe && p.ep > 1 && p.etp != 1)
    throw ConfigError(what(f) + "torchtitan main has no expert tensor parallelism (etp " + std::to_string(p.etp) +
                      "): EP borrows its ranks from FSDP and TP (torchtitan/config/configs.py)");
  // The optimizer is AdamW here; DistMuon needs param groups (hidden matrices vs the rest) this emitter does not write.
  if (p.finetune.optimizer != Optimizer::adamw)
    throw ConfigError(what(f) + "this emitter writes torchtitan's AdamW; --optimizer " +
                      to_string(p.finetune.optimizer) +
                      (p.finetune.optimizer == Optimizer::muon ? " needs DistMuon param groups set by hand"
                                                               : " is not offered"));
  const Fp8Recipe recipe = fp8_recipe_of(p, in.framework);
  std::ostringstream o;
  o << header(in, "#", kMainTarget)
    << "# Save as e.g. my_configs/shardplan_run.py, then: NGPU=" << gpus_per_node_of(in.system)
    << " MODULE=my_configs.shardplan_run CONFIG=shardplan_plan ./run_train.sh (on each of " << nodes_of(in.system)
    << " nodes)\n"
    << "from torchtitan.config import CompileConfig\n"
    << "from torchtitan.distributed.activation_checkpoint import FullAC, SelectiveAC\n"
    << "from torchtitan.models." << t.name << " import model_registry\n"
    << "from torchtitan.models." << t.name << ".config_registry import " << t.function << "\n";
  if (p.precision == Dtype::fp8 || p.precision == Dtype::fp4)
    o << "from torchtitan.components.quantization import Float8LinearConverter, MXFP8LinearConverter, "
         "NVFP4LinearConverter\n";
  if (base_frozen(p)) o << "from torchtitan.components.lora import LoRAConverter\n";
  o << "\n\ndef shardplan_plan():\n"
    << "    config = " << t.function << "()\n"
    << "    par = config.parallelism\n";
  const bool shard = p.zero >= 2;
  const int shard_degree = p.dp_shard > 0 ? p.dp_shard : p.dp, replicate = p.dp / shard_degree;
  o << "    par.data_parallel_replicate_degree = " << (shard ? replicate : p.dp) << "\n"
    << "    par.data_parallel_shard_degree = " << (shard ? shard_degree : 1) << "\n";
  // FSDP2 CPUOffloadPolicy: parameters, gradients and optimizer states on the host (config/configs.py).
  if (p.param_offload) o << "    config.training.enable_cpu_offload = True\n";
  if (shard) o << "    par.fsdp_reshard_after_forward = " << q(p.zero == 3 ? "always" : "never") << "\n";
  o << "    par.tensor_parallel_degree = " << p.tp << "\n"
    << "    par.enable_sequence_parallel = " << (p.sequence_parallel || p.tp == 1 ? "True" : "False") << "\n"
    << "    par.pipeline_parallel_degree = " << p.pp << "\n";
  // Pipeline micro-batches per step: all of the data-parallel rank's batch goes through the pipeline.
  const int pp_microbatches = p.pp > 1 ? p.global_batch / (p.micro_batch * p.dp) : 1;
  if (p.pp > 1) {
    o << "    par.pipeline_parallel_schedule = " << q(p.vpp > 1 ? "Interleaved1F1B" : "1F1B") << "\n"
      << "    par.num_pp_microbatches = " << pp_microbatches << "\n"
      << "    par.module_fqns_per_model_part = [\n";
    for (const auto& s : stage_modules(p, m.layers, "lm_head")) o << "        " << string_list(s) << ",\n";
    o << "    ]\n";
  }
  o << "    par.context_parallel_degree = " << p.cp << "\n";
  if (in.moe) o << "    par.expert_parallel_degree = " << p.ep << "\n";
  o << "    config.training.num_tokens_per_microbatch_per_dp_rank = " << 1L * p.micro_batch * p.seq_len << "\n"
    << "    config.training.num_tokens_per_train_step = " << 1L * p.global_batch * p.seq_len << "\n"
    << "    config.training.max_context_length = " << p.seq_len << "\n"
    << "    config.training.mixed_precision_param = " << q("bfloat16") << "\n";
  o << "    config.activation_checkpoint = "
    << (p.recompute == Recompute::none   ? "None"
        : p.recompute == Recompute::full ? "FullAC.Config()"
                                         : "SelectiveAC.Config()")
    << "\n";
  // Async TP is a torch.compile pass (CompileConfig.enable_async_tensor_parallel).
  if (p.tp_comm_overlap)
    o << "    config.compile = CompileConfig(enable=True, enable_async_tensor_parallel=True, components=[\"model\", "
         "\"loss\"])\n";
  else
    o << "    config.compile = CompileConfig(enable=False)\n";
  std::vector<std::string> converters;
  if (p.precision == Dtype::fp8 || p.precision == Dtype::fp4) {
    const std::string compiled = p.tp_comm_overlap ? "True" : "False";
    const std::string conv = p.precision == Dtype::fp4    ? "NVFP4LinearConverter"
                             : recipe == Fp8Recipe::mxfp8 ? "MXFP8LinearConverter"
                                                          : "Float8LinearConverter";
    converters.push_back(conv + ".Config(model_compile_enabled=" + compiled + ")");
  }
  // LoRA after the quantization converter, as torchtitan's llama3_debugmodel_float8_emulate_lora recipe orders
  // them; alpha (which scales the update, not the cost) as twice the rank, the common choice.
  if (base_frozen(p))
    converters.push_back("LoRAConverter.Config(rank=" + std::to_string(p.finetune.lora_rank) +
                         ", alpha=" + std::to_string(2 * p.finetune.lora_rank) + ".0, target_modules=" +
                         string_list(titan_lora_targets(p.finetune.lora_targets)) + ")");
  if (!converters.empty()) {
    o << "    config.model_spec = model_registry(" << q(t.flavor) << ", converters=[";
    for (size_t i = 0; i < converters.size(); ++i) o << (i ? ", " : "") << converters[i];
    o << "])\n";
  }
  o << "    return config\n";
  return o.str();
}

}  // namespace shardplan::io::detail
