#include "modeler/model_desc.h"

#include <algorithm>

namespace shardplan {

namespace {
double norm_params(const ModelDesc& m) {
  // LayerNorm has a scale and a bias per channel, RMSNorm only a scale.
  return m.norm == NormKind::layernorm ? 2.0 * m.hidden : 1.0 * m.hidden;
}
double q_width(const ModelDesc& m) { return 1.0 * m.heads * m.head_dim; }
double kv_width(const ModelDesc& m) { return 1.0 * m.kv_heads * m.head_dim; }

// Weight-matrix elements of the attention projections: 2 FLOPs per element per token in the forward pass.
double attention_matrix_params(const ModelDesc& m) {
  const double h = m.hidden;
  if (!m.mla) return h * (q_width(m) + 2.0 * kv_width(m)) + q_width(m) * h;
  // DeepSeek-V2 (arXiv 2405.04434) section 2.1: W_DQ, W_UQ/W_QR (or W_Q), W_DKV + W_KR, W_UK/W_UV, W_O.
  const MlaDesc& a = *m.mla;
  const double qk_dim = 1.0 * m.heads * (a.qk_nope_head_dim + a.qk_rope_head_dim);
  const double q = a.q_lora_rank > 0 ? h * a.q_lora_rank + 1.0 * a.q_lora_rank * qk_dim : h * qk_dim;
  const double kv = h * (a.kv_lora_rank + a.qk_rope_head_dim) +
                    1.0 * a.kv_lora_rank * m.heads * (a.qk_nope_head_dim + a.v_head_dim);
  return q + kv + 1.0 * m.heads * a.v_head_dim * h;
}

double attention_params(const ModelDesc& m) {
  double p = attention_matrix_params(m);
  if (m.mla) p += (m.mla->q_lora_rank > 0 ? m.mla->q_lora_rank : 0) + m.mla->kv_lora_rank;  // latent RMSNorms
  if (m.linear_bias || m.qkv_bias) p += q_width(m) + 2.0 * kv_width(m);
  if (m.linear_bias) p += m.hidden;  // output projection bias
  if (m.attention_sinks) p += m.heads;
  // QK-norm scales: per head, one head_dim vector each for q and k shared by the heads; full, one per channel.
  if (m.qk_norm == QkNorm::per_head) p += 2.0 * m.head_dim;
  if (m.qk_norm == QkNorm::full) p += q_width(m) + kv_width(m);
  return p;
}

// One MLP (dense or expert) of intermediate width f: weights, plus biases when `bias`.
double mlp_params(const ModelDesc& m, double f, bool bias) {
  const double w = (m.gated_mlp ? 3.0 : 2.0) * m.hidden * f;
  return bias ? w + (m.gated_mlp ? 2.0 : 1.0) * f + m.hidden : w;
}
double shared_ffn(const MoeDesc& e) {
  return e.shared_expert_ffn_hidden > 0 ? e.shared_expert_ffn_hidden : e.expert_ffn_hidden;
}
double router_params(const ModelDesc& m) {
  return 1.0 * m.hidden * m.moe->experts + (m.moe->router_bias ? m.moe->experts : 0);
}

// MLP parameters of layer i when `experts_used` routed experts count (all of them, or top_k).
double layer_mlp_params(const ModelDesc& m, int i, int experts_used) {
  if (!is_moe_layer(m, i)) return mlp_params(m, m.ffn_hidden, m.linear_bias);
  const MoeDesc& e = *m.moe;
  return experts_used * mlp_params(m, e.expert_ffn_hidden, e.expert_bias) +
         e.shared_experts * mlp_params(m, shared_ffn(e), e.expert_bias) + router_params(m);
}

double sum_layers(const ModelDesc& m, bool activated) {
  // Layers differ only in their MLP (leading dense layers, then MoE layers), so the sum is closed-form: this runs
  // on every plan evaluation.
  const int used = m.moe ? (activated ? m.moe->top_k : m.moe->experts) : 0;
  const int moe_layers = m.moe ? std::max(0, m.layers - m.moe->dense_layers) : 0;
  const int dense_layers = m.layers - moe_layers;
  double p = m.layers * (attention_params(m) + 2.0 * norm_params(m));
  if (dense_layers > 0) p += dense_layers * layer_mlp_params(m, 0, used);
  if (moe_layers > 0) p += moe_layers * layer_mlp_params(m, m.layers - 1, used);
  return p;
}

// Forward FLOPs per token of layer i at sequence length s (2 per multiply-accumulate).
double layer_forward_flops(const ModelDesc& m, int i, double s) {
  const double keys = is_sliding_layer(m, i) ? std::min(s, 1.0 * m.sliding_window) : s;
  const double qk_dim = m.mla ? 1.0 * m.heads * (m.mla->qk_nope_head_dim + m.mla->qk_rope_head_dim) : q_width(m);
  const double v_dim = m.mla ? 1.0 * m.heads * m.mla->v_head_dim : q_width(m);
  const double scores = 2.0 * keys * (qk_dim + v_dim);  // QK^T and scores x V over the full square (Megatron)
  double mlp = 2.0 * (m.gated_mlp ? 3.0 : 2.0) * m.hidden * m.ffn_hidden;
  if (is_moe_layer(m, i)) {
    const MoeDesc& e = *m.moe;
    mlp = 2.0 * (m.gated_mlp ? 3.0 : 2.0) * m.hidden *
              (1.0 * e.top_k * e.expert_ffn_hidden + e.shared_experts * shared_ffn(e)) +
          2.0 * m.hidden * e.experts;  // router logits
  }
  return 2.0 * attention_matrix_params(m) + scores + mlp;
}
}  // namespace

bool is_moe_layer(const ModelDesc& m, int i) { return m.moe && i >= m.moe->dense_layers; }

bool is_sliding_layer(const ModelDesc& m, int i) {
  if (m.sliding_window <= 0) return false;
  return m.full_attention_every <= 0 || (i + 1) % m.full_attention_every != 0;
}

double layer_params(const ModelDesc& m, int i) {
  return attention_params(m) + 2.0 * norm_params(m) + layer_mlp_params(m, i, m.moe ? m.moe->experts : 0);
}

double params_per_layer(const ModelDesc& m) { return m.layers > 0 ? sum_layers(m, false) / m.layers : 0.0; }

double routed_expert_params(const ModelDesc& m) {
  if (!m.moe) return 0.0;
  const int moe_layers = std::max(0, m.layers - m.moe->dense_layers);
  return 1.0 * moe_layers * m.moe->experts * mlp_params(m, m.moe->expert_ffn_hidden, m.moe->expert_bias);
}

double embedding_params(const ModelDesc& m) {
  double p = 1.0 * m.vocab * m.hidden;
  if (m.position == PositionKind::learned) p += 1.0 * m.max_position * m.hidden;
  return p;
}

double lm_head_params(const ModelDesc& m) { return m.tied_embeddings ? 0.0 : 1.0 * m.vocab * m.hidden; }

double non_embedding_params(const ModelDesc& m) { return sum_layers(m, false) + norm_params(m); }

double total_params(const ModelDesc& m) { return non_embedding_params(m) + embedding_params(m) + lm_head_params(m); }

double activated_params(const ModelDesc& m) {
  return sum_layers(m, true) + norm_params(m) + embedding_params(m) + lm_head_params(m);
}

double model_flops_per_token(const ModelDesc& m, int seq_len) {
  // Backward is twice the forward; the LM head's logits are 2*h*V per token.
  double fwd = 2.0 * m.hidden * m.vocab;
  for (int i = 0; i < m.layers; ++i) fwd += layer_forward_flops(m, i, seq_len);
  return 3.0 * fwd;
}

}  // namespace shardplan
