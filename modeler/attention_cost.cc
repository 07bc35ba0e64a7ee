#include "modeler/attention_cost.h"

#include <algorithm>
#include <utility>

#include "modeler/gemm_model.h"
#include "modeler/layer_parts.h"
#include "modeler/memory_model.h"

namespace shardplan {

namespace {

// FlashAttention-2 backward runs 5 GEMM-like products per block against the forward's 2 (Dao 2023, Sec. 3.1):
// backward FLOPs are 2.5x forward where the query-key and value head dims are equal.
constexpr double kAttentionBwdRatio = 2.5;

/// Backward over forward FLOPs of the attention kernel. The forward runs S = QK^T over the qk head dim and O = PV
/// over the v head dim; the backward re-forms S (qk), then dP = dO V^T and dV = P^T dO (v), dQ = dS K and
/// dK = dS^T Q (qk): (3 qk + 2 v) / (qk + v), the FLOP count of cudnn-frontend's SDPA training benchmark
/// (benchmark/sdpa_benchmark_training/benchmark_single_sdpa.py flops(), 3929da2). 2.5 where the dims are equal;
/// MLA's 192 / 128 (DeepSeek-V3) gives 2.6.
double bwd_flops_ratio(const ModelDesc& m) {
  if (!m.mla) return kAttentionBwdRatio;
  const double qk = 1.0 * m.mla->qk_nope_head_dim + m.mla->qk_rope_head_dim, v = m.mla->v_head_dim;
  return qk + v > 0 ? (3.0 * qk + 2.0 * v) / (qk + v) : kAttentionBwdRatio;
}

Seconds attention_time(const Context& ctx, double flops, bool backward) {
  const Gpu& g = ctx.system.gpu;
  const int k = static_cast<int>(attention_kernel(ctx));
  const Curve& table = backward ? g.eff.attention_bwd[k] : g.eff.attention_fwd[k];
  const double eff = table.empty() ? 0.5 : table.at(flops);
  // Attention runs in 16 bits even in fp8 recipes (TE and torchao keep attention in bf16 by default).
  return g.eff.kernel_overhead + Flops(flops) / (g.sustained_peak(g.sixteen_bit()) * eff);
}

/// Unfused attention (materialized scores), Megatron-LM's CoreAttention: QK^T as a batched GEMM over the full
/// s x s square (masking does not skip work), scale-mask-softmax and dropout as memory-bound kernels over the
/// scores, then scores x V. Backward: two GEMMs per product, softmax and dropout gradients over the scores.
struct Materialized {
  Seconds fwd, bwd;
  double flops_fwd;
};
Materialized materialized_attention(const Context& ctx, const Sharding& sh, bool dropout) {
  const Gpu& g = ctx.system.gpu;
  const Dtype d = sixteen_bit_gemm(ctx);
  const double rows = sh.batch * sh.heads * sh.seq_q, hd = ctx.model.head_dim, skv = sh.seq_kv;
  const double scores = rows * skv;  // elements of the score tensor
  Materialized a;
  a.flops_fwd = 2.0 * 2.0 * rows * skv * hd;
  const Seconds qk = gemm_time(g, d, rows, skv, hd), pv = gemm_time(g, d, rows, hd, skv);
  // Softmax reads and writes 16-bit scores; dropout reads them and writes output plus a 1-byte mask.
  const Seconds softmax = memory_time(g, Bytes(scores * 4.0));
  const Seconds drop = dropout ? memory_time(g, Bytes(scores * 5.0)) : Seconds(0);
  a.fwd = qk + pv + softmax + drop;
  // Backward: dQ, dK from dS; dP, dV from dO; softmax gradient reads probabilities and gradient, writes one.
  a.bwd = (qk + pv) * 2.0 + memory_time(g, Bytes(scores * 6.0)) + (dropout ? drop : Seconds(0));
  return a;
}

/// Query-key pairs per query row, averaged over the rank's rows: causal attention over s_kv keys averages
/// s_kv / 2; a sliding window of w < s_kv keys gives sum_i min(i, w) / s_kv = w - w^2 / (2 s_kv).
double keys_per_query(const Sharding& sh, int window) {
  if (window <= 0 || window >= sh.seq_kv) return 0.5 * sh.seq_kv;
  return window - 1.0 * window * window / (2.0 * sh.seq_kv);
}

double attention_flops_window(const Context& ctx, const Sharding& sh, int window) {
  const ModelDesc& m = ctx.model;
  // QK^T over the qk head dim and PV over the v head dim (both the head dim outside MLA).
  const double dims =
      m.mla ? 1.0 * m.mla->qk_nope_head_dim + m.mla->qk_rope_head_dim + m.mla->v_head_dim : 2.0 * m.head_dim;
  return 2.0 * sh.batch * sh.seq_q * keys_per_query(sh, window) * sh.heads * dims;
}

/// K and V elements the ring attention kernel takes on one rank: the query heads' where the framework repeats
/// the kv heads before attention (torchtitan's repeat_kv, so the ring carries the repeated tensors).
double ring_kv_elems(const Context& ctx, const Sharding& sh) {
  const ModelDesc& m = ctx.model;
  if (m.mla)
    return sh.tokens * sh.heads * (1.0 * m.mla->qk_nope_head_dim + m.mla->qk_rope_head_dim + m.mla->v_head_dim);
  const double heads = ctx.framework.gqa_repeats_kv ? std::max(sh.heads, sh.kv_heads) : sh.kv_heads;
  return 2.0 * sh.tokens * heads * m.head_dim;
}

/// One ring step's kernels (times) and the rank's whole attention (FLOPs), weighted over full and sliding-window
/// layers.
AttentionCost ring_step_kernels(const Context& ctx, const Sharding& sh, double steps) {
  const ModelDesc& m = ctx.model;
  AttentionCost a;
  const double sliding = fraction_of_layers(m, is_sliding_layer);
  const std::pair<double, int> kinds[] = {{1.0 - sliding, 0}, {sliding, m.sliding_window}};
  const double bwd_ratio = bwd_flops_ratio(m);
  for (const auto& [weight, window] : kinds) {
    if (weight <= 0) continue;
    const double f = window == 0 && !m.mla ? attention_fwd_flops(ctx, sh) : attention_flops_window(ctx, sh, window);
    a.fwd += attention_time(ctx, f / steps, false) * weight;
    a.bwd += attention_time(ctx, bwd_ratio * f / steps, true) * weight;
    a.flops_fwd += f * weight;
    a.flops_bwd += 2.0 * bwd_ratio * f * weight;
  }
  return a;
}

/// HBM traffic of merging the ring steps' partial outputs (forward) and accumulating their partial dQ, dK, dV
/// (backward), per the framework's implementation; the busiest rank (the last) merges full-length outputs on
/// every step. Where the framework copies the K/V buffer (CpMergeBytes::kv_pass, kv_send), each pass does.
void add_ring_merges(const Context& ctx, const Sharding& sh, double steps, AttentionCost* a) {
  if (steps <= 1) return;
  const ModelDesc& m = ctx.model;
  const Gpu& g = ctx.system.gpu;
  const CpMergeBytes& b = ctx.framework.cp_merge;
  const double v_dim = m.mla ? m.mla->v_head_dim : m.head_dim;
  const double out = sh.tokens * sh.heads * v_dim;
  const double kv = ring_kv_elems(ctx, sh);
  a->fwd += memory_time(g, Bytes(out * b.forward_first)) + memory_time(g, Bytes(out * b.forward_step)) * (steps - 1);
  a->bwd += memory_time(g, Bytes(out * b.backward_first + kv * b.grad_kv_first)) +
            memory_time(g, Bytes(out * b.backward_step + kv * b.grad_kv_step)) * (steps - 1);
  if (b.kv_pass + b.kv_send <= 0) return;
  const Seconds copies = memory_time(g, Bytes(kv * b.kv_pass)) + memory_time(g, Bytes(kv * b.kv_send)) * (steps - 1);
  a->fwd += copies;
  a->bwd += copies;
}

}  // namespace

/// Ring steps of context-parallel attention: the ring (and PyTorch's loop even over all-gathered K/V) runs one
/// kernel per step. Under the load-balanced causal split every step of every rank covers the same number of
/// query-key pairs (2 chunk^2 of chunk = s / 2cp: the diagonal step's causal square and each later step's half
/// of the queries or keys), so each kernel does 1/cp of the rank's work, at the efficiency of that size.
double ring_steps(const Context& ctx) {
  const Plan& p = ctx.plan;
  const bool loop = p.cp_kind == CpKind::ring || ctx.framework.cp_allgather_runs_ring_loop;
  return p.cp > 1 && loop ? p.cp : 1.0;
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

Seconds ring_step_kernel_time(const Context& ctx, const Sharding& sh, bool backward) {
  const AttentionCost k = ring_step_kernels(ctx, sh, ring_steps(ctx));
  return backward ? k.bwd : k.fwd;
}

AttentionCost attention_cost(const Context& ctx, const Sharding& sh) {
  const ModelDesc& m = ctx.model;
  const double sliding = fraction_of_layers(m, is_sliding_layer);
  const double steps = ring_steps(ctx);
  AttentionCost a = ring_step_kernels(ctx, sh, steps);
  a.fwd = a.fwd * steps;
  a.bwd = a.bwd * steps;
  add_ring_merges(ctx, sh, steps, &a);
  if (ctx.framework.materialized_attention && sliding == 0 && !m.mla) {
    const Materialized mat = materialized_attention(ctx, sh, trains_with_dropout(m));
    a = {mat.fwd, mat.bwd, mat.flops_fwd / 2.0, 2.0 * mat.flops_fwd};
  }
  return a;
}

}  // namespace shardplan
