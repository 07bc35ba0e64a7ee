// Compute time of one micro-batch through one transformer layer and through the embedding/LM head, on one rank.
#pragma once

#include <array>

#include "modeler/strategies/strategy.h"

namespace shardplan {

struct PassCost {
  Seconds time;
  Seconds attention;  // the attention kernel's share (the window context-parallel K/V passing hides behind)
  Seconds moe;        // the MoE layers' MLP share: router, permutations, routed and shared experts
  double flops = 0;   // FLOPs executed
  /// Each linear's GEMM time in this pass (workload.h linear_slot: forward fprop; backward dgrad and wgrad), what
  /// a Window::gemm collective can hide behind.
  std::array<Seconds, kLinearSlots> linear{};
};

/// Row blocks the TP comm-GEMM overlap splits a linear's GEMMs into (1 without the overlap): the all-gather ring
/// feeds the column-parallel fprop and the row-parallel dgrad tp chunks; the row-parallel fprop is pipelined
/// into the framework's reduce-scatter chunks (Framework::tp_overlap_rs_splits).
struct OverlapChunks {
  double ag = 1, rs = 1;
};
OverlapChunks tp_overlap_chunks(const Context& ctx);

struct LayerCost {
  PassCost forward;
  PassCost backward;
  PassCost recompute;  // forward work re-run during backward (selective: attention core; full: whole layer)
};

/// Seconds of one memory-bound kernel moving `bytes` through HBM.
Seconds memory_time(const Gpu& gpu, Bytes bytes);
/// Forward time of one layer's eager RoPE at the framework's bytes per query/key element (its backward: the same).
Seconds eager_rope_time(const Context& ctx, const Sharding& sh);
/// Forward time of one layer's K/V repeat to the query heads (Framework::gqa_repeats_kv; its backward: the same);
/// 0 without grouped-query attention.
Seconds kv_repeat_time(const Context& ctx, const Sharding& sh);
/// The attention kernel the framework runs on this GPU (flash3 only where the GPU profile has its table).
AttentionKernel attention_kernel(const Context& ctx);
/// Forward FLOPs of causal attention for one rank and micro-batch: 4 b s_q s_kv a_l d / 2 (QK^T and PV over the
/// causal half; with load-balanced context parallelism each rank does 1/cp of it).
double attention_fwd_flops(const Context& ctx, const Sharding& sh);

/// One MoE layer's forward on one rank by part (the routed experts; the shared experts are a dense MLP), the
/// pieces layer_cost sums, so that they can be checked one by one against a measured MoE-layer op.
struct MoeForwardParts {
  Seconds router_gemm;       // the router's logits GEMM
  Seconds routing;           // softmax / top-k over the logits (fused router: and the aux loss's scores and loss)
  Seconds permutation;       // permute and un-permute passes, and the local-expert sort when a rank holds several
  Seconds routing_bwd;       // the backward of `routing` (not a forward part: what layer_cost charges for it)
  Seconds permutation_bwd;   // the backward of `permutation`, likewise
  Seconds fc1, fc2;          // the grouped gate+up and down GEMMs
  Seconds activation;        // the activation function over the pairs
  Seconds kernels_fwd;       // the layer's small kernels layer_cost times nowhere else (moe_host.h), forward
  Seconds kernels_bwd;       // the same, backward
  Seconds host;              // the token-count wait (moe_host.h)
};
/// Zero parts for a model without MoE layers.
MoeForwardParts moe_forward_parts(const Context& ctx, const Sharding& sh);

LayerCost layer_cost(const Context& ctx, const Sharding& sh);
/// Embedding lookup on the first stage, LM head + cross-entropy on the last; the busier of the two stages.
LayerCost head_cost(const Context& ctx, const Sharding& sh);

}  // namespace shardplan
