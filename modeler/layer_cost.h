// Compute time of one micro-batch through one transformer layer and through the embedding/LM head, on one rank:
// the attention projections, attention (attention_cost.h), the MLP (mlp_cost.h), the memory-bound kernels, the
// recipe's quantization kernels and recompute.
#pragma once

#include <array>

#include "modeler/attention_cost.h"
#include "modeler/layer_parts.h"
#include "modeler/mlp_cost.h"
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

struct LayerCost {
  PassCost forward;
  PassCost backward;
  PassCost recompute;  // forward work re-run during backward (selective: attention core; full: whole layer)
};

/// Forward time of one layer's eager RoPE at the framework's bytes per query/key element (its backward: the same).
Seconds eager_rope_time(const Context& ctx, const Sharding& sh);
/// Forward time of one layer's K/V repeat to the query heads (Framework::gqa_repeats_kv; its backward: the same);
/// 0 without grouped-query attention.
Seconds kv_repeat_time(const Context& ctx, const Sharding& sh);
LayerCost layer_cost(const Context& ctx, const Sharding& sh);

/// The parts the decoder's ends and each MTP module share (mtp_cost.h): the embedding lookup of the micro-batch's
/// ids and its scatter-add gradient, and the LM head GEMM over the local vocabulary with the cross-entropy.
struct OutputParts {
  Seconds embed_fwd, embed_bwd;  // the backward is 0 for a frozen embedding (fine-tuning)
  Seconds head_fwd, head_bwd;    // GEMMs and half the cross-entropy's traffic each
  double head_flops = 0;         // forward FLOPs of the LM head GEMM
};
OutputParts output_parts(const Context& ctx, const Sharding& sh);
/// Embedding lookup on the first stage, LM head + cross-entropy on the last; the busier of the two stages, or the
/// ends and MTP modules the modelled rank holds where the pipeline strategy names them (Sharding::ends).
LayerCost head_cost(const Context& ctx, const Sharding& sh);

}  // namespace shardplan
