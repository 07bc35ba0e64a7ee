// runs_yaml: imported runs written as a published-runs file (schema 1, docs/validation.md), the format
// `validate --runs` reads back. Split from log_import.cc: reading a log and writing the runs file are two ideas.
#include "calibrate/imported_run_yaml.h"

#include <yaml-cpp/yaml.h>

#include <optional>
#include <stdexcept>

namespace shardplan::calibrate {

std::string runs_yaml(const std::vector<ImportedRun>& runs) {
  YAML::Emitter out;
  out.SetDoublePrecision(6);  // the logs print 4-5 significant digits; more would be noise
  out << YAML::BeginSeq;
  // An optional value, or null: the schema's "not stated".
  const auto opt = [&](const char* key, const auto& v) {
    out << YAML::Key << key << YAML::Value;
    if (v)
      out << *v;
    else
      out << YAML::Null;
  };
  for (const ImportedRun& r : runs) {
    const ModelDesc& m = r.model;
    out << YAML::BeginMap;
    out << YAML::Key << "id" << YAML::Value << r.id;
    out << YAML::Key << "source" << YAML::Value << r.source;
    out << YAML::Key << "url" << YAML::Value << YAML::Null;
    out << YAML::Key << "trust" << YAML::Value << "high";
    out << YAML::Key << "framework" << YAML::Value << r.framework;
    out << YAML::Key << "model" << YAML::Value << YAML::BeginMap;
    out << YAML::Key << "name" << YAML::Value << m.name;
    out << YAML::Key << "layers" << YAML::Value << m.layers;
    out << YAML::Key << "hidden" << YAML::Value << m.hidden;
    out << YAML::Key << "ffn_hidden" << YAML::Value << m.ffn_hidden;
    out << YAML::Key << "heads" << YAML::Value << m.heads;
    out << YAML::Key << "kv_heads" << YAML::Value << m.kv_heads;
    out << YAML::Key << "head_dim" << YAML::Value << m.head_dim;
    out << YAML::Key << "vocab" << YAML::Value << m.vocab;
    out << YAML::Key << "seq_len" << YAML::Value << r.seq_len;
    out << YAML::Key << "gated_mlp" << YAML::Value << m.gated_mlp;
    out << YAML::Key << "tied_embeddings" << YAML::Value << m.tied_embeddings;
    out << YAML::Key << "moe" << YAML::Value;
    if (m.moe) {
      out << YAML::BeginMap << YAML::Key << "experts" << YAML::Value << m.moe->experts << YAML::Key << "top_k"
          << YAML::Value << m.moe->top_k << YAML::Key << "expert_ffn_hidden" << YAML::Value << m.moe->expert_ffn_hidden
          << YAML::Key << "shared_experts" << YAML::Value << m.moe->shared_experts << YAML::Key << "dense_layers"
          << YAML::Value << m.moe->dense_layers << YAML::EndMap;
    } else {
      out << YAML::Null;
    }
    out << YAML::Key << "mla" << YAML::Value;
    if (m.mla) {
      out << YAML::BeginMap << YAML::Key << "q_lora_rank" << YAML::Value << m.mla->q_lora_rank << YAML::Key
          << "kv_lora_rank" << YAML::Value << m.mla->kv_lora_rank << YAML::Key << "qk_nope_head_dim" << YAML::Value
          << m.mla->qk_nope_head_dim << YAML::Key << "qk_rope_head_dim" << YAML::Value << m.mla->qk_rope_head_dim
          << YAML::Key << "v_head_dim" << YAML::Value << m.mla->v_head_dim << YAML::EndMap;
    } else {
      out << YAML::Null;
    }
    out << YAML::EndMap;
    out << YAML::Key << "system" << YAML::Value << YAML::BeginMap;
    out << YAML::Key << "gpu" << YAML::Value << r.gpu;
    out << YAML::Key << "gpus" << YAML::Value << r.gpus;
    opt("gpus_per_node", r.gpus_per_node > 0 ? std::optional<int>(r.gpus_per_node) : std::nullopt);
    opt("nvlink_domain", r.nvlink_domain > 0 ? std::optional<int>(r.nvlink_domain) : std::nullopt);
    out << YAML::Key << "nic_gbps_per_gpu" << YAML::Value << YAML::Null;
    out << YAML::Key << "power_limit_w" << YAML::Value << YAML::Null;
    out << YAML::EndMap;
    out << YAML::Key << "precision" << YAML::Value << r.precision;
    if (!r.fp8_recipe.empty() && r.precision != "mxfp8")
      out << YAML::Key << "fp8_recipe" << YAML::Value << r.fp8_recipe;
    out << YAML::Key << "plan" << YAML::Value << YAML::BeginMap;
    out << YAML::Key << "tp" << YAML::Value << r.tp;
    out << YAML::Key << "pp" << YAML::Value << r.pp;
    out << YAML::Key << "vpp" << YAML::Value << r.vpp;
    out << YAML::Key << "dp" << YAML::Value << r.dp;
    out << YAML::Key << "cp" << YAML::Value << r.cp;
    out << YAML::Key << "ep" << YAML::Value << r.ep;
    opt("etp", r.etp);
    out << YAML::Key << "zero" << YAML::Value << r.zero;
    opt("sequence_parallel", r.sequence_parallel);
    opt("micro_batch", r.micro_batch);
    out << YAML::Key << "global_batch" << YAML::Value << r.global_batch;
    out << YAML::Key << "recompute" << YAML::Value;
    if (r.recompute.empty())
      out << YAML::Null;
    else
      out << r.recompute;
    if (r.recompute_num_layers) opt("recompute_num_layers", r.recompute_num_layers);
    if (r.tp_comm_overlap) opt("tp_comm_overlap", r.tp_comm_overlap);
    out << YAML::EndMap;
    out << YAML::Key << "measured" << YAML::Value << YAML::BeginMap;
    out << YAML::Key << "tokens_per_s_per_gpu" << YAML::Value << r.tokens_per_s_per_gpu;
    out << YAML::Key << "step_time_s" << YAML::Value << r.step_time_s;
    opt("model_tflops_per_gpu", r.model_tflops_per_gpu);
    opt("peak_memory_gib", r.peak_memory_gib);
    out << YAML::Key << "derived_from" << YAML::Value << r.derived_from;
    out << YAML::EndMap;
    out << YAML::Key << "notes" << YAML::Value << r.notes;
    out << YAML::EndMap;
  }
  out << YAML::EndSeq;
  if (!out.good()) throw std::logic_error("YAML emitter: " + out.GetLastError());
  return std::string(
             "# Runs imported by `shardplan calibrate import-log` (published-runs schema 1, docs/validation.md;\n"
             "# docs/import-log.md says how each value was read). Warm-up steps are dropped; see derived_from.\n") +
         out.c_str() + "\n";
}

}  // namespace shardplan::calibrate
