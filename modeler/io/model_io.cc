#include "modeler/io/model_io.h"

#include <algorithm>
#include <vector>

#include "modeler/io/paths.h"
#include "modeler/io/yaml_reader.h"
#include "modeler/problems.h"

namespace shardplan::io {

namespace {

using namespace model_limits;

/// Collects the required keys that are absent so that all of them are named at once, after unknown keys (a
/// misspelled required key is reported as the typo, with its suggestion, not as a missing key).
struct Required {
  std::vector<std::string> missing;
  template <class T>
  T operator()(const std::optional<T>& v, const char* key) {
    if (!v) missing.emplace_back(key);
    return v.value_or(T{});
  }
  void check(const MapReader& r) const {
    if (missing.empty()) return;
    std::string list;
    for (const auto& k : missing) list += (list.empty() ? "'" : ", '") + r.key_path(k) + "'";
    r.fail_here(std::string(missing.size() == 1 ? "missing required key " : "missing required keys ") + list);
  }
};

NormKind parse_norm(const std::string& s) { return s == "rmsnorm" ? NormKind::rmsnorm : NormKind::layernorm; }

QkNorm parse_qk_norm(const std::string& s) {
  if (s == "per_head") return QkNorm::per_head;
  if (s == "full") return QkNorm::full;
  return QkNorm::none;
}

PositionKind parse_position(const std::string& s) {
  if (s == "learned") return PositionKind::learned;
  if (s == "alibi") return PositionKind::alibi;
  if (s == "none") return PositionKind::none;
  return PositionKind::rope;
}

MoeDesc parse_moe(MapReader r) {
  Required need;
  MoeDesc e;
  e.experts = need(r.opt_int("experts", 1, kMaxHeads), "experts");
  e.top_k = need(r.opt_int("top_k", 1, kMaxHeads), "top_k");
  e.expert_ffn_hidden = need(r.opt_int("expert_ffn_hidden", 1, kMaxWidth), "expert_ffn_hidden");
  e.shared_experts = r.opt_int("shared_experts", 0, kMaxHeads).value_or(0);
  e.shared_expert_ffn_hidden = r.opt_int("shared_expert_ffn_hidden", 1, kMaxWidth).value_or(0);
  e.dense_layers = r.opt_int("dense_layers", 0, kMaxLayers).value_or(0);
  e.expert_bias = r.opt_boolean("expert_bias").value_or(false);
  e.router_bias = r.opt_boolean("router_bias").value_or(false);
  e.router_fp32 = r.opt_choice("router_dtype", {"input", "fp32"}).value_or("input") == "fp32";
  r.finish();
  need.check(r);
  if (e.top_k > e.experts)
    r.fail("top_k", "top_k (" + std::to_string(e.top_k) + ") exceeds experts (" + std::to_string(e.experts) + ")");
  return e;
}

MlaDesc parse_mla(MapReader r) {
  Required need;
  MlaDesc a;
  a.q_lora_rank = need(r.opt_int("q_lora_rank", 0, kMaxWidth), "q_lora_rank");  // 0: no query compression
  a.kv_lora_rank = need(r.opt_int("kv_lora_rank", 1, kMaxWidth), "kv_lora_rank");
  a.qk_nope_head_dim = need(r.opt_int("qk_nope_head_dim", 1, kMaxHeads), "qk_nope_head_dim");
  a.qk_rope_head_dim = need(r.opt_int("qk_rope_head_dim", 1, kMaxHeads), "qk_rope_head_dim");
  a.v_head_dim = need(r.opt_int("v_head_dim", 1, kMaxHeads), "v_head_dim");
  r.finish();
  need.check(r);
  return a;
}

}  // namespace

ModelFile parse_model_file(std::string_view text, const std::string& filename) {
  const YAML::Node root = parse_yaml(text, filename);
  if (!root.IsDefined() || root.IsNull()) throw ConfigError(filename + ": empty model file");
  MapReader r(root, filename, "");
  Required need;
  const int version = need(r.opt_int("schema_version", 1, 1000), "schema_version");
  if (version > 1)
    r.fail("schema_version", "unsupported schema_version " + std::to_string(version) + " (this shardplan reads 1)");
  need(r.opt_choice("kind", {"model"}), "kind");

  ModelFile out;
  ModelDesc& m = out.model;
  m.name = need(r.opt_string("name"), "name");
  out.source = need(r.opt_string("source"), "source");
  m.layers = need(r.opt_int("layers", 1, kMaxLayers), "layers");
  m.hidden = need(r.opt_int("hidden", 1, kMaxWidth), "hidden");
  m.ffn_hidden = need(r.opt_int("ffn_hidden", 1, kMaxWidth), "ffn_hidden");
  m.heads = need(r.opt_int("heads", 1, kMaxHeads), "heads");
  const std::optional<int> kv_heads = r.opt_int("kv_heads", 1, kMaxHeads);
  const std::optional<int> head_dim = r.opt_int("head_dim", 1, kMaxHeads);
  m.vocab = need(r.opt_int("vocab", 1, kMaxVocab), "vocab");
  m.gated_mlp = need(r.opt_boolean("gated_mlp"), "gated_mlp");
  m.tied_embeddings = need(r.opt_boolean("tied_embeddings"), "tied_embeddings");
  m.linear_bias = need(r.opt_boolean("linear_bias"), "linear_bias");
  m.norm = parse_norm(need(r.opt_choice("norm", {"rmsnorm", "layernorm"}), "norm"));
  m.position = parse_position(need(r.opt_choice("position", {"rope", "learned", "alibi", "none"}), "position"));
  m.max_position = r.opt_int("max_position", 1, kMaxPosition).value_or(0);
  m.qkv_bias = r.opt_boolean("qkv_bias").value_or(false);
  m.qk_norm = parse_qk_norm(r.opt_choice("qk_norm", {"none", "per_head", "full"}).value_or("none"));
  m.sliding_window = r.opt_int("sliding_window", 1, kMaxPosition).value_or(0);
  m.full_attention_every = r.opt_int("full_attention_every", 1, kMaxLayers).value_or(0);
  m.attention_sinks = r.opt_boolean("attention_sinks").value_or(false);
  m.mtp_layers = r.opt_int("mtp_layers", 0, kMaxLayers).value_or(0);  // multi-token-prediction modules
  if (auto moe = r.opt_map("moe")) m.moe = parse_moe(*moe);
  if (auto mla = r.opt_map("mla")) m.mla = parse_mla(*mla);
  out.published_params = r.opt_positive("published_params");
  out.published_activated_params = r.opt_positive("published_activated_params");
  r.finish();
  need.check(r);
  if (out.source.empty()) r.fail("source", "every model names its source (model card, config.json or paper)");

  // Cross-field checks, all reported together with the line of the key at fault.
  std::vector<std::string> problems;
  const auto at = [&](const char* key) { return where(root[key], filename) + key + ": "; };
  m.kv_heads = kv_heads.value_or(m.heads);
  if (m.heads % m.kv_heads != 0)
    problems.push_back(at("kv_heads") + "heads (" + std::to_string(m.heads) + ") is not divisible by kv_heads (" +
                       std::to_string(m.kv_heads) + ")");
  if (head_dim) {
    m.head_dim = *head_dim;
  } else if (m.hidden % m.heads != 0) {
    problems.push_back(at("heads") + "hidden (" + std::to_string(m.hidden) + ") is not divisible by heads (" +
                       std::to_string(m.heads) + "); give head_dim explicitly");
  } else {
    m.head_dim = m.hidden / m.heads;
  }
  if (m.full_attention_every > 0 && m.sliding_window == 0)
    problems.push_back(at("full_attention_every") + "needs sliding_window (the other layers' window)");
  if (m.moe && m.moe->dense_layers >= m.layers)
    problems.push_back(where(root["moe"]["dense_layers"], filename) + "moe.dense_layers: dense_layers (" +
                       std::to_string(m.moe->dense_layers) + ") leaves no MoE layer of " + std::to_string(m.layers));
  if (out.published_activated_params && !m.moe)
    problems.push_back(at("published_activated_params") + "only MoE models have activated parameters");
  if (m.position == PositionKind::learned && m.max_position == 0)
    problems.push_back(at("position") + "learned positions need max_position (rows of the position table)");
  if (m.qk_norm != QkNorm::none && m.mla)
    problems.push_back(at("qk_norm") + "MLA's latent norms are part of mla; qk_norm applies to q/k/v heads only");
  if (!problems.empty()) {
    std::string msg;
    for (const auto& p : problems) msg += (msg.empty() ? "" : "\n") + p;
    throw ConfigError(msg);
  }
  return out;
}

ModelDesc parse_model_yaml(std::string_view text, const std::string& filename) {
  return parse_model_file(text, filename).model;
}

ModelDesc load_model(const std::string& name_or_path, bool allow_moe) {
  const std::string path = resolve_data_file(name_or_path, "models", {".yaml", ".json"}, "model");
  const std::string text = read_file(path);
  const bool json = path.size() >= 5 && path.compare(path.size() - 5, 5, ".json") == 0;
  if (json || path.find("config.json") != std::string::npos) return parse_hf_config(text, path, allow_moe);
  ModelDesc m = parse_model_yaml(text, path);
  if (m.moe && !allow_moe)
    throw ConfigError(path + ": MoE layers not supported yet (" + std::to_string(m.moe->experts) + " experts)");
  return m;
}

}  // namespace shardplan::io
