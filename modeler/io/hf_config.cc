// Hugging Face config.json files read into a ModelDesc (parse_hf_config, declared in model_io.h): the dense
// Llama-family architectures and, where allowed, the MoE ones, plus a pre-quantised checkpoint's block-scaled fp8.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <vector>

#include "modeler/io/json_text.h"
#include "modeler/io/model_io.h"
#include "modeler/problems.h"

namespace shardplan::io {

namespace {

using namespace model_limits;
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
  /// A nested key: the line of `key`'s first occurrence (of `parent`'s where `key` is absent), the message naming
  /// `parent.key`.
  [[noreturn]] void fail_in(const std::string& parent, const std::string& key, const std::string& msg) const {
    const bool present = text.find("\"" + key + "\"") != std::string_view::npos;
    throw ConfigError(json_at(text, file, present ? key : parent) + parent + "." + key + ": " + msg);
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

/// A pre-quantised checkpoint's quantization_config. Block-scaled fp8 (quant_method "fp8" with weight_block_size,
/// the DeepSeek-V3 and Qwen3-*-FP8 checkpoints) sets ModelDesc::checkpoint_fp8_block: the engines read that pair
/// and load block-scaled fp8 linears (vllm-project/vllm@0071b24b vllm/model_executor/layers/quantization/fp8.py
/// Fp8Config.from_config; sgl-project/sglang@00563d36 python/sglang/srt/layers/quantization/fp8.py
/// Fp8Config.from_config; NVIDIA/TensorRT-LLM@008e0af8 tensorrt_llm/_torch/model_config.py
/// ModelConfig.load_hf_quant_config: QuantAlgo.FP8_BLOCK_SCALES). fp8 without a block (per-tensor scales) and the
/// other methods (gpt-oss's mxfp4, ...) leave it 0: the stated serving precision decides their kernels.
void read_hf_quantization(const HfReader& r, ModelDesc& m) {
  const std::string key = "quantization_config";
  if (!r.has(key)) return;
  const json& q = r.j[key];
  if (!q.is_object()) r.fail(key, "expected an object, got " + q.dump());
  if (!q.contains("quant_method") || !q["quant_method"].is_string())
    r.fail_in(key, "quant_method", "expected a string (the quantisation method, e.g. \"fp8\"), got " +
                                       (q.contains("quant_method") ? q["quant_method"].dump() : "nothing"));
  if (q["quant_method"].get<std::string>() != "fp8") return;
  if (!q.contains("weight_block_size") || q["weight_block_size"].is_null()) return;  // per-tensor fp8
  const json& b = q["weight_block_size"];
  const auto positive = [](const json& v) {
    return v.is_number_integer() && v.get<long long>() >= 1 && v.get<long long>() <= kMaxWidth;
  };
  if (!b.is_array() || b.size() != 2 || !positive(b[0]) || !positive(b[1]))
    r.fail_in(key, "weight_block_size",
              "expected [rows, columns], two integers in [1, " + std::to_string(kMaxWidth) + "], got " + b.dump());
  if (b[0] != b[1])
    r.fail_in(key, "weight_block_size", "only square blocks are modelled (the engines' block-fp8 kernels take "
                                        "128 x 128), got " + b.dump());
  m.checkpoint_fp8_block = b[0].get<int>();
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
  read_hf_quantization(r, m);
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

}  // namespace shardplan::io
