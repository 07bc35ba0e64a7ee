// Attention's kernel time on one rank: flash or materialized attention, full and sliding-window layers, and the
// ring steps, merges and K/V copies of context parallelism.
#pragma once

#include "modeler/strategies/strategy.h"

namespace shardplan {

/// The attention kernel of one layer, averaged over full and sliding-window layers (gpt-oss alternates them;
/// its per-head sink logit adds one column to the softmax, negligible work).
struct AttentionCost {
  Seconds fwd, bwd;
  double flops_fwd = 0, flops_bwd = 0;
};
AttentionCost attention_cost(const Context& ctx, const Sharding& sh);

/// The attention kernel the framework runs on this GPU (flash3 only where the GPU profile has its table).
AttentionKernel attention_kernel(const Context& ctx);
/// Forward FLOPs of causal attention for one rank and micro-batch: 4 b s_q s_kv a_l d / 2 (QK^T and PV over the
/// causal half; with load-balanced context parallelism each rank does 1/cp of it).
double attention_fwd_flops(const Context& ctx, const Sharding& sh);
/// Ring steps context-parallel attention runs per layer pass: cp where the ring loop runs (the ring, and PyTorch's
/// all-gather rotater), else 1.
double ring_steps(const Context& ctx);
/// One ring step's attention kernel, forward or backward (the load-balanced split gives every step 1/cp of the
/// rank's work): what a collective issued before the first step's kernel and waited at the second hides behind.
Seconds ring_step_kernel_time(const Context& ctx, const Sharding& sh, bool backward);

}  // namespace shardplan
