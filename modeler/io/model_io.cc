#include "modeler/io/model_io.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <vector>

#include "modeler/io/json_text.h"
#include "modeler/io/paths.h"
#include "modeler/io/yaml_reader.h"
#include "modeler/problems.h"

namespace shardplan::io {

namespace {

// Upper bounds that catch unit or digit slips (hidden 40960000) long before any real model reaches them.
constexpr int kMaxLayers = 10000;
constexpr int kMaxWidth = 1 << 20;      // hidden, ffn_hidden
constexpr int kMaxHeads = 1 << 16;      // heads, kv_heads, head_dim
constexpr int kMaxVocab = 1 << 24;
constexpr int kMaxPosition = 1 << 30;

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

namespace {

using nlohmann::json;

/// config.json has no per-value positions after parsing; the first occurrence of "key" is where it is set.
std::string json_at(std::string_view text, const std::string& file, const std::string& key) {
  const size_t pos = text.find("\"" + key + "\"");
  if (pos == std::string_view::npos) return file + ": ";
  return file + ":" + std::to_string(1 + std::count(text.begin(), text.begin() + static_cast<long>(pos), '\n')) +
         ": ";
}

struct HfReader {
  const json& j;
  std::string_view text;
  const std::string& file;

  bool has(const std::string& key) const { return j.contains(key) && !j[key].is_null(); }
  [[noreturn]] void fail(const std::string& key, const std::string& msg) const {
    throw ConfigError(json_at(text, file, key) + key + ": " + msg);
  }
  std::optional<int> opt_int(const std::string& key, int max) const {
    if (!has(key)) return std::nullopt;
    const json& v = j[key];
    if (!v.is_number_integer() || v.get<long long>() < 1 || v.get<long long>() > max)
      fail(key, "expected an integer in [1, " + std::to_string(max) + "], got " + v.dump());
    return v.get<int>();
  }
  int req_int(const std::string& key, int max) const {
    const auto v = opt_int(key, max);
    if (!v) throw ConfigError(file + ": missing required key '" + key + "'");
    return *v;
  }
  bool opt_bool(const std::string& key, bool fallback) const {
    if (!has(key)) return fallback;
    if (!j[key].is_boolean()) fail(key, "expected true or false, got " + j[key].dump());
    return j[key].get<bool>();
  }
  std::string opt_string(const std::string& key) const {
    if (!has(key)) return "";
    if (!j[key].is_string()) fail(key, "expected a string, got " + j[key].dump());
    return j[key].get<std::string>();
  }
};

json parse_json(std::string_view text, const std::string& file) {
  try {
    return json::parse(text);
  } catch (const json::parse_error& e) {
    // e.byte is the 1-based offset of the last character read; report it as line:column.
    const size_t end = std::min(e.byte == 0 ? 0 : e.byte - 1, text.size());
    const size_t nl = text.rfind('\n', end == 0 ? 0 : end - 1);
    const long line = 1 + std::count(text.begin(), text.begin() + static_cast<long>(end), '\n');
    const size_t col = nl == std::string_view::npos || end == 0 ? end + 1 : end - nl;
    std::string what = e.what();
    const size_t p = what.find(": ", what.find("column"));  // drop nlohmann's "[json.exception...] ... column N"
    if (p != std::string::npos) what = what.substr(p + 2);
    throw ConfigError(file + ":" + std::to_string(line) + ":" + std::to_string(col) + ": invalid JSON: " + what);
  } catch (const json::out_of_range& e) {
    throw_json_number_out_of_range(e, text, file);
  }
}

/// MoE configs (experts per layer) are refused until the MoE time model lands.
void reject_moe(const HfReader& r, const std::string& model_type) {
  static const std::vector<std::string> moe_types = {"deepseek_v2", "deepseek_v3", "qwen2_moe", "qwen3_moe",
                                                     "mixtral", "gpt_oss"};
  static const std::vector<std::string> expert_keys = {"num_experts", "num_local_experts", "n_routed_experts"};
  bool moe = std::find(moe_types.begin(), moe_types.end(), model_type) != moe_types.end() ||
             r.has("num_experts_per_tok");
  std::string experts;
  for (const auto& k : expert_keys)
    if (r.has(k) && r.j[k].is_number_integer()) {
      moe = true;
      experts = ", " + std::to_string(r.j[k].get<long long>()) + " experts";
      break;
    }
  if (moe)
    throw ConfigError(r.file + ": MoE layers not supported yet (model_type '" + model_type + "'" + experts + ")");
}

std::string hf_name(const HfReader& r) {
  const std::string n = r.opt_string("_name_or_path");
  if (!n.empty()) return n;
  const std::filesystem::path p(r.file);
  if (p.filename() == "config.json" && p.has_parent_path()) return p.parent_path().filename().string();
  return p.stem().string();
}

}  // namespace

namespace {

bool one_of(const std::string& s, const std::vector<std::string>& list) {
  return std::find(list.begin(), list.end(), s) != list.end();
}

/// Experts, shared experts and MLA of the four MoE families, from their transformers config classes.
void read_hf_moe(const HfReader& r, const std::string& type, ModelDesc& m) {
  MoeDesc e;
  const bool local = type == "mixtral" || type == "gpt_oss";  // intermediate_size is the expert width
  e.experts = r.req_int(type == "deepseek_v3" ? "n_routed_experts" : local ? "num_local_experts" : "num_experts",
                        kMaxHeads);
  e.top_k = r.has("num_experts_per_tok") ? r.req_int("num_experts_per_tok", e.experts)
                                         : r.req_int("experts_per_token", e.experts);
  e.expert_ffn_hidden = local ? m.ffn_hidden : r.req_int("moe_intermediate_size", kMaxWidth);
  if (type == "deepseek_v3") {
    e.shared_experts = r.has("n_shared_experts") ? r.req_int("n_shared_experts", kMaxHeads) : 0;
    e.dense_layers = r.has("first_k_dense_replace") ? r.req_int("first_k_dense_replace", m.layers) : 0;
    e.router_bias = true;  // e_score_correction_bias of the aux-loss-free balancing (noaux_tc)
    if (r.opt_int("moe_layer_freq", kMaxLayers).value_or(1) != 1) r.fail("moe_layer_freq", "only 1 is supported");
    MlaDesc a;
    a.q_lora_rank = r.opt_int("q_lora_rank", kMaxWidth).value_or(0);  // null: queries not compressed
    a.kv_lora_rank = r.req_int("kv_lora_rank", kMaxWidth);
    a.qk_nope_head_dim = r.req_int("qk_nope_head_dim", kMaxHeads);
    a.qk_rope_head_dim = r.req_int("qk_rope_head_dim", kMaxHeads);
    a.v_head_dim = r.req_int("v_head_dim", kMaxHeads);
    m.head_dim = a.qk_nope_head_dim + a.qk_rope_head_dim;
    m.mla = a;
  }
  if (type == "qwen3_moe") {
    if (r.opt_int("decoder_sparse_step", kMaxLayers).value_or(1) != 1)
      r.fail("decoder_sparse_step", "only 1 (every layer MoE) is supported");
    if (r.has("mlp_only_layers") && !r.j["mlp_only_layers"].empty())
      r.fail("mlp_only_layers", "dense layers among MoE layers are not supported");
  }
  if (type == "gpt_oss") {
    e.expert_bias = e.router_bias = true;  // modeling_gpt_oss.py: gate_up/down biases, router bias
    m.attention_sinks = true;
  }
  m.moe = e;
}

/// gpt-oss's layer_types alternates sliding and full attention; find the period of its full layers.
void read_hf_sliding(const HfReader& r, ModelDesc& m) {
  const bool used = r.opt_bool("use_sliding_window", true);
  if (!used || !r.has("sliding_window")) return;
  m.sliding_window = r.req_int("sliding_window", kMaxPosition);
  if (!r.has("layer_types")) return;
  const json& types = r.j["layer_types"];
  if (!types.is_array() || static_cast<int>(types.size()) != m.layers)
    r.fail("layer_types", "expected a list of " + std::to_string(m.layers) + " layer types");
  int every = 0;
  for (int i = 0; i < m.layers && every == 0; ++i)
    if (types[static_cast<size_t>(i)] == "full_attention") every = i + 1;
  m.full_attention_every = every;
  if (every == 0) return;  // no full layer: every layer slides
  for (int i = 0; i < m.layers; ++i)
    if ((types[static_cast<size_t>(i)] == "full_attention") != ((i + 1) % every == 0))
      r.fail("layer_types", "only a periodic pattern (every k-th layer full attention) is supported");
}

}  // namespace

ModelDesc parse_hf_config(std::string_view json_text, const std::string& filename, bool allow_moe) {
  const json j = parse_json(json_text, filename);
  if (!j.is_object()) throw ConfigError(filename + ": expected a JSON object (a Hugging Face config.json)");
  const HfReader r{j, json_text, filename};
  const std::string type = r.opt_string("model_type");
  if (type.empty()) throw ConfigError(filename + ": missing required key 'model_type'");
  if (!allow_moe) reject_moe(r, type);
  static const std::vector<std::string> dense = {"llama", "mistral", "qwen2", "qwen3"};
  static const std::vector<std::string> moe = {"deepseek_v3", "qwen3_moe", "mixtral", "gpt_oss"};
  if (!one_of(type, dense) && !(allow_moe && one_of(type, moe)))
    r.fail("model_type", "unsupported model_type '" + type + "' (supported: llama, mistral, qwen2, qwen3" +
                             (allow_moe ? ", deepseek_v3, qwen3_moe, mixtral, gpt_oss)" : ")"));
  if (const std::string act = r.opt_string("hidden_act"); !act.empty() && act != "silu")
    r.fail("hidden_act", "expected \"silu\" (SwiGLU) for model_type '" + type + "', got \"" + act + "\"");

  ModelDesc m;
  m.name = hf_name(r);
  m.layers = r.req_int("num_hidden_layers", kMaxLayers);
  m.hidden = r.req_int("hidden_size", kMaxWidth);
  m.ffn_hidden = r.req_int("intermediate_size", kMaxWidth);
  m.heads = r.req_int("num_attention_heads", kMaxHeads);
  m.kv_heads = r.opt_int("num_key_value_heads", kMaxHeads).value_or(m.heads);
  m.vocab = r.req_int("vocab_size", kMaxVocab);
  if (m.heads % m.kv_heads != 0)
    r.fail("num_key_value_heads", "num_attention_heads (" + std::to_string(m.heads) +
                                      ") is not divisible by num_key_value_heads (" + std::to_string(m.kv_heads) + ")");
  if (const auto d = r.opt_int("head_dim", kMaxHeads)) {
    m.head_dim = *d;  // Qwen3 and newer Mistral state it; Qwen3-0.6B's 128 differs from hidden/heads = 64
  } else if (m.hidden % m.heads != 0 && type != "deepseek_v3") {
    r.fail("num_attention_heads", "hidden_size (" + std::to_string(m.hidden) +
                                      ") is not divisible by num_attention_heads (" + std::to_string(m.heads) + ")");
  } else {
    m.head_dim = m.hidden / m.heads;
  }
  // All families: SwiGLU MLP, RMSNorm, RoPE, untied unless stated (the transformers config classes default
  // tie_word_embeddings to false for them). Qwen2 hard-codes biases on q/k/v only (modeling_qwen2.py).
  m.gated_mlp = true;
  m.norm = NormKind::rmsnorm;
  m.position = PositionKind::rope;
  m.tied_embeddings = r.opt_bool("tie_word_embeddings", false);
  // linear_bias also biases dense MLPs: exact for gpt-oss (experts only) and Llama with mlp_bias; a Llama with
  // attention_bias alone gets (2 or 3) x ffn_hidden + hidden extra per layer.
  m.linear_bias = r.opt_bool("attention_bias", false) || r.opt_bool("mlp_bias", false);
  m.qkv_bias = type == "qwen2";
  // The architecture implies QK-norm, config.json has no key for it: Qwen3ForCausalLM and Qwen3MoeForCausalLM
  // (model_type qwen3, qwen3_moe) build q_norm and k_norm as RMSNorm(head_dim) applied per head before RoPE
  // (huggingface/transformers@000c33fd src/transformers/models/qwen3/modeling_qwen3.py Qwen3Attention;
  // @00d4b3d2 models/qwen3_moe/modeling_qwen3_moe.py Qwen3MoeAttention). Llama, Mistral, Qwen2, Mixtral,
  // DeepSeek-V3 (MLA's latent norms are its own) and gpt-oss have none.
  m.qk_norm = type == "qwen3" || type == "qwen3_moe" ? QkNorm::per_head : QkNorm::none;
  m.max_position = r.opt_int("max_position_embeddings", kMaxPosition).value_or(0);
  if (type == "mistral" || type == "mixtral" || type == "gpt_oss") read_hf_sliding(r, m);
  if (one_of(type, moe)) read_hf_moe(r, type, m);
  // DeepSeek-V3's multi-token-prediction modules (configuration_deepseek_v3.py num_nextn_predict_layers; 0 allowed).
  if (r.has("num_nextn_predict_layers")) {
    const json& v = j["num_nextn_predict_layers"];
    if (!v.is_number_integer() || v.get<long long>() < 0 || v.get<long long>() > kMaxLayers)
      r.fail("num_nextn_predict_layers", "expected an integer in [0, " + std::to_string(kMaxLayers) + "], got " +
                                             v.dump());
    m.mtp_layers = v.get<int>();
  }
  return m;
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
