#include "modeler/layer_cost.h"

#include <algorithm>

#include "modeler/gemm_model.h"

namespace shardplan {

namespace {

constexpr double kAct = 2.0;  // bytes per activation element (bf16/fp16)
// FlashAttention-2 backward runs 5 GEMM-like products per block against the forward's 2 (Dao 2023, Sec. 3.1):
// backward FLOPs are 2.5x forward.
constexpr double kAttentionBwdRatio = 2.5;

Dtype gemm_dtype(const Plan& p) { return p.precision == Dtype::fp32 ? Dtype::tf32 : p.precision; }

/// Forward and backward (data + weight gradient) time of one linear layer y[m,n] = x[m,k] W[k,n].
struct Linear {
  Seconds fwd, bwd;
  double flops_fwd;
};
Linear linear(const Context& ctx, double m, double n, double k) {
  const Gpu& g = ctx.system.gpu;
  const Dtype d = gemm_dtype(ctx.plan);
  Linear l;
  l.fwd = gemm_time(g, d, m, n, k);
  l.bwd = gemm_time(g, d, m, k, n) + gemm_time(g, d, k, n, m);  // dX = dY W^T, dW = X^T dY
  l.flops_fwd = 2.0 * m * n * k;
  return l;
}

Seconds attention_time(const Context& ctx, double flops, bool backward) {
  const Gpu& g = ctx.system.gpu;
  const int k = static_cast<int>(attention_kernel(ctx));
  const Curve& table = backward ? g.eff.attention_bwd[k] : g.eff.attention_fwd[k];
  const double eff = table.empty() ? 0.5 : table.at(flops);
  // Attention runs in 16 bits even in fp8 recipes (TE and torchao keep attention in bf16 by default).
  return g.eff.kernel_overhead + Flops(flops) / (g.peak_for(Dtype::bf16) * eff);
}

}  // namespace

Seconds memory_time(const Gpu& gpu, Bytes bytes) {
  const double eff = gpu.eff.memory.empty() ? 1.0 : gpu.eff.memory.at(bytes.v);
  return gpu.eff.kernel_overhead + bytes / (gpu.hbm_bw * eff);
}

AttentionKernel attention_kernel(const Context& ctx) {
  const auto k = ctx.framework.attention;
  return ctx.system.gpu.eff.attention_fwd[static_cast<int>(k)].empty() ? AttentionKernel::flash2 : k;
}

double attention_fwd_flops(const Context& ctx, const Sharding& sh) {
  // Causal: half of the s x s score square; with cp, the load-balanced split gives each rank 1/cp of it,
  // i.e. seq_q x seq_kv / 2 per rank since seq_q = s / cp.
  return 4.0 * sh.batch * sh.seq_q * sh.seq_kv * 0.5 * sh.heads * ctx.model.head_dim;
}

LayerCost layer_cost(const Context& ctx, const Sharding& sh) {
  const ModelDesc& m = ctx.model;
  const Framework& fw = ctx.framework;
  const Gpu& g = ctx.system.gpu;
  const double T = sh.tokens, Tn = sh.norm_tokens, h = m.hidden, d = m.head_dim;

  const Linear qkv = linear(ctx, T, (sh.heads + 2.0 * sh.kv_heads) * d, h);
  const Linear out = linear(ctx, T, h, sh.heads * d);
  const Linear up = linear(ctx, T, (m.gated_mlp ? 2.0 : 1.0) * sh.ffn, h);
  const Linear down = linear(ctx, T, h, sh.ffn);

  const double attn_flops = attention_fwd_flops(ctx, sh);
  const Seconds attn_fwd = attention_time(ctx, attn_flops, false);
  const Seconds attn_bwd = attention_time(ctx, kAttentionBwdRatio * attn_flops, true);

  // Memory-bound kernels of the forward pass, by bytes read + written. Fused: one read and one write per
  // tensor. Eager (unfused) frameworks run each norm as several elementwise kernels.
  const double norm_passes = fw.fused_elementwise ? 1.0 : fw.unfused_passes_per_norm;
  const Bytes norm(2.0 * Tn * h * kAct * norm_passes);
  const Bytes residual(3.0 * Tn * h * kAct);  // read x and branch output, write the sum
  const Bytes rope(2.0 * T * (sh.heads + sh.kv_heads) * d * kAct);
  // SwiGLU reads gate and up, writes f (fused); eager: silu (read, write) then multiply (2 reads, write).
  const double act_elems = m.gated_mlp ? (fw.fused_elementwise ? 3.0 : 5.0) : 2.0;
  const Bytes activation(act_elems * T * sh.ffn * kAct);
  const bool rotary = m.position == PositionKind::rope;
  Seconds mem_fwd = 2.0 * memory_time(g, norm) + 2.0 * memory_time(g, residual) + memory_time(g, activation);
  if (rotary) mem_fwd += memory_time(g, rope);
  if (ctx.plan.precision == Dtype::fp8) {
    // Casting each linear's input to fp8 (with amax) per the framework's recipe: inputs of QKV, out, up, down.
    const Bytes cast((2.0 * Tn * h + T * sh.heads * d + T * sh.ffn) * (kAct + 1.0) * fw.fp8_cast_passes);
    mem_fwd += 4.0 * memory_time(g, cast / 4.0);
  }
  // Backward of elementwise kernels reads the saved input and the incoming gradient and writes one gradient:
  // about twice the forward traffic.
  const Seconds mem_bwd = mem_fwd * 2.0;

  LayerCost c;
  c.forward.time = qkv.fwd + out.fwd + up.fwd + down.fwd + attn_fwd + mem_fwd;
  c.forward.attention = attn_fwd;
  c.forward.flops = qkv.flops_fwd + out.flops_fwd + up.flops_fwd + down.flops_fwd + 2.0 * attn_flops;
  c.backward.time = qkv.bwd + out.bwd + up.bwd + down.bwd + attn_bwd + mem_bwd;
  c.backward.attention = attn_bwd;
  c.backward.flops = 2.0 * (qkv.flops_fwd + out.flops_fwd + up.flops_fwd + down.flops_fwd) +
                     2.0 * kAttentionBwdRatio * attn_flops;
  switch (ctx.plan.recompute) {
    case Recompute::none: break;
    case Recompute::selective:  // Korthikanti Sec. 5: re-run the attention core only
      c.recompute.time = attn_fwd;
      c.recompute.attention = attn_fwd;
      c.recompute.flops = 2.0 * attn_flops;
      break;
    case Recompute::full:
      c.recompute = c.forward;
      break;
  }
  return c;
}

LayerCost head_cost(const Context& ctx, const Sharding& sh) {
  const ModelDesc& m = ctx.model;
  const Gpu& g = ctx.system.gpu;
  const double T = sh.tokens;
  LayerCost c;
  // Embedding lookup: gather T rows of h (write) on the first stage; scatter-add of its gradient in backward.
  const Bytes embed(T * m.hidden * kAct * 2.0);
  const Seconds first_fwd = memory_time(g, embed), first_bwd = memory_time(g, embed * 2.0);
  // LM head GEMM over the local vocabulary (always 16-bit: fp8 recipes keep the output layer in bf16) and the
  // cross-entropy over [T x V_local] logits: fused (Megatron vocab-parallel CE) ~12 bytes per logit
  // (bf16 logits read, fp32 exp written/read, bf16 grad written); eager (upcast, log_softmax, nll, backward)
  // ~28 bytes per logit.
  const Dtype d = ctx.plan.precision == Dtype::fp8 ? Dtype::bf16 : ctx.plan.precision;
  const Seconds head_fwd = gemm_time(g, d, T, sh.vocab, m.hidden);
  const Seconds head_bwd = gemm_time(g, d, T, m.hidden, sh.vocab) + gemm_time(g, d, m.hidden, sh.vocab, T);
  const double ce_bytes = ctx.framework.fused_elementwise ? 12.0 : 28.0;
  const Seconds ce = memory_time(g, Bytes(T * sh.vocab * ce_bytes));
  const Seconds final_norm = memory_time(g, Bytes(2.0 * sh.norm_tokens * m.hidden * kAct));
  const Seconds last_fwd = head_fwd + ce / 2.0 + final_norm, last_bwd = head_bwd + ce / 2.0 + final_norm * 2.0;
  const double head_flops = 2.0 * T * sh.vocab * m.hidden;
  if (ctx.plan.pp == 1) {
    c.forward.time = first_fwd + last_fwd;
    c.backward.time = first_bwd + last_bwd;
  } else if (first_fwd + first_bwd > last_fwd + last_bwd) {
    c.forward.time = first_fwd;
    c.backward.time = first_bwd;
  } else {
    c.forward.time = last_fwd;
    c.backward.time = last_bwd;
  }
  c.forward.flops = head_flops;
  c.backward.flops = 2.0 * head_flops;
  return c;
}

}  // namespace shardplan
