#include "modeler/io/run_model_schema.h"

#include <string>

namespace shardplan::io {

void read_run_model_shape(MapReader& r, ModelDesc* m) {
  m->name = r.opt_string("name").value_or("");
  m->layers = r.positive_int("layers");
  m->hidden = r.positive_int("hidden");
  m->heads = r.positive_int("heads");
  m->kv_heads = r.opt_positive_int("kv_heads").value_or(m->heads);
  const std::optional<int> head_dim = r.opt_positive_int("head_dim");
  if (!head_dim && m->hidden < m->heads)
    r.fail("heads", "hidden / heads (" + std::to_string(m->hidden) + " / " + std::to_string(m->heads) +
                        ") leaves no head dimension; give head_dim");
  m->head_dim = head_dim.value_or(m->hidden / m->heads);
  m->vocab = r.positive_int("vocab");
  m->gated_mlp = r.boolean("gated_mlp");
  m->tied_embeddings = r.boolean("tied_embeddings");
  // QK-norm before RoPE (model_desc.h QkNorm): Qwen3 rows say per_head.
  const std::string qk = r.opt_choice("qk_norm", {"none", "per_head", "full"}).value_or("none");
  m->qk_norm = qk == "per_head" ? QkNorm::per_head : qk == "full" ? QkNorm::full : QkNorm::none;
}

MoeDesc read_run_model_moe(MapReader& r, const ModelDesc& m) {
  MoeDesc e;
  e.experts = r.positive_int("experts");
  e.top_k = r.positive_int("top_k");
  e.expert_ffn_hidden = r.positive_int("expert_ffn_hidden");
  e.shared_experts = r.opt_int("shared_experts", 0, 64).value_or(0);
  e.dense_layers = r.opt_int("dense_layers", 0, 1 << 20).value_or(0);
  e.expert_bias = r.opt_boolean("expert_bias").value_or(false);  // gpt-oss: biases on the expert projections
  // Megatron-Core moe_router_dtype (model_desc.h MoeDesc::router_fp32).
  e.router_fp32 = r.opt_choice("router_dtype", {"input", "fp32"}).value_or("input") == "fp32";
  if (e.top_k > e.experts)
    r.fail("top_k", "top_k (" + std::to_string(e.top_k) + ") exceeds experts (" + std::to_string(e.experts) + ")");
  if (e.dense_layers > m.layers)
    r.fail("dense_layers",
           "dense_layers (" + std::to_string(e.dense_layers) + ") exceeds layers (" + std::to_string(m.layers) + ")");
  r.finish();
  return e;
}

MlaDesc read_run_model_mla(MapReader& r) {
  MlaDesc a;
  a.q_lora_rank = r.opt_int("q_lora_rank", 0, 1 << 20).value_or(0);
  a.kv_lora_rank = r.positive_int("kv_lora_rank");
  a.qk_nope_head_dim = r.positive_int("qk_nope_head_dim");
  a.qk_rope_head_dim = r.positive_int("qk_rope_head_dim");
  a.v_head_dim = r.positive_int("v_head_dim");
  r.finish();
  return a;
}

void check_run_model_heads(const MapReader& r, const ModelDesc& m) {
  if (m.heads % m.kv_heads != 0)
    r.fail("kv_heads",
           "heads (" + std::to_string(m.heads) + ") not divisible by kv_heads (" + std::to_string(m.kv_heads) + ")");
  if (m.mla && m.qk_norm != QkNorm::none)
    r.fail("qk_norm", "MLA's latent norms are part of mla; qk_norm applies to q/k/v heads only");
}

}  // namespace shardplan::io
