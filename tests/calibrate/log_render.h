// Test helper for the import-log round trips: renders what a framework would print when it runs a launch unit
// shardplan emitted (its arguments/config dump, then step lines), in the formats log_<framework>.cc cite. The
// settings are taken from the emitted file itself (script flags, recipe YAML, TOML, plan JSON), never from the
// plan, so a round trip checks emitter and importer against each other.
#pragma once

#include <doctest/doctest.h>
#include <yaml-cpp/yaml.h>

#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "calibrate/imported_run_yaml.h"
#include "modeler/io/published_runs.h"
#include "modeler/model_desc.h"
#include "modeler/plan.h"

namespace shardplan::test::render {

inline std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), f, v);
  return buf;
}

/// The flags of a launch script's arrays: "--flag" -> values (unquoted; none for a bare flag).
inline std::vector<std::pair<std::string, std::vector<std::string>>> script_flags(const std::string& script) {
  std::vector<std::pair<std::string, std::vector<std::string>>> out;
  std::istringstream in(script);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("    --", 0) != 0) continue;
    std::istringstream words(line.substr(4));
    std::string flag, w;
    words >> flag;
    std::vector<std::string> values;
    while (words >> w) {
      if (w.size() >= 2 && w.front() == '"' && w.back() == '"') w = w.substr(1, w.size() - 2);
      values.push_back(w);
    }
    out.emplace_back(flag, values);
  }
  return out;
}

/// argparse's destination of a Megatron flag (dashes to underscores; --fp8-format and --fp4-format store into
/// fp8 / fp4, megatron/core/transformer/transformer_config.py argparse_meta; --no-X stores False into X).
inline std::pair<std::string, std::string> megatron_dest(const std::string& flag, const std::vector<std::string>& v) {
  std::string name = flag.substr(2);
  for (char& c : name)
    if (c == '-') c = '_';
  if (name == "fp8_format") name = "fp8";
  if (name == "fp4_format") name = "fp4";
  if (v.empty() && name.rfind("no_", 0) == 0 && name != "no_pipeline_parallel") return {name.substr(3), "False"};
  if (v.empty()) return {name, "True"};
  if (v.size() == 1) return {name, v[0]};
  std::string list = "[";
  for (size_t i = 0; i < v.size(); ++i) list += (i ? ", '" : "'") + v[i] + "'";
  return {name, list + "]"};
}

/// Megatron's _print_args block (48-column dots, sorted case-insensitively).
inline std::string arguments_block(const std::map<std::string, std::string>& args) {
  std::vector<std::string> lines;
  for (const auto& [k, v] : args)
    lines.push_back("  " + k + " " + std::string(k.size() < 48 ? 48 - k.size() : 0, '.') + " " + v);
  std::sort(lines.begin(), lines.end(), [](std::string a, std::string b) {
    for (auto* s : {&a, &b})
      for (char& c : *s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return a < b;
  });
  std::string out = "------------------------ arguments ------------------------\n";
  for (const auto& l : lines) out += l + "\n";
  return out + "-------------------- end of arguments ---------------------\n";
}

/// The arguments a Megatron-LM (or Megatron-DeepSpeed) run of `script` prints: the flags, Megatron's defaults for
/// the plan arguments not given, and what validate_args derives (world and data-parallel size, virtual stages).
inline std::map<std::string, std::string> megatron_arguments(const std::string& script, int world) {
  std::map<std::string, std::string> a = {{"context_parallel_size", "1"},
                                          {"sequence_parallel", "False"},
                                          {"use_distributed_optimizer", "False"},
                                          {"use_torch_fsdp2", "False"},
                                          {"recompute_granularity", "None"},
                                          {"recompute_method", "None"},
                                          {"recompute_num_layers", "None"},
                                          {"fp8", "None"},
                                          {"fp8_recipe", "delayed"},
                                          {"fp4", "None"},
                                          {"bf16", "False"},
                                          {"fp16", "False"},
                                          {"swiglu", "False"},
                                          {"group_query_attention", "False"},
                                          {"num_query_groups", "1"},
                                          {"untie_embeddings_and_output_weights", "False"},
                                          {"tp_comm_overlap", "False"},
                                          {"virtual_pipeline_model_parallel_size", "None"},
                                          {"make_vocab_size_divisible_by", "128"},
                                          {"rank", "0"}};
  for (const auto& [flag, values] : script_flags(script)) {
    const auto [k, v] = megatron_dest(flag, values);
    a[k] = v;
  }
  const int tp = std::stoi(a["tensor_model_parallel_size"]), pp = std::stoi(a["pipeline_model_parallel_size"]);
  const int cp = std::stoi(a["context_parallel_size"]);
  a["world_size"] = std::to_string(world);
  a["data_parallel_size"] = std::to_string(world / (tp * pp * cp));
  if (a.count("num_layers_per_virtual_pipeline_stage"))
    a["virtual_pipeline_model_parallel_size"] =
        std::to_string(std::stoi(a["num_layers"]) / (pp * std::stoi(a["num_layers_per_virtual_pipeline_stage"])));
  return a;
}

/// Steps: the first slow (start-up), the rest at `step_s`.
inline double step_time(int it, double step_s) { return it == 1 ? 3.2 * step_s : step_s * (1 + 0.001 * (it % 5)); }

inline std::string megatron_iterations(int steps, double step_s, int gbs) {
  std::string out;
  for (int it = 1; it <= steps; ++it) {
    char buf[512];
    std::snprintf(buf, sizeof(buf),
                  " [2026-12-01 09:00:%02d.000000] iteration %8d/%8d | consumed samples: %12d | elapsed time per "
                  "iteration (ms): %.1f | throughput per GPU (TFLOP/s/GPU): %.1f | learning rate: 3.000000E-04 | "
                  "global batch size: %5d | lm loss: 9.000000E+00 | loss scale: 1.0 | grad norm: 1.000 | number "
                  "of skipped iterations:   0 | number of nan iterations:   0 |\n",
                  it % 60, it, steps, it * gbs, step_time(it, step_s) * 1000, 400.0, gbs);
    out += buf;
  }
  return out;
}

/// A Megatron-LM log of a run of `script` (the emitted torchrun script) on `world` GPUs.
inline std::string megatron_log(const std::string& script, int world, int steps = 30, double step_s = 2.0) {
  auto a = megatron_arguments(script, world);
  const int tp = std::stoi(a["tensor_model_parallel_size"]);
  const int vocab = std::stoi(a["vocab_size"]), multiple = std::stoi(a["make_vocab_size_divisible_by"]) * tp;
  const int padded = (vocab + multiple - 1) / multiple * multiple;
  return "using world size: " + std::to_string(world) + "\n" + arguments_block(a) +
         " > padded vocab (size: " + std::to_string(vocab) + ") with " + std::to_string(padded - vocab) +
         " dummy tokens (new size: " + std::to_string(padded) + ")\n" +
         megatron_iterations(steps, step_s, std::stoi(a["global_batch_size"])) +
         "[Rank 0] (after 1 iterations) memory (MB) | allocated: 1000.00 | max allocated: 40960.00 | reserved: "
         "45000.00 | max reserved: 51200.00\n";
}

/// A Megatron-DeepSpeed log of a run of `script` (the emitted script with its DeepSpeed config heredoc). The
/// script names a tokenizer model, not a vocabulary: `vocab` is that tokenizer's, printed as Megatron pads it.
inline std::string deepspeed_log(const std::string& script, int world, int vocab, int steps = 30, double step_s = 2.0) {
  auto a = megatron_arguments(script, world);
  const size_t open = script.find("<<'EOF'\n"), close = script.find("\nEOF\n");
  const nlohmann::json ds = nlohmann::json::parse(script.substr(open + 8, close - open - 8));
  const int dp = world / (std::stoi(a["tensor_model_parallel_size"]) * std::stoi(a["pipeline_model_parallel_size"]));
  std::string out = arguments_block(a) + " > padded vocab (size: " + std::to_string(vocab) +
                    ") with 0 dummy tokens (new size: " + std::to_string(vocab) + ")\n";
  const std::string pre = "[2026-12-01 13:05:02,011] [INFO] [config.py:1007:print] ";
  out += pre + "DeepSpeedEngine configuration:\n";
  const std::map<std::string, std::string> attrs = {
      {"train_batch_size", ds["train_batch_size"].dump()},
      {"train_micro_batch_size_per_gpu", ds["train_micro_batch_size_per_gpu"].dump()},
      {"gradient_accumulation_steps", ds["gradient_accumulation_steps"].dump()},
      {"world_size", std::to_string(dp)},
      {"zero_optimization_stage", ds["zero_optimization"]["stage"].dump()}};
  for (const auto& [k, v] : attrs)
    out += pre + "  " + k + " " + std::string(29 - std::min<size_t>(29, k.size()), '.') + " " + v + "\n";
  out += "[2026-12-01 13:05:02,012] [INFO] [config.py:993:print_user_config]   json = " + ds.dump(4) + "\n";
  const int gbs = ds["train_batch_size"].get<int>();
  for (int it = 1; it <= steps; ++it)
    out += "[2026-12-01 13:06:00,000] [INFO] [timer.py:264:stop] epoch=0/micro_step=" + std::to_string(it) +
           "/global_step=" + std::to_string(it) + ", RunningAvgSamplesPerSec=" + fmt("%.6f", gbs / step_s) +
           ", CurrSamplesPerSec=" + fmt("%.6f", gbs / step_time(it, step_s)) +
           ", MemAllocated=9.81GB, MaxMemAllocated=31.47GB\n";
  return out;
}

/// Python's repr of a YAML scalar from the emitted recipe (booleans True/False, strings quoted).
inline std::string py_repr(const YAML::Node& n) {
  if (n.IsNull()) return "None";
  if (n.IsSequence()) {
    std::string s = "[";
    for (size_t i = 0; i < n.size(); ++i) s += (i ? ", " : "") + py_repr(n[i]);
    return s + "]";
  }
  const std::string v = n.Scalar();
  if (v == "true") return "True";
  if (v == "false") return "False";
  if (!v.empty() && (std::isdigit(static_cast<unsigned char>(v[0])) || v[0] == '-')) return v;
  return "'" + v + "'";
}

/// A Megatron-Bridge log of a run of the emitted recipe override `yaml`: the configuration summary (non-default
/// Megatron-Core values of [model], [ddp], [optimizer]; every [train] and [dataset] value) and iteration lines.
/// The mixed-precision and comm-overlap settings are applied to the model config, as Bridge does; keys that are
/// no Megatron-Core TransformerConfig field (vocab_size, seq_length, ...) are not in the summary.
inline std::string nemo_log(const std::string& yaml, int steps = 30, double step_s = 2.0) {
  const YAML::Node n = YAML::Load(yaml);
  // Megatron-Core defaults of the TransformerConfig / DDP / optimizer fields the emitter writes.
  const std::map<std::string, std::string> mcore_model = {{"num_layers", "0"},
                                                          {"hidden_size", "0"},
                                                          {"ffn_hidden_size", "None"},
                                                          {"num_attention_heads", "0"},
                                                          {"num_query_groups", "None"},
                                                          {"kv_channels", "None"},
                                                          {"normalization", "'LayerNorm'"},
                                                          {"gated_linear_unit", "False"},
                                                          {"add_bias_linear", "True"},
                                                          {"tensor_model_parallel_size", "1"},
                                                          {"pipeline_model_parallel_size", "1"},
                                                          {"virtual_pipeline_model_parallel_size", "None"},
                                                          {"context_parallel_size", "1"},
                                                          {"sequence_parallel", "False"},
                                                          {"expert_model_parallel_size", "1"},
                                                          {"expert_tensor_parallel_size", "None"},
                                                          {"recompute_granularity", "None"},
                                                          {"recompute_method", "None"},
                                                          {"recompute_num_layers", "None"},
                                                          {"recompute_modules", "['core_attn']"},
                                                          {"bf16", "False"},
                                                          {"fp16", "False"},
                                                          {"fp8", "None"},
                                                          {"fp8_recipe", "'delayed'"},
                                                          {"fp4", "None"},
                                                          {"tp_comm_overlap", "False"},
                                                          {"num_moe_experts", "None"},
                                                          {"moe_router_topk", "2"},
                                                          {"moe_ffn_hidden_size", "None"},
                                                          {"cp_comm_type", "'p2p'"}};
  std::map<std::string, std::string> model;
  const auto take = [&](const YAML::Node& section) {
    for (const auto& kv : section) {
      const std::string k = kv.first.as<std::string>();
      const auto d = mcore_model.find(k);
      if (d == mcore_model.end()) continue;  // not a TransformerConfig field: not in the summary
      const std::string v = py_repr(kv.second);
      if (v != d->second) model[k] = v;
    }
  };
  take(n["model"]);
  take(n["mixed_precision"]);
  take(n["comm_overlap"]);
  std::string out =
      "======================================================================\n"
      "Configuration Summary (Non-Default Values vs Megatron Core)\n"
      "======================================================================\n";
  const auto section = [&](const char* name, const char* cls, const YAML::Node& node) {
    std::string s;
    for (const auto& kv : node)
      if (py_repr(kv.second) != "False")
        s += "  " + kv.first.as<std::string>() + ": " + py_repr(kv.second) + "  (Mcore default: False)\n";
    if (!s.empty()) out += std::string("\n[") + name + "] Non-default values (vs Mcore " + cls + "):\n" + s;
  };
  section("optimizer", "OptimizerConfig", n["optimizer"]);
  section("ddp", "DistributedDataParallelConfig", n["ddp"]);
  out += "\n[model] Non-default values (vs Mcore TransformerConfig):\n";
  for (const auto& [k, v] : model) out += "  " + k + ": " + v + "  (Mcore default: " + mcore_model.at(k) + ")\n";
  out +=
      "\n----------------------------------------------------------------------\nOther Configuration Values:\n"
      "----------------------------------------------------------------------\n\n[train]:\n";
  for (const auto& kv : n["train"]) out += "  " + kv.first.as<std::string>() + ": " + py_repr(kv.second) + "\n";
  out += "\n[dataset]:\n";
  for (const auto& kv : n["dataset"]) out += "  " + kv.first.as<std::string>() + ": " + py_repr(kv.second) + "\n";
  out += "\n======================================================================\n";
  return out + megatron_iterations(steps, step_s, n["train"]["global_batch_size"].as<int>());
}

/// A torchtitan v0.2.2 log of a run of the emitted TOML job config: the "Running with configs:" JSON dump of
/// its tables and step lines (tps for `gpus` GPUs at `step_s` per step).
inline std::string torchtitan_log(const std::string& toml, int gpus, int steps = 30, double step_s = 2.0) {
  nlohmann::json cfg = nlohmann::json::object();
  nlohmann::json* table = &cfg;
  std::istringstream in(toml);
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    if (line[0] == '[') {
      table = &cfg;
      std::string path = line.substr(1, line.size() - 2), part;
      std::istringstream parts(path);
      while (std::getline(parts, part, '.')) table = &(*table)[part];
      continue;
    }
    const size_t eq = line.find(" = ");
    (*table)[line.substr(0, eq)] = nlohmann::json::parse(line.substr(eq + 3));  // the emitter's values are JSON
  }
  cfg["job"]["print_config"] = true;
  const int gbs = cfg["training"]["global_batch_size"].get<int>(), seq = cfg["training"]["seq_len"].get<int>();
  std::string dump = cfg.dump(2);
  std::string out = "[rank0]:[titan] 2026-12-01 12:00:01,200 - root - INFO - Running with configs: ";
  for (char c : dump) out += c == '\n' ? std::string("\n[rank0]:") : std::string(1, c);
  out += "\n";
  for (int s = 1; s <= steps; ++s) {
    const double tps = static_cast<double>(gbs) * seq / (step_time(s, step_s) * gpus);
    out += "[rank0]:[titan] 2026-12-01 12:00:05,000 - root - INFO - \x1b[31mstep: " + std::to_string(s) +
           "  \x1b[32mloss:  9.00000  \x1b[33mgrad_norm:  1.0000  \x1b[36mmemory: 62.84GiB(79.44%)  \x1b[34mtps: " +
           fmt("%.0f", tps) + "  \x1b[36mtflops: 400.00  \x1b[35mmfu: 40.44%\x1b[39m\n";
  }
  return out;
}

/// An llm-foundry log of the plan in `plan_json` (a shardplan plan JSON) for MPT-style `m`: the printed run
/// config and Composer console blocks.
inline std::string foundry_log(const std::string& plan_json, const ModelDesc& m, int steps = 30, double step_s = 2.0) {
  const nlohmann::json p = nlohmann::json::parse(plan_json)["plan"];
  const int zero = p["zero"].get<int>();
  std::string out = "max_seq_len: " + p["seq_len"].dump() +
                    "\nmodel:\n  name: mpt_causal_lm\n  d_model: " + std::to_string(m.hidden) +
                    "\n  n_heads: " + std::to_string(m.heads) + "\n  n_layers: " + std::to_string(m.layers) +
                    "\n  expansion_ratio: " + fmt("%g", double(m.ffn_hidden) / m.hidden) +
                    "\n  max_seq_len: " + p["seq_len"].dump() + "\n  vocab_size: " + std::to_string(m.vocab) +
                    "\n  attn_config:\n    attn_impl: flash\n    kv_n_heads: " + std::to_string(m.kv_heads) +
                    "\n  ffn_config:\n    ffn_type: " + (m.gated_mlp ? "mptglu" : "mptmlp") +
                    "\n  tie_word_embeddings: " + (m.tied_embeddings ? "true" : "false") +
                    "\nglobal_train_batch_size: " + p["global_batch"].dump() +
                    "\ndevice_train_microbatch_size: " + p["micro_batch"].dump() + "\nprecision: " +
                    (p["precision"] == "fp16"  ? "amp_fp16"
                     : p["precision"] == "fp8" ? "amp_fp8"
                                               : "amp_bf16") +
                    "\n";
  if (zero > 0)
    out += std::string("fsdp_config:\n  sharding_strategy: ") + (zero == 3 ? "FULL_SHARD" : "SHARD_GRAD_OP") +
           "\n  activation_checkpointing: " + (p["recompute"] == "full" ? "true" : "false") + "\n";
  out += "n_gpus: " + p["dp"].dump() + "\n";
  for (int b = 1; b <= steps; ++b) {
    out += "[batch=" + std::to_string(b) + "/" + std::to_string(steps) +
           "]:\n\t Train time/batch: " + std::to_string(b - 1) + "\n\t Train memory/peak_reserved_mem: 70.1000\n";
    if (b > 3) out += "\t Train throughput/batches_per_sec: " + fmt("%.6f", 1 / step_time(b, step_s)) + "\n";
  }
  return out;
}

/// Imports `text` as a `f` log and reads the run back through a runs file (what validate and fit-runs read).
inline io::PublishedRun import_back(calibrate::LogFramework f, const std::string& text, calibrate::ImportOptions o) {
  const calibrate::ParsedLog log = calibrate::parse_log(f, text, "rendered.log");
  const calibrate::ImportedRun run = calibrate::build_run(log, o);
  const std::vector<io::PublishedRun> runs = io::parse_published_runs(calibrate::runs_yaml({run}), "runs.yaml");
  REQUIRE(runs.size() == 1);
  return runs[0];
}

/// The imported run has the plan and model that were emitted. `mbs_stated`: the log states the micro-batch.
inline void check_same_plan(const io::PublishedRun& r, const Plan& p, const ModelDesc& m, bool mbs_stated = true) {
  const Plan& q = r.plan.plan;
  CHECK(q.tp == p.tp);
  CHECK(q.pp == p.pp);
  CHECK(q.vpp == p.vpp);
  CHECK(q.dp == p.dp);
  CHECK(q.cp == p.cp);
  CHECK(q.zero == p.zero);
  CHECK(q.global_batch == p.global_batch);
  CHECK(q.seq_len == p.seq_len);
  CHECK(q.precision == p.precision);
  if (mbs_stated) {
    REQUIRE(r.plan.micro_batch);
    CHECK(*r.plan.micro_batch == p.micro_batch);
  }
  REQUIRE(r.plan.recompute);
  CHECK(*r.plan.recompute == p.recompute);
  if (p.recompute == Recompute::full) {
    REQUIRE(r.plan.recompute_num_layers);
    CHECK(*r.plan.recompute_num_layers == p.recompute_layers);
  }
  if (p.tp > 1 && r.plan.sequence_parallel) CHECK(*r.plan.sequence_parallel == p.sequence_parallel);
  CHECK(r.system.gpus == p.tp * p.pp * p.cp * p.dp);
  CHECK(r.model.layers == m.layers);
  CHECK(r.model.hidden == m.hidden);
  CHECK(r.model.ffn_hidden == m.ffn_hidden);
  CHECK(r.model.heads == m.heads);
  CHECK(r.model.kv_heads == m.kv_heads);
  CHECK(r.model.head_dim == m.head_dim);
  CHECK(r.model.vocab == m.vocab);
  CHECK(r.model.gated_mlp == m.gated_mlp);
  CHECK(r.model.tied_embeddings == m.tied_embeddings);
  // The rendered steps run at 2 s after the first; the median of the steady ones is within 0.5% of it.
  REQUIRE(r.measured_step_time_s);
  CHECK(*r.measured_step_time_s == doctest::Approx(2.0).epsilon(0.005));
}

}  // namespace shardplan::test::render
