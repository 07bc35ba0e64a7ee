#include "modeler/io/serving_runs.h"

#include <algorithm>
#include <cctype>
#include <cmath>

#include "modeler/io/model_io.h"
#include "modeler/io/run_model_schema.h"
#include "modeler/io/yaml_reader.h"
#include "modeler/serving/formats.h"
#include "modeler/serving/host_rates.h"

namespace shardplan::io {

namespace {

const std::vector<std::string> kWeightNames = {"bf16", "fp16", "fp8", "fp8_block", "mxfp8", "nvfp4", "mxfp4",
                                               "int8_wo", "int4_wo", "q8_0", "q6_k", "q5_k_m", "q4_k_m", "q4_0",
                                               "q3_k_m", "q2_k"};

std::string dir_of(const std::string& path) {
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

ModelDesc read_inline_model(MapReader& r) {
  ModelDesc m;
  read_run_model_shape(r, &m);
  if (auto e = r.opt_map("moe")) m.moe = read_run_model_moe(*e, m);
  // ffn_hidden is the dense MLP width: required unless every layer is an MoE layer.
  const auto ffn = r.opt_positive_int("ffn_hidden");
  if (ffn) m.ffn_hidden = *ffn;
  else if (!m.moe || m.moe->dense_layers > 0) r.fail("ffn_hidden", "required for a model with dense MLP layers");
  else m.ffn_hidden = m.moe->expert_ffn_hidden;
  if (auto a = r.opt_map("mla")) m.mla = read_run_model_mla(*a);
  if (auto s = r.opt_map("sliding_window")) {
    m.sliding_window = s->positive_int("window");
    // N sliding layers then one full layer: full attention every N + 1 layers.
    m.full_attention_every = s->positive_int("sliding_layers_per_full") + 1;
    s->finish();
  }
  m.attention_sinks = r.opt_boolean("attention_sinks").value_or(false);
  // Gated-MLP rows are Llama-family (RMSNorm, RoPE); the others (OPT) LayerNorm with learned positions.
  m.norm = m.gated_mlp ? NormKind::rmsnorm : NormKind::layernorm;
  m.position = m.gated_mlp ? PositionKind::rope : PositionKind::learned;
  m.linear_bias = !m.gated_mlp;
  check_run_model_heads(r, m);
  r.finish();
  return m;
}

const std::vector<std::string> kPolicyKeys = {
    "gpu_batch_size",    "num_gpu_batches", "w_gpu_percent",   "w_cpu_percent",     "cache_gpu_percent",
    "cache_cpu_percent", "act_gpu_percent", "act_cpu_percent", "cpu_cache_compute", "compress_weight",
    "compress_cache",    "overlap",         "pin_weight",      "debug_mode"};

// A percentage key of a FlexGen policy: required, in [0, 100].
double policy_percent(MapReader& r, const std::string& key) {
  const auto v = r.opt_number_in(key, 0, 100);
  if (!v) r.fail(key, "required (a percentage in [0, 100])");
  return *v;
}

serving::FlexgenPolicy read_flexgen_policy(MapReader& f, const ServingOffload& off) {
  serving::FlexgenPolicy p;
  p.gpu_batch_size = f.positive_int("gpu_batch_size");
  p.num_gpu_batches = f.positive_int("num_gpu_batches");
  p.w_gpu_percent = policy_percent(f, "w_gpu_percent");
  p.w_cpu_percent = policy_percent(f, "w_cpu_percent");
  p.cache_gpu_percent = policy_percent(f, "cache_gpu_percent");
  p.cache_cpu_percent = policy_percent(f, "cache_cpu_percent");
  p.act_gpu_percent = policy_percent(f, "act_gpu_percent");
  p.act_cpu_percent = policy_percent(f, "act_cpu_percent");
  p.cpu_cache_compute = f.boolean("cpu_cache_compute");
  p.compress_weight = f.boolean("compress_weight");
  p.compress_cache = f.boolean("compress_cache");
  p.overlap = f.opt_boolean("overlap").value_or(true);        // flex_opt.py --overlap default
  p.pin_weight = f.opt_boolean("pin_weight").value_or(true);  // flex_opt.py --pin-weight default
  // flex_opt.py --debug (default none); "breakdown" times a no-overlap loop that is not modelled.
  if (const auto d = f.opt_string("debug_mode")) {
    if (*d != "fewer_batch") f.fail("debug_mode", "'" + *d + "' is not modelled (only fewer_batch, or null)");
    p.debug_fewer_batch = true;
  }
  if (p.w_gpu_percent + p.w_cpu_percent > 100) f.fail("w_cpu_percent", "w_gpu_percent + w_cpu_percent exceeds 100");
  if (p.cache_gpu_percent + p.cache_cpu_percent > 100)
    f.fail("cache_cpu_percent", "cache_gpu_percent + cache_cpu_percent exceeds 100");
  if (p.act_gpu_percent + p.act_cpu_percent > 100)
    f.fail("act_cpu_percent", "act_gpu_percent + act_cpu_percent exceeds 100");
  // The schema's older GPU-share keys must say the same thing when both are given.
  auto same = [&](const std::optional<double>& old, double now, const char* key, const char* old_key) {
    if (old && std::abs(*old - now) > 1e-9)
      f.fail(key, std::string("disagrees with plan.offload.") + old_key + " (" + num(*old) + ")");
  };
  same(off.weights_gpu_percent, p.w_gpu_percent, "w_gpu_percent", "weights_gpu_percent");
  same(off.kv_gpu_percent, p.cache_gpu_percent, "cache_gpu_percent", "kv_gpu_percent");
  same(off.activations_gpu_percent, p.act_gpu_percent, "act_gpu_percent", "activations_gpu_percent");
  f.finish();
  return p;
}

serving::WorkerPlan read_worker(MapReader& r, bool stage) {
  serving::WorkerPlan w;
  if (stage) w.workers = r.positive_int("workers");
  w.tp = r.opt_positive_int("tp").value_or(1);
  w.pp = r.opt_positive_int("pp").value_or(1);
  w.attention_dp = r.opt_positive_int("attention_dp").value_or(1);
  w.moe_tp = r.opt_positive_int("moe_tp").value_or(w.tp * w.attention_dp);
  w.moe_ep = r.opt_positive_int("moe_ep").value_or(1);
  if (r.has("moe_tp") && !r.has("moe_ep")) w.moe_ep = w.tp * w.attention_dp / w.moe_tp;
  if (!r.has("moe_tp") && r.has("moe_ep")) w.moe_tp = std::max(1, w.tp * w.attention_dp / w.moe_ep);
  const auto b = r.opt_positive_int(stage ? "batch" : "max_batch");
  if (b) w.batch = *b;
  return w;
}

ServingRun read_run(const YAML::Node& node, const std::string& file) {
  ServingRun run;
  run.line = node.Mark().line + 1;
  MapReader r0(node, file, "");
  run.id = r0.string("id");
  // Unknown top-level keys first: a misspelled required key reads as a suggestion, not as "missing".
  const std::vector<std::string> known = {"id", "source", "url", "trust", "deployment", "notes", "engine",
                                          "engine_version", "engine_build_date",
                                          "model", "weights_precision", "moe_weights_precision", "weights_gib",
                                          "kv_precision", "system", "plan", "workload", "measured"};
  for (const auto& kv : node) {
    const std::string key = kv.first.as<std::string>();
    if (std::find(known.begin(), known.end(), key) != known.end()) continue;
    const std::string near = closest_match(key, known);
    throw ConfigError(where(kv.first, file) + "unknown key '" + run.id + "." + key + "'" +
                      (near.empty() ? "" : ", did you mean '" + near + "'?"));
  }
  MapReader r(node, file, run.id);
  r.string("id");
  run.source = r.string("source");
  run.url = r.opt_string("url").value_or("");
  run.trust = r.choice("trust", {"high", "medium", "low"});
  if (const auto d = r.opt_choice("deployment", {"aic_generator", "sweep"}))
    run.deployment = *d == "aic_generator" ? Deployment::aic_generator : Deployment::sweep;
  run.notes = r.opt_string("notes").value_or("");
  run.engine = r.choice("engine", {"trtllm", "vllm", "sglang", "llama.cpp", "ik_llama.cpp", "flexgen",
                                   "hf-accelerate", "other"});
  run.engine_version = r.opt_string("engine_version");
  run.engine_build_date = r.opt_string("engine_build_date");
  if (run.engine_build_date) {
    const std::string& d = *run.engine_build_date;
    auto digits = [&](size_t at, size_t n) {
      for (size_t i = at; i < at + n; ++i)
        if (!std::isdigit(static_cast<unsigned char>(d[i]))) return false;
      return true;
    };
    const bool shape = d.size() == 10 && d[4] == '-' && d[7] == '-' && digits(0, 4) && digits(5, 2) && digits(8, 2);
    const int month = shape ? std::stoi(d.substr(5, 2)) : 0, day = shape ? std::stoi(d.substr(8, 2)) : 0;
    if (!shape || month < 1 || month > 12 || day < 1 || day > 31)
      r.fail("engine_build_date", "expected a date YYYY-MM-DD, got '" + d + "'");
  }
  {
    MapReader m = r.map("model");
    if (m.has("hf_config")) {
      run.model_name = m.opt_string("name").value_or("");
      const std::string path = dir_of(file) + "/" + m.string("hf_config");
      run.model = parse_hf_config(read_file(path), path, true);
      m.finish();
    } else {
      run.model = read_inline_model(m);
      run.model_name = run.model.name;
    }
  }
  run.weights_precision = r.choice("weights_precision", kWeightNames);
  run.moe_weights_precision = r.opt_choice("moe_weights_precision", kWeightNames).value_or(run.weights_precision);
  run.weights_gib = r.opt_positive("weights_gib");
  run.kv_precision = r.opt_choice("kv_precision", {"bf16", "fp16", "fp8", "q8_0", "q4_0"});
  {
    MapReader s = r.map("system");
    run.gpu = s.string("gpu");
    run.gpus = s.positive_int("gpus");
    run.gpus_per_node = s.opt_positive_int("gpus_per_node");
    run.machine = s.opt_string("machine").value_or("");
    if (auto h = s.opt_map("host")) {
      ServingHost host;
      host.cpu = h->opt_string("cpu").value_or("");
      host.cores = h->opt_positive_int("cores");
      host.memory_gib = h->opt_positive("memory_gib");
      host.memory_bw_gbps = h->opt_positive("memory_bw_gbps");
      host.pcie_gen = h->opt_int("pcie_gen", 1, 7);
      host.pcie_lanes = h->opt_int("pcie_lanes", 1, 32);
      std::vector<std::string> machines;
      for (const serving::MachineDecodeRun& m : serving::machine_decode_runs()) machines.push_back(m.name);
      host.machine = h->opt_choice("machine", machines).value_or("");
      if (!host.machine.empty()) {
        const std::string& cpu = serving::machine_decode_run(host.machine)->cpu;
        if (!host.cpu.empty() && host.cpu != cpu)
          h->fail("machine", "machine '" + host.machine + "' has CPU '" + cpu + "', the row's host.cpu is '" +
                                 host.cpu + "'");
      }
      h->finish();
      run.host = host;
    }
    s.finish();
  }
  {
    MapReader p = r.map("plan");
    const std::string mode = p.choice("mode", {"aggregated", "disaggregated"});
    if (mode == "aggregated") {
      run.mode = serving::Mode::aggregated;
      run.agg = read_worker(p, false);
    } else {
      run.mode = serving::Mode::disaggregated;
      MapReader pf = p.map("prefill");
      run.prefill = read_worker(pf, true);
      pf.finish();
      MapReader dc = p.map("decode");
      run.decode = read_worker(dc, true);
      dc.finish();
    }
    if (auto o = p.opt_map("offload")) {
      ServingOffload off;
      off.gpu_layers = o->opt_int("gpu_layers", 0, 100000);
      off.n_cpu_moe = o->opt_int("n_cpu_moe", 0, 100000);
      off.n_ubatch = o->opt_int("n_ubatch", 1, 1 << 20);
      const YAML::Node ot = o->opt_node("tensor_overrides");
      if (ot && ot.IsSequence())
        for (const auto& x : ot) off.tensor_overrides.push_back(x.as<std::string>());
      off.weights_gpu_percent = o->opt_number("weights_gpu_percent");
      off.kv_gpu_percent = o->opt_number("kv_gpu_percent");
      off.activations_gpu_percent = o->opt_number("activations_gpu_percent");
      const YAML::Node fp = o->opt_node("flexgen_policy");
      if (fp && !fp.IsNull()) {
        if (!fp.IsMap()) o->fail("flexgen_policy", "expected a mapping (FlexGen's policy)");
        const std::string path = o->key_path("flexgen_policy");
        // Unknown keys first, so a misspelled required key reads as a suggestion rather than as "missing".
        for (const auto& kv : fp) {
          const std::string key = kv.first.as<std::string>();
          if (std::find(kPolicyKeys.begin(), kPolicyKeys.end(), key) != kPolicyKeys.end()) continue;
          const std::string near = closest_match(key, kPolicyKeys);
          throw ConfigError(where(kv.first, file) + "unknown key '" + path + "." + key + "'" +
                            (near.empty() ? "" : ", did you mean '" + near + "'?"));
        }
        MapReader f(fp, file, path);
        off.flexgen_policy = read_flexgen_policy(f, off);
      }
      o->finish();
      run.offload = off;
    }
    p.finish();
  }
  {
    MapReader w = r.map("workload");
    run.input_len = w.opt_positive_int("input_len");
    run.output_len = w.opt_positive_int("output_len");
    run.concurrency = w.opt_positive_int("concurrency");
    run.batch_size = w.opt_positive_int("batch_size");
    run.request_rate = w.opt_positive("request_rate");
    run.context_depth = w.opt_int("context_depth", 0, 1 << 24);
    run.dataset = w.opt_string("dataset").value_or("");
    // A FlexGen block is gpu_batch_size x num_gpu_batches sequences: the workload's batch must be that block.
    if (run.offload && run.offload->flexgen_policy && run.batch_size &&
        *run.batch_size != run.offload->flexgen_policy->block_size())
      w.fail("batch_size", "is not plan.offload.flexgen_policy's gpu_batch_size x num_gpu_batches (" +
                               std::to_string(run.offload->flexgen_policy->block_size()) + ")");
    w.finish();
  }
  {
    MapReader m = r.map("measured");
    run.ttft_ms = m.opt_positive("ttft_ms");
    run.tpot_ms = m.opt_positive("tpot_ms");
    run.itl_ms = m.opt_positive("itl_ms");
    run.prefill_tokens_per_s = m.opt_positive("prefill_tokens_per_s");
    run.decode_tokens_per_s = m.opt_positive("decode_tokens_per_s");
    run.throughput_tokens_per_s = m.opt_positive("throughput_tokens_per_s");
    run.throughput_scope =
        m.opt_choice("throughput_scope", {"output_per_gpu", "output_total", "total_per_gpu", "total"}).value_or("");
    run.gpu_memory_gib = m.opt_positive("gpu_memory_gib");
    if (run.throughput_tokens_per_s && run.throughput_scope.empty())
      m.fail("throughput_tokens_per_s", "needs throughput_scope (what the throughput counts)");
    m.finish();
  }
  r.finish();
  return run;
}

}  // namespace

std::vector<ServingRun> parse_serving_runs(std::string_view text, const std::string& filename) {
  const YAML::Node root = parse_yaml(text, filename);
  if (!root.IsSequence()) throw ConfigError(filename + ": expected a list of serving runs");
  std::vector<ServingRun> runs;
  for (const auto& n : root) runs.push_back(read_run(n, filename));
  return runs;
}

std::vector<ServingRun> load_serving_runs(const std::string& path) {
  return parse_serving_runs(read_file(path), path);
}

}  // namespace shardplan::io
