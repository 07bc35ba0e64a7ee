#include "modeler/serving/tensors.h"

#include <algorithm>

namespace shardplan::serving {

namespace {

bool is_gguf(WeightFormat f) {
  switch (f) {
    case WeightFormat::q8_0: case WeightFormat::q6_k: case WeightFormat::q5_k: case WeightFormat::q4_k:
    case WeightFormat::q3_k: case WeightFormat::q2_k: case WeightFormat::q4_0: case WeightFormat::q5_k_m:
    case WeightFormat::q4_k_m: case WeightFormat::q3_k_m: return true;
    default: return false;
  }
}

struct Builder {
  const ModelDesc& m;
  const Precision& p;
  std::vector<WeightTensor> out;

  void add(std::string name, int layer, TensorRole role, double n, double k, TpSplit split, int experts = 0,
           bool shared = false, bool kv = false) {
    WeightTensor t;
    t.name = std::move(name);
    t.layer = layer;
    t.role = role;
    t.n = n;
    t.k = k;
    t.experts = experts;
    t.shared_expert = shared;
    t.split = split;
    t.kv = kv;
    t.params = n * k * std::max(1, experts);
    const WeightFormat file = experts > 0 ? p.moe_weights : p.weights;
    t.format = gguf_tensor_format(file, role, std::max(0, layer), m.layers);
    // Quantised checkpoints keep the embedding table and the LM head in 16 bits (HF fp8/nvfp4/mxfp4 exports and
    // AWQ/GPTQ leave lm_head and embed_tokens unquantised); GGUF quantises them per its mix.
    if (!is_gguf(file) && (role == TensorRole::token_embd || role == TensorRole::output ||
                           role == TensorRole::router))
      t.format = file == WeightFormat::fp16 ? WeightFormat::fp16 : WeightFormat::bf16;
    t.bytes = Bytes(t.params * bits_per_weight(t.format) / 8.0);
    out.push_back(std::move(t));
  }
};

}  // namespace

std::vector<WeightTensor> model_tensors(const ModelDesc& m, const Precision& p) {
  Builder b{m, p, {}};
  const double h = m.hidden, hd = m.head_dim;
  b.add("token_embd", -1, TensorRole::token_embd, h, m.vocab, TpSplit::column);
  for (int i = 0; i < m.layers; ++i) {
    const std::string blk = "blk." + std::to_string(i) + ".";
    if (m.mla) {
      const MlaDesc& a = *m.mla;
      const double qk = 1.0 * m.heads * (a.qk_nope_head_dim + a.qk_rope_head_dim);
      if (a.q_lora_rank > 0) {
        b.add(blk + "attn_q_a", i, TensorRole::attn_q, a.q_lora_rank, h, TpSplit::none);
        b.add(blk + "attn_q_b", i, TensorRole::attn_q, qk, a.q_lora_rank, TpSplit::column);
      } else {
        b.add(blk + "attn_q", i, TensorRole::attn_q, qk, h, TpSplit::column);
      }
      b.add(blk + "attn_kv_a_mqa", i, TensorRole::attn_k, a.kv_lora_rank + a.qk_rope_head_dim, h, TpSplit::none);
      b.add(blk + "attn_kv_b", i, TensorRole::attn_v, 1.0 * m.heads * (a.qk_nope_head_dim + a.v_head_dim),
            a.kv_lora_rank, TpSplit::column);
      b.add(blk + "attn_output", i, TensorRole::attn_output, h, 1.0 * m.heads * a.v_head_dim, TpSplit::row);
    } else {
      b.add(blk + "attn_q", i, TensorRole::attn_q, 1.0 * m.heads * hd, h, TpSplit::column);
      b.add(blk + "attn_k", i, TensorRole::attn_k, 1.0 * m.kv_heads * hd, h, TpSplit::column, 0, false, true);
      b.add(blk + "attn_v", i, TensorRole::attn_v, 1.0 * m.kv_heads * hd, h, TpSplit::column, 0, false, true);
      b.add(blk + "attn_output", i, TensorRole::attn_output, h, 1.0 * m.heads * hd, TpSplit::row);
    }
    const double up = m.gated_mlp ? 2.0 : 1.0;  // gate and up run as one fused GEMM in every engine
    if (is_moe_layer(m, i)) {
      const MoeDesc& e = *m.moe;
      b.add(blk + "ffn_gate_inp", i, TensorRole::router, e.experts, h, TpSplit::none);
      b.add(blk + "ffn_up_exps", i, TensorRole::ffn_up, up * e.expert_ffn_hidden, h, TpSplit::column, e.experts);
      b.add(blk + "ffn_down_exps", i, TensorRole::ffn_down, h, e.expert_ffn_hidden, TpSplit::row, e.experts);
      if (e.shared_experts > 0) {
        const double f = 1.0 * e.shared_experts *
                         (e.shared_expert_ffn_hidden > 0 ? e.shared_expert_ffn_hidden : e.expert_ffn_hidden);
        b.add(blk + "ffn_up_shexp", i, TensorRole::ffn_up, up * f, h, TpSplit::column, 0, true);
        b.add(blk + "ffn_down_shexp", i, TensorRole::ffn_down, h, f, TpSplit::row, 0, true);
      }
    } else {
      b.add(blk + "ffn_up", i, TensorRole::ffn_up, up * m.ffn_hidden, h, TpSplit::column);
      b.add(blk + "ffn_down", i, TensorRole::ffn_down, h, m.ffn_hidden, TpSplit::row);
    }
    // Two norms per block (plus MLA's latent norms); kept whole on every rank.
    b.add(blk + "norms", i, TensorRole::other, 2.0 * h, 1.0, TpSplit::none);
  }
  if (!m.tied_embeddings) b.add("output", m.layers, TensorRole::output, m.vocab, h, TpSplit::column);
  return b.out;
}

Bytes total_bytes(const std::vector<WeightTensor>& tensors) {
  Bytes s;
  for (const auto& t : tensors) s += t.bytes;
  return s;
}

}  // namespace shardplan::serving
