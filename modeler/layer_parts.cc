#include "modeler/layer_parts.h"

#include <algorithm>

#include "modeler/finetune.h"
#include "modeler/precision_recipe.h"

namespace shardplan {

Dtype gemm_dtype(const Plan& p) { return p.precision == Dtype::fp32 ? Dtype::tf32 : p.precision; }

Fp8Scaling fp8_scaling(const Context& ctx) {
  return ctx.plan.precision == Dtype::fp8 ? gemm_scaling(effective_fp8_recipe(ctx.plan, ctx.framework))
                                          : Fp8Scaling::per_tensor;
}

Dtype sixteen_bit_gemm(const Context& ctx) {
  const Dtype p = ctx.plan.precision;
  return p == Dtype::fp8 || p == Dtype::fp4 ? ctx.system.gpu.sixteen_bit() : p;
}

/// Where a weight gradient's GEMM writes: the fp32 main_grad under gradient accumulation fusion (framework.h),
/// read first on every micro-batch of the step but the first (accumulate = not is_first_microbatch, TE v2.7
/// linear.py and grouped_linear.py; Megatron-Core core_v0.14.0 TELinear/TEGroupedLinear pass is_first_microbatch,
/// True on a step's first forward). Matters where the GEMM is shallow: an expert's wgrad reduces over its few
/// hundred to few thousand tokens, so its h x f fp32 output moves 8 bytes per element against 2k FLOPs.
GemmOutput wgrad_output(const Context& ctx) {
  if (!ctx.framework.wgrad_into_fp32_main_grad) return {};
  const int mb = std::max(1, ctx.plan.num_microbatches());
  return {4.0, (mb - 1.0) / mb};
}

Linear linear(const Context& ctx, Dtype d, double m, double n, double k, double fwd_chunks, double dgrad_chunks) {
  const Gpu& g = ctx.system.gpu;
  const Fp8Scaling s = fp8_scaling(ctx);  // applies to fp8 GEMMs only (gemm_model.cc gemm_grid)
  Linear l;
  l.fwd = gemm_time(g, d, m / fwd_chunks, n, k, s) * fwd_chunks;
  l.dgrad = gemm_time(g, d, m / dgrad_chunks, k, n, s) * dgrad_chunks;  // dX = dY W^T
  // dW = X^T dY (none for frozen weights)
  l.wgrad = base_frozen(ctx.plan) ? Seconds{0} : gemm_time(g, d, k, n, m, s, wgrad_output(ctx));
  l.bwd = l.dgrad + l.wgrad;
  l.flops_fwd = 2.0 * m * n * k;
  return l;
}

Linear sharded_linear(const Context& ctx, double m, double n, double k, double splits, bool split_n,
                      double fwd_chunks, double dgrad_chunks) {
  const Dtype d = gemm_dtype(ctx.plan);
  if (splits <= 1) return linear(ctx, d, m, n, k, fwd_chunks, dgrad_chunks);
  const Linear one = split_n ? linear(ctx, d, m, n / splits, k) : linear(ctx, d, m, n, k / splits);
  return {one.fwd * splits, one.bwd * splits, one.dgrad * splits, one.wgrad * splits, one.flops_fwd * splits};
}

OverlapChunks tp_overlap_chunks(const Context& ctx) {
  const Plan& p = ctx.plan;
  if (p.tp <= 1 || !p.tp_comm_overlap || !p.sequence_parallel) return {};
  const double rs = ctx.framework.tp_overlap_rs_splits;
  return {1.0 * p.tp, rs > 0 ? rs : 1.0 * p.tp};
}

Seconds memory_time(const Gpu& gpu, Bytes bytes) {
  const double eff = gpu.eff.memory.empty() ? 1.0 : gpu.eff.memory.at(bytes.v);
  return gpu.eff.kernel_overhead + bytes / (gpu.hbm_bw * eff);
}

Seconds qk_norm_time(const Context& ctx, const Sharding& sh) {
  const ModelDesc& m = ctx.model;
  if (m.qk_norm == QkNorm::none || m.mla) return Seconds(0);
  // Megatron-Core core_v0.14.0 attention.py get_query_key_value_tensors: q_layernorm over the [s, b, np, hn] query,
  // then k_layernorm over the key, two TENorm (Transformer Engine RMSNorm) calls on the split QKV output; per head or
  // over the full width, the bytes are the same.
  const double passes = ctx.framework.fused_elementwise ? 1.0 : ctx.framework.unfused_passes_per_norm;
  const double per_head = 2.0 * sh.tokens * m.head_dim * kActBytes * passes;  // read + write of one head's rows
  const Gpu& g = ctx.system.gpu;
  return memory_time(g, Bytes(per_head * sh.heads)) + memory_time(g, Bytes(per_head * sh.kv_heads));
}

double fraction_of_layers(const ModelDesc& m, bool (*pred)(const ModelDesc&, int)) {
  int n = 0;
  for (int i = 0; i < m.layers; ++i) n += pred(m, i) ? 1 : 0;
  return m.layers > 0 ? 1.0 * n / m.layers : 0.0;
}

}  // namespace shardplan
