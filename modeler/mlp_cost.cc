#include "modeler/mlp_cost.h"

#include <algorithm>
#include <cmath>

#include "modeler/finetune.h"
#include "modeler/gemm_model.h"
#include "modeler/moe_host.h"
#include "modeler/precision_recipe.h"

namespace shardplan {

namespace {

/// The dtype of the MoE router's GEMMs, which stay in 16 bits under 8- and 4-bit recipes. Megatron-Core's router
/// owns a plain parameter, not a Transformer Engine module, and runs its logits GEMM on the bf16 input and weight
/// with an fp32 (moe_router_dtype) output (core_v0.14.0 moe/router.py TopKRouter.gating, moe_utils.py
/// RouterGatingLinearFunction: te_general_gemm of the bf16 tensors); torchtitan's MoE recipes leave "router.gate"
/// out of their float8 and MX converters (filter_fqns). The logits are written as fp32 either way (small: T x E).
Dtype router_gemm_dtype(const Context& ctx) {
  return quantized_gemms(ctx.plan) ? ctx.system.gpu.sixteen_bit() : gemm_dtype(ctx.plan);
}

/// Time of a grouped GEMM of `groups` problems of m x n x k, the local experts' linears.
/// Per-expert GEMMs (Framework::moe_gemm_per_expert): Transformer Engine v2.7 GroupedLinear runs one cuBLAS GEMM
/// per expert (common/gemm/cublaslt_gemm.cu nvte_multi_stream_cublas_gemm), so each costs what one GEMM of that
/// shape measures: gemm_time, whose table was inverted with the kernel overhead counted once per GEMM
/// (calibrate/fit_tables.cc), times the experts. TE spreads them over 4 streams (common/util/multi_stream.cpp);
/// how far a GPU runs them concurrently the source does not say, so they are summed (an upper bound).
/// One grouped kernel (CUTLASS grouped GEMM, torch._grouped_mm): one launch, so the kernel overhead counts once;
/// its tiles of all groups fill the SMs together, so wave quantisation is that of the combined tile count; but
/// each tile computes one expert's small problem, so the FLOP efficiency is the GEMM table's at the per-expert
/// size, not at the summed size (one GEMM of the summed size would credit the small problems with a large GEMM's
/// efficiency).
Seconds grouped_gemm_time(const Context& ctx, double groups, double m, double n, double k, GemmOutput out = {}) {
  const Gpu& g = ctx.system.gpu;
  const Dtype d = gemm_dtype(ctx.plan);
  if (groups <= 0 || m <= 0) return Seconds(0);
  if (ctx.framework.moe_gemm_per_expert) return gemm_time(g, d, m, n, k, fp8_scaling(ctx), out) * groups;
  const GemmTile tile = gemm_tile(g);
  const double rows = groups * std::ceil(m / tile.m) * tile.m;  // tile rows of all groups stacked
  const Flops flops(2.0 * m * n * k * groups);
  // With a measured grid, the per-expert shape's value (its own wave quantisation included: conservative for
  // the combined tiles, never crediting the small problems with a large GEMM's rate).
  const Grid3* grid = gemm_grid(g, d, fp8_scaling(ctx));
  const double eff = grid ? grid->at(m, n, k) : gemm_efficiency(g, d, 2.0 * m * n * k, k) * wave_efficiency(g, rows, n);
  const Seconds compute = flops / (g.sustained_peak(d) * eff);
  const Bytes bytes = gemm_bytes(d, m, n, k, out) * groups;
  const Seconds memory = g.hbm_bw.v > 0 ? bytes / (g.hbm_bw * memory_efficiency(g, bytes.v)) : Seconds(0);
  return g.eff.kernel_overhead + std::max(compute, memory);
}
Linear grouped_linear(const Context& ctx, double groups, double m, double n, double k) {
  Linear l;
  l.fwd = grouped_gemm_time(ctx, groups, m, n, k);
  l.dgrad = grouped_gemm_time(ctx, groups, m, k, n);
  l.wgrad = base_frozen(ctx.plan) ? Seconds{0} : grouped_gemm_time(ctx, groups, k, n, m, wgrad_output(ctx));
  l.bwd = l.dgrad + l.wgrad;
  l.flops_fwd = 2.0 * m * n * k * groups;
  return l;
}

}  // namespace

double activation_elems(const ModelDesc& m, const Framework& fw) {
  // SwiGLU reads gate and up, writes f (fused); eager: silu (read, write) then multiply (2 reads, write).
  return m.gated_mlp ? (fw.fused_elementwise ? 3.0 : 5.0) : 2.0;
}

MlpCost dense_mlp(const Context& ctx, const Sharding& sh, double ffn) {
  const double tokens = sh.tokens;
  const ModelDesc& m = ctx.model;
  MlpCost c;
  if (ffn <= 0) return c;
  const OverlapChunks ch = tp_overlap_chunks(ctx);
  c.up.add(sharded_linear(ctx, tokens, (m.gated_mlp ? 2.0 : 1.0) * ffn, m.hidden, sh.gemm_splits, true, ch.ag, 1));
  c.down.add(sharded_linear(ctx, tokens, m.hidden, ffn, sh.gemm_splits, false, ch.rs, ch.ag));
  c.gemms.add(c.up);
  c.gemms.add(c.down);
  c.mem_fwd = memory_time(ctx.system.gpu, Bytes(activation_elems(m, ctx.framework) * tokens * ffn * kActBytes));
  c.mem_bwd = c.mem_fwd * 2.0;  // elementwise backward: about twice the forward's traffic (layer_cost)
  // The up projection's input is cast before sequence parallelism's all-gather (norm tokens), the down
  // projection's after it.
  c.linear_input_elems = sh.norm_tokens * m.hidden + tokens * ffn;
  c.linear_output_elems = tokens * ((m.gated_mlp ? 2.0 : 1.0) * ffn + m.hidden);
  c.linear_weight_elems = (m.gated_mlp ? 3.0 : 2.0) * m.hidden * ffn;
  return c;
}

namespace {

/// The routed MoE layer's three linears on one rank, the one place their shapes are stated: the router's logits
/// GEMM over the rank's tokens (in router_gemm_dtype), and the local experts' grouped fc1 (gate+up) and fc2 over
/// their token-expert pairs.
struct MoeLinears {
  Linear router, fc1, fc2;
};
/// The dtype of an fp32 router's backward GEMMs: TF32 where the GPU states a TF32 rate (Transformer Engine v2.7
/// common/gemm/cublaslt_gemm.cu cublas_gemm: CUBLAS_COMPUTE_32F_FAST_TF32 when A, B and D are all fp32), else fp32.
Dtype fp32_router_gemm_dtype(const Gpu& g) { return g.peak_for(Dtype::tf32).v > 0 ? Dtype::tf32 : Dtype::fp32; }

/// The router's logits GEMM y[T, E] = x[T, h] W^T. With moe_router_dtype fp32 (MoeDesc::router_fp32), Megatron-Core
/// core_v0.14.0 moe_utils.py RouterGatingLinearFunction runs the forward on the bf16 input and weight with an fp32
/// output (as without it), but its backward casts the weight to fp32 and takes the fp32 logits' gradient, so the
/// data gradient (T x h, depth E) is an fp32 GEMM writing fp32; the weight gradient casts the saved bf16 input to
/// fp32 first and runs E x h at depth T, writing fp32 (then cast to bf16 for autograd, not into main_grad). The
/// casts are memory passes (router_fp32_casts_bwd).
Linear router_linear(const Context& ctx, double tokens, double experts, double h) {
  Linear l = linear(ctx, router_gemm_dtype(ctx), tokens, experts, h);
  if (!ctx.model.moe->router_fp32) return l;
  const Gpu& g = ctx.system.gpu;
  const Dtype d = fp32_router_gemm_dtype(g);
  l.dgrad = gemm_time(g, d, tokens, h, experts);
  l.wgrad = base_frozen(ctx.plan) ? Seconds{0} : gemm_time(g, d, h, experts, tokens);
  l.bwd = l.dgrad + l.wgrad;
  return l;
}

/// The fp32 router's backward casts (RouterGatingLinearFunction.backward, core_v0.14.0): weight to fp32 (E x h),
/// saved input to fp32 (T x h), the input gradient back to the input's bf16 and the weight gradient to the
/// weight's bf16; each reads 2 or 4 bytes and writes the other, 6 per element, one kernel each.
Seconds router_fp32_casts_bwd(const Gpu& g, double tokens, double experts, double h) {
  const Bytes weight(experts * h * 6.0), input(tokens * h * 6.0);
  return (memory_time(g, weight) + memory_time(g, input)) * 2.0;
}

MoeLinears moe_linears(const Context& ctx, const Sharding& sh) {
  const ModelDesc& m = ctx.model;
  const double h = m.hidden, per_expert = sh.expert_tokens / sh.local_experts;
  return {router_linear(ctx, sh.moe_tokens, m.moe->experts, h),
          grouped_linear(ctx, sh.local_experts, per_expert, (m.gated_mlp ? 2.0 : 1.0) * sh.expert_ffn, h),
          grouped_linear(ctx, sh.local_experts, per_expert, h, sh.expert_ffn)};
}

/// moe_forward_parts over linears already built (moe_mlp builds them once and uses them for both).
MoeForwardParts moe_forward_parts_of(const Context& ctx, const Sharding& sh, const MoeLinears& lin) {
  const ModelDesc& m = ctx.model;
  const Gpu& g = ctx.system.gpu;
  MoeForwardParts p;
  if (!m.moe || sh.local_experts <= 0) return p;
  const double h = m.hidden, pairs = sh.expert_tokens;
  p.router_gemm = lin.router.fwd;
  p.fc1 = lin.fc1.fwd;
  p.fc2 = lin.fc2.fwd;
  const double logits = sh.moe_tokens * m.moe->experts;
  if (ctx.framework.fused_moe_router) {
    // Transformer Engine v2.7 fused router (common/fused_router/), bytes per fp32 logit: the top-k kernel reads
    // the logits and writes probs (4), routing map (1) and the intermediate it saves (4), 13; its backward reads
    // map, intermediate and grad-probs and writes grad-logits, 13 (fused_topk_with_score_function.cu). The aux
    // loss (Megatron-Core core_v0.14.0 router.py _apply_aux_loss, every shipped MoE recipe) recomputes scores
    // from the logits, 13 forward (scores, map, intermediate) and 12 backward (fused_score_for_moe_aux_loss.cu),
    // and its loss kernel reads the probabilities and writes their gradient, 4 each way (fused_moe_aux_loss.cu).
    p.routing = memory_time(g, Bytes(logits * (13.0 + 13.0 + 4.0)));
    p.routing_bwd = memory_time(g, Bytes(logits * (13.0 + 12.0 + 4.0)));
  } else {
    // Unfused: softmax/top-k over fp32 logits (read + write); backward about twice the forward (not read).
    p.routing = memory_time(g, Bytes(logits * 4.0 * 2.0));
    p.routing_bwd = p.routing * 2.0;
  }
  if (m.moe->router_fp32) p.routing_bwd += router_fp32_casts_bwd(g, sh.moe_tokens, m.moe->experts, h);
  // The permutation and un-permutation of the pairs' hidden vectors (fused: tokens + pairs rows per pass;
  // unfused: every pair's row read and written, framework.h).
  const bool fused = ctx.framework.fused_moe_permutation;
  const double per_pass = fused ? sh.moe_tokens + pairs : 2.0 * pairs;
  p.permutation = memory_time(g, Bytes(per_pass * h * kActBytes)) * 2.0;
  // Megatron-Core's all-to-all dispatcher then sorts the received pairs by local expert for the grouped GEMM
  // ("permutation 2": sort_chunks_by_idxs, or a transposed copy when padding to capacity) and restores the
  // order before the combine (token_dispatcher.py): two more read-and-write passes when a rank holds several
  // experts.
  if (sh.local_experts > 1) p.permutation += memory_time(g, Bytes(pairs * h * kActBytes * 2.0)) * 2.0;
  // Fused, each pass's backward is the other pass (TE v2.7 pytorch/permutation.py: _moe_permute_mask_map's
  // backward runs unpermute_with_mask_map, _moe_unpermute_mask_map's without merging probs runs
  // permute_with_mask_map; the chunk sort's backward sorts back, a transposed copy's is a transposed copy):
  // the same rows as the forward. Unfused (index_select / scatter_add and their autograd): about twice.
  p.permutation_bwd = fused ? p.permutation : p.permutation * 2.0;
  p.activation = memory_time(g, Bytes(activation_elems(m, ctx.framework) * pairs * sh.expert_ffn * kActBytes));
  // fp8 row padding (moe_host.h fp8_pads_expert_rows; TE v2.7 fp8_padding.py / fp8_unpadding.py), counted with
  // the permutation's row copies: the permuted hidden states (width h) copied into the padded buffer before fc1
  // and fc2's output (width h) copied out of it after, each pair's row read and written in 16 bits (the
  // probabilities' copy is one element per pair). The backward runs the same two copies the other way (each
  // autograd function's backward is the other kernel).
  const double rows_per_expert = sh.local_experts > 0 ? pairs / sh.local_experts : 0;
  if (fp8_pads_expert_rows(ctx.plan, ctx.framework, rows_per_expert)) {
    const Seconds pad = memory_time(g, Bytes(pairs * h * kActBytes * 2.0)) * 2.0;
    p.permutation += pad;
    p.permutation_bwd += pad;
  }
  // The router's, permutation's and dispatcher's small kernels and the token-count wait (moe_host.h).
  const MoeHostCost host =
      moe_host_cost(ctx.plan, ctx.framework, g, static_cast<int>(sh.local_experts), rows_per_expert);
  p.kernels_fwd = host.kernels_fwd;
  p.kernels_bwd = host.kernels_bwd;
  p.host = host.sync;
  return p;
}

/// One MoE layer's MLP on one rank (Megatron-Core MoELayer): router GEMM and top-k over the rank's tokens, the
/// token permutation before and the un-permutation after the experts, the local experts as grouped GEMMs over
/// their token-expert pairs (sh.expert_tokens already carries the busiest rank's load factor), and the shared
/// experts as a dense MLP over the layer's tokens. The forward's parts are moe_forward_parts'.
MlpCost moe_mlp(const Context& ctx, const Sharding& sh) {
  const ModelDesc& m = ctx.model;
  const double h = m.hidden, pairs = sh.expert_tokens;
  const MoeLinears lin = moe_linears(ctx, sh);
  const MoeForwardParts parts = moe_forward_parts_of(ctx, sh, lin);
  MlpCost c = dense_mlp(ctx, sh, sh.shared_ffn);
  c.up.add(lin.router);
  c.up.add(lin.fc1);
  c.down.add(lin.fc2);
  c.gemms = c.up;
  c.gemms.add(c.down);
  c.mem_fwd += parts.routing + parts.permutation + parts.activation;
  c.mem_bwd += parts.routing_bwd + parts.permutation_bwd + parts.activation * 2.0;
  // The experts' grouped linears (TE GroupedLinear) cast every token-expert pair's input; the router stays in
  // 16 bits.
  c.linear_input_elems += pairs * (h + sh.expert_ffn);
  c.linear_output_elems += pairs * ((m.gated_mlp ? 2.0 : 1.0) * sh.expert_ffn + h);
  c.linear_weight_elems += sh.local_experts * (m.gated_mlp ? 3.0 : 2.0) * h * sh.expert_ffn;
  c.kernels_fwd = parts.kernels_fwd;
  c.kernels_bwd = parts.kernels_bwd;
  c.host_fwd = parts.host;
  return c;
}

}  // namespace

MoeForwardParts moe_forward_parts(const Context& ctx, const Sharding& sh) {
  if (!ctx.model.moe || sh.local_experts <= 0) return {};
  return moe_forward_parts_of(ctx, sh, moe_linears(ctx, sh));
}

MlpParts mlp_parts(const Context& ctx, const Sharding& sh) {
  MlpParts parts;
  parts.dense = dense_mlp(ctx, sh, sh.ffn);
  parts.moe = !ctx.model.moe              ? 0.0
              : sh.moe_layer_share >= 0.0 ? sh.moe_layer_share  // the rank's own layers (pipeline layout)
                                          : fraction_of_layers(ctx.model, is_moe_layer);
  if (parts.moe > 0) parts.routed = moe_mlp(ctx, sh);
  return parts;
}

MlpCost mlp_cost(const MlpParts& parts, const Sharding& sh) {
  const MlpCost& dense = parts.dense;
  const double moe = parts.moe;
  if (moe <= 0) return dense;
  const MlpCost& routed = parts.routed;
  MlpCost c;
  c.gemms = dense.gemms.scaled(1.0 - moe);
  c.gemms.add(routed.gemms.scaled(moe));
  c.up = dense.up.scaled(1.0 - moe);
  c.up.add(routed.up.scaled(moe));
  c.down = dense.down.scaled(1.0 - moe);
  c.down.add(routed.down.scaled(moe));
  c.mem_fwd = dense.mem_fwd * (1.0 - moe) + routed.mem_fwd * moe;
  c.mem_bwd = dense.mem_bwd * (1.0 - moe) + routed.mem_bwd * moe;
  c.linear_input_elems = dense.linear_input_elems * (1.0 - moe) + routed.linear_input_elems * moe;
  c.linear_output_elems = dense.linear_output_elems * (1.0 - moe) + routed.linear_output_elems * moe;
  c.linear_weight_elems = dense.linear_weight_elems * (1.0 - moe) + routed.linear_weight_elems * moe;
  // Elementwise backward traffic: twice the forward's, except the MoE kernels the sources show (mem_bwd).
  c.host_fwd = routed.host_fwd * moe;
  c.kernels_fwd = routed.kernels_fwd * moe;
  c.kernels_bwd = routed.kernels_bwd * moe;
  c.moe_fwd = (routed.gemms.fwd + routed.mem_fwd + routed.host_fwd + routed.kernels_fwd) * moe;
  c.moe_bwd = (routed.gemms.bwd * sh.backward_fraction + routed.mem_bwd + routed.kernels_bwd) * moe;
  return c;
}

}  // namespace shardplan
