// ModelDesc: what is trained. Plain data for a decoder-only transformer, independent of hardware and plan.
#pragma once

#include <optional>
#include <string>

namespace shardplan {

enum class NormKind { layernorm, rmsnorm };
enum class PositionKind { rope, learned, alibi, none };
/// RMSNorm over the queries and keys before RoPE (QK-norm). per_head: one norm of head_dim over each head, weights
/// shared across heads (Qwen3, Qwen3-MoE: transformers modeling_qwen3.py q_norm/k_norm; Megatron-Core qk_layernorm).
/// full: one norm over all query heads and one over all key heads (OLMo-2: modeling_olmo2.py q_norm of
/// heads x head_dim). Model key `qk_norm: none | per_head | full`.
enum class QkNorm { none, per_head, full };

/// Mixture-of-experts MLP (Shazeer et al. 2017; Mixtral, DeepSeek-V3, Qwen3-MoE, gpt-oss). Every layer from
/// `dense_layers` on replaces its dense MLP by `experts` routed experts (top_k per token) plus `shared_experts`
/// always-active ones; each expert has the dense MLP's shape (gated or not) with its own intermediate width.
struct MoeDesc {
  int experts = 0;                   // routed experts per MoE layer
  int top_k = 0;                     // routed experts per token
  int expert_ffn_hidden = 0;         // intermediate width of one routed expert
  int shared_experts = 0;            // always-active experts per MoE layer (DeepSeek-V3: 1)
  int shared_expert_ffn_hidden = 0;  // intermediate width of one shared expert (0: expert_ffn_hidden)
  int dense_layers = 0;              // leading layers that keep the dense MLP (DeepSeek-V3 first_k_dense_replace: 3)
  bool expert_bias = false;          // biases on the expert projections (gpt-oss)
  bool router_bias = false;          // a bias per expert on the router logits (gpt-oss; DeepSeek's correction bias)
  /// The router's GEMMs take fp32 operands where they can (Megatron-Core moe_router_dtype "fp32", which
  /// Megatron-Bridge's DeepSeek providers set): the logits' forward stays a 16-bit GEMM with an fp32 output, its
  /// data and weight gradients run on fp32 tensors (mlp_cost.cc). Key `router_dtype: fp32` (default `input`).
  bool router_fp32 = false;
};

/// Multi-head latent attention (DeepSeek-V2/V3): queries and keys/values pass through low-rank latents; each head
/// has a RoPE part shared across heads for keys. KV cache holds kv_lora_rank + qk_rope_head_dim per token.
struct MlaDesc {
  int q_lora_rank = 0;       // 0: queries projected directly from hidden
  int kv_lora_rank = 0;
  int qk_nope_head_dim = 0;
  int qk_rope_head_dim = 0;
  int v_head_dim = 0;
};

/// Architecture of a decoder-only transformer. Head counts describe MHA (kv_heads == heads), GQA
/// (1 < kv_heads < heads) and MQA (kv_heads == 1).
struct ModelDesc {
  std::string name;
  int layers = 0;
  int hidden = 0;       // h
  int ffn_hidden = 0;   // f: MLP intermediate size (per gate/up projection for gated MLPs)
  int heads = 0;        // a: query heads
  int kv_heads = 0;     // key/value heads
  int head_dim = 0;     // d: per-head dimension (usually h / a)
  int vocab = 0;        // V: padded vocabulary as the framework allocates it
  bool gated_mlp = false;       // SwiGLU/GeGLU: three projections (gate, up, down) instead of two
  bool tied_embeddings = false; // LM head shares the input embedding matrix
  bool linear_bias = false;     // biases on the QKV/O/MLP projections (GPT-2/3 yes, Llama no)
  NormKind norm = NormKind::layernorm;
  PositionKind position = PositionKind::rope;
  int max_position = 0;         // rows of a learned position-embedding table (position == learned)
  bool qkv_bias = false;        // biases on q, k, v only (Qwen2); implied by linear_bias
  QkNorm qk_norm = QkNorm::none;  // norms over q and k before RoPE (Qwen3: per_head)
  // Sliding-window attention (Mistral, gpt-oss): sliding layers attend to at most `sliding_window` previous tokens.
  int sliding_window = 0;        // 0: every layer attends to the full sequence
  int full_attention_every = 0;  // k > 0: layers k, 2k, ... (1-based) use full attention (gpt-oss: 2); 0: all slide
  bool attention_sinks = false;  // one learned sink logit per head and layer (gpt-oss)
  /// Multi-token-prediction modules the architecture defines (DeepSeek-V3 config.json num_nextn_predict_layers: 1;
  /// model key `mtp_layers`). What a run trains of them is the plan's (Plan::mtp_layers); 0: none.
  int mtp_layers = 0;
  /// The checkpoint's fp8 weight block: n for n x n block-scaled fp8 weights (a Hugging Face config.json's
  /// quantization_config {quant_method: fp8, weight_block_size: [n, n]}: DeepSeek-V3, Qwen3-*-FP8: 128); 0 when the
  /// checkpoint states no block-scaled fp8 quantisation. What kernels a stated precision runs on it is
  /// serving::checkpoint_kernel_format's.
  int checkpoint_fp8_block = 0;
  std::optional<MoeDesc> moe;
  std::optional<MlaDesc> mla;
};

/// Whether layer `i` (0-based) has an MoE MLP / attends through a sliding window.
bool is_moe_layer(const ModelDesc& m, int i);
bool is_sliding_layer(const ModelDesc& m, int i);

/// Parameters of transformer layer `i`: attention, MLP (dense or all experts), norms and biases.
double layer_params(const ModelDesc& m, int i);
/// Mean parameters per transformer layer (every layer's count for dense models).
double params_per_layer(const ModelDesc& m);
/// Parameters of all routed experts (what expert parallelism shards); 0 for dense models.
double routed_expert_params(const ModelDesc& m);
/// Input embedding (+ learned positions) and, if untied, the LM head; plus the final norm.
double embedding_params(const ModelDesc& m);
double lm_head_params(const ModelDesc& m);   // 0 when tied
double total_params(const ModelDesc& m);
/// Parameters outside the embedding tables (the "N" of 6N scaling-law FLOP counts).
double non_embedding_params(const ModelDesc& m);
/// Parameters one token passes through: all but the routed experts it is not sent to (top_k of experts), with
/// embedding and LM head (Mixtral's and Qwen3's "activated" convention). Equals total_params for dense models.
double activated_params(const ModelDesc& m);

/// Model FLOPs per token of one training step (forward + backward, no recompute), counting the attention
/// score and value products over the full s x s square as Megatron-LM's num_floating_point_operations does
/// (Narayanan et al. 2021, Eq. 3, generalised to GQA, gated MLPs, top-k experts with router, MLA, and sliding
/// windows, where a sliding layer's square is s x min(s, window)).
double model_flops_per_token(const ModelDesc& m, int seq_len);

}  // namespace shardplan
