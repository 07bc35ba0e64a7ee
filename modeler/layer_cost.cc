#include "modeler/layer_cost.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "modeler/finetune.h"
#include "modeler/gemm_model.h"
#include "modeler/memory_model.h"
#include "modeler/moe_host.h"
#include "modeler/precision_recipe.h"

namespace shardplan {

namespace {

constexpr double kAct = 2.0;  // bytes per activation element (bf16/fp16)
// FlashAttention-2 backward runs 5 GEMM-like products per block against the forward's 2 (Dao 2023, Sec. 3.1):
// backward FLOPs are 2.5x forward.
constexpr double kAttentionBwdRatio = 2.5;

Dtype gemm_dtype(const Plan& p) { return p.precision == Dtype::fp32 ? Dtype::tf32 : p.precision; }
/// The table the plan's fp8 GEMMs use: the recipe's scaling (precision_recipe.h).
Fp8Scaling fp8_scaling(const Context& ctx) {
  return ctx.plan.precision == Dtype::fp8 ? gemm_scaling(effective_fp8_recipe(ctx.plan, ctx.framework))
                                          : Fp8Scaling::per_tensor;
}

/// GEMMs that stay in 16 bits in 8- and 4-bit recipes (attention's products, the LM head): the plan's 16-bit
/// precision, or the GPU's 16-bit format when the plan's precision is narrower.
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

/// Forward and backward (data + weight gradient) time of one linear layer y[m,n] = x[m,k] W[k,n].
struct Linear {
  Seconds fwd, bwd, dgrad, wgrad;  // bwd = dgrad + wgrad
  double flops_fwd;
};
/// The GEMMs run in `d` (the plan's GEMM dtype, or router_gemm_dtype); `fwd_chunks` / `dgrad_chunks`: the fprop
/// and dgrad GEMMs run as that many blocks of m / chunks rows each (TP comm-GEMM overlap), each at its own size's
/// efficiency.
Linear linear(const Context& ctx, Dtype d, double m, double n, double k, double fwd_chunks = 1,
              double dgrad_chunks = 1) {
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

/// The dtype of the MoE router's GEMMs, which stay in 16 bits under 8- and 4-bit recipes. Megatron-Core's router
/// owns a plain parameter, not a Transformer Engine module, and runs its logits GEMM on the bf16 input and weight
/// with an fp32 (moe_router_dtype) output (core_v0.14.0 moe/router.py TopKRouter.gating, moe_utils.py
/// RouterGatingLinearFunction: te_general_gemm of the bf16 tensors); torchtitan's MoE recipes leave "router.gate"
/// out of their float8 and MX converters (filter_fqns). The logits are written as fp32 either way (small: T x E).
Dtype router_gemm_dtype(const Context& ctx) {
  return quantized_gemms(ctx.plan) ? ctx.system.gpu.sixteen_bit() : gemm_dtype(ctx.plan);
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

}  // namespace

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

AttentionKernel attention_kernel(const Context& ctx) {
  const auto k = ctx.framework.attention;
  return ctx.system.gpu.eff.attention_fwd[static_cast<int>(k)].empty() ? AttentionKernel::flash2 : k;
}

double attention_fwd_flops(const Context& ctx, const Sharding& sh) {
  // Causal: half of the s x s score square; with cp, the load-balanced split gives each rank 1/cp of it,
  // i.e. seq_q x seq_kv / 2 per rank since seq_q = s / cp.
  return 4.0 * sh.batch * sh.seq_q * sh.seq_kv * 0.5 * sh.heads * ctx.model.head_dim;
}

namespace {

/// Forward and backward time and forward FLOPs of a set of GEMMs.
struct Gemms {
  Seconds fwd, bwd, dgrad, wgrad;
  double flops_fwd = 0;
  void add(const Linear& l) {
    fwd += l.fwd;
    bwd += l.bwd;
    dgrad += l.dgrad;
    wgrad += l.wgrad;
    flops_fwd += l.flops_fwd;
  }
  void add(const Gemms& g) {
    fwd += g.fwd;
    bwd += g.bwd;
    dgrad += g.dgrad;
    wgrad += g.wgrad;
    flops_fwd += g.flops_fwd;
  }
  Gemms scaled(double k) const { return {fwd * k, bwd * k, dgrad * k, wgrad * k, flops_fwd * k}; }
};

/// Under TSP a rank receives a layer's weights as `splits` shards and runs one GEMM per shard over its tokens:
/// column shards for QKV and MLP-up (`split_n`), row shards (the reduction dimension) for the output and down
/// projections, whose partial products accumulate locally (techniques.md section 1).
Linear sharded_linear(const Context& ctx, double m, double n, double k, double splits, bool split_n,
                      double fwd_chunks = 1, double dgrad_chunks = 1) {
  const Dtype d = gemm_dtype(ctx.plan);
  if (splits <= 1) return linear(ctx, d, m, n, k, fwd_chunks, dgrad_chunks);
  const Linear one = split_n ? linear(ctx, d, m, n / splits, k) : linear(ctx, d, m, n, k / splits);
  return {one.fwd * splits, one.bwd * splits, one.dgrad * splits, one.wgrad * splits, one.flops_fwd * splits};
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

/// MLA's up projections (DeepSeek-V2 Sec. 2.1): queries from the q LoRA rank (when there is one), keys' nope part
/// and values from the K/V latent.
Gemms mla_up_projections(const Context& ctx, const Sharding& sh) {
  const MlaDesc& a = *ctx.model.mla;
  const double T = sh.tokens, split = sh.gemm_splits, qk = 1.0 * a.qk_nope_head_dim + a.qk_rope_head_dim;
  Gemms p;
  if (a.q_lora_rank > 0) p.add(sharded_linear(ctx, T, sh.heads * qk, a.q_lora_rank, split, true));
  p.add(sharded_linear(ctx, T, sh.heads * (1.0 * a.qk_nope_head_dim + a.v_head_dim), a.kv_lora_rank, split, true));
  return p;
}

/// QKV and output projections. MLA (DeepSeek-V2, arXiv 2405.04434, Sec. 2.1): query down/up projections through
/// the q LoRA rank (or one direct projection), the joint K/V down projection to kv_lora_rank + the shared RoPE
/// key, the K/V up projection to heads x (nope + v), and the output projection from heads x v. The small down
/// projections are split like the heads (Megatron-Core shards them over tp too).
struct Projections {
  Gemms in, out;  // the input projections (the qkv slot) and the output projection (proj)
  Gemms all() const {
    Gemms g = in;
    g.add(out);
    return g;
  }
};
Projections attention_projections(const Context& ctx, const Sharding& sh) {
  const ModelDesc& m = ctx.model;
  const double T = sh.tokens, h = m.hidden, split = sh.gemm_splits;
  const OverlapChunks c = tp_overlap_chunks(ctx);
  Projections p;
  if (!m.mla) {
    p.in.add(sharded_linear(ctx, T, (sh.heads + 2.0 * sh.kv_heads) * m.head_dim, h, split, true, c.ag, 1));
    p.out.add(sharded_linear(ctx, T, h, sh.heads * m.head_dim, split, false, c.rs, c.ag));
    return p;
  }
  const MlaDesc& a = *m.mla;
  const double frac = sh.heads / m.heads, qk = 1.0 * a.qk_nope_head_dim + a.qk_rope_head_dim;
  if (a.q_lora_rank > 0)
    p.in.add(sharded_linear(ctx, T, a.q_lora_rank * frac, h, split, true));
  else
    p.in.add(sharded_linear(ctx, T, sh.heads * qk, h, split, true));
  p.in.add(sharded_linear(ctx, T, (1.0 * a.kv_lora_rank + a.qk_rope_head_dim) * frac, h, split, true));
  p.in.add(mla_up_projections(ctx, sh));
  p.out.add(sharded_linear(ctx, T, h, sh.heads * a.v_head_dim, split, false));
  return p;
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
  const double dims = m.mla ? 1.0 * m.mla->qk_nope_head_dim + m.mla->qk_rope_head_dim + m.mla->v_head_dim
                            : 2.0 * m.head_dim;
  return 2.0 * sh.batch * sh.seq_q * keys_per_query(sh, window) * sh.heads * dims;
}

double fraction_of_layers(const ModelDesc& m, bool (*pred)(const ModelDesc&, int)) {
  int n = 0;
  for (int i = 0; i < m.layers; ++i) n += pred(m, i) ? 1 : 0;
  return m.layers > 0 ? 1.0 * n / m.layers : 0.0;
}

/// The attention kernel of one layer, averaged over full and sliding-window layers (gpt-oss alternates them;
/// its per-head sink logit adds one column to the softmax, negligible work).
struct AttentionCost {
  Seconds fwd, bwd;
  double flops_fwd = 0, flops_bwd = 0;
};
/// Ring steps of context-parallel attention: the ring (and PyTorch's loop even over all-gathered K/V) runs one
/// kernel per step. Under the load-balanced causal split every step of every rank covers the same number of
/// query-key pairs (2 chunk^2 of chunk = s / 2cp: the diagonal step's causal square and each later step's half
/// of the queries or keys), so each kernel does 1/cp of the rank's work, at the efficiency of that size.
double ring_steps(const Context& ctx) {
  const Plan& p = ctx.plan;
  const bool loop = p.cp_kind == CpKind::ring || ctx.framework.cp_allgather_runs_ring_loop;
  return p.cp > 1 && loop ? p.cp : 1.0;
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

AttentionCost attention_cost(const Context& ctx, const Sharding& sh) {
  const ModelDesc& m = ctx.model;
  AttentionCost a;
  const double sliding = fraction_of_layers(m, is_sliding_layer);
  const double steps = ring_steps(ctx);
  const std::pair<double, int> kinds[] = {{1.0 - sliding, 0}, {sliding, m.sliding_window}};
  for (const auto& [weight, window] : kinds) {
    if (weight <= 0) continue;
    const double f = window == 0 && !m.mla ? attention_fwd_flops(ctx, sh) : attention_flops_window(ctx, sh, window);
    a.fwd += attention_time(ctx, f / steps, false) * (steps * weight);
    a.bwd += attention_time(ctx, kAttentionBwdRatio * f / steps, true) * (steps * weight);
    a.flops_fwd += f * weight;
    a.flops_bwd += 2.0 * kAttentionBwdRatio * f * weight;
  }
  add_ring_merges(ctx, sh, steps, &a);
  if (ctx.framework.materialized_attention && sliding == 0 && !m.mla) {
    const Materialized mat = materialized_attention(ctx, sh, trains_with_dropout(m));
    a = {mat.fwd, mat.bwd, mat.flops_fwd / 2.0, 2.0 * mat.flops_fwd};
  }
  return a;
}

/// An MLP's GEMMs, its memory-bound forward kernels (activation function; MoE permutation and routing) and the
/// elements of its linear layers' inputs (what an fp8 recipe casts).
struct MlpCost {
  Gemms gemms;
  Gemms up, down;  // the parts of `gemms` before and after the activation (the fc1 and fc2 slots)
  Seconds mem_fwd;
  Seconds mem_bwd;  // the backward of mem_fwd's kernels
  double linear_input_elems = 0;
  double linear_output_elems = 0;  // elements of its linear layers' outputs (the gradients an fp8 recipe casts)
  double linear_weight_elems = 0;  // elements of its linear layers' weights on this rank
  Seconds moe_fwd, moe_bwd;  // the MoE layers' part of the above, averaged over all layers
  Seconds host_fwd;          // forward-only host wait (MoE token counts, moe_host.h), averaged over all layers
  Seconds kernels_fwd, kernels_bwd;  // MoE launches layer_cost does not time otherwise (moe_host.h), averaged
};

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
  c.mem_fwd = memory_time(ctx.system.gpu, Bytes(activation_elems(m, ctx.framework) * tokens * ffn * kAct));
  c.mem_bwd = c.mem_fwd * 2.0;  // elementwise backward: about twice the forward's traffic (layer_cost)
  // The up projection's input is cast before sequence parallelism's all-gather (norm tokens), the down
  // projection's after it.
  c.linear_input_elems = sh.norm_tokens * m.hidden + tokens * ffn;
  c.linear_output_elems = tokens * ((m.gated_mlp ? 2.0 : 1.0) * ffn + m.hidden);
  c.linear_weight_elems = (m.gated_mlp ? 3.0 : 2.0) * m.hidden * ffn;
  return c;
}

/// The routed MoE layer's three linears on one rank, the one place their shapes are stated: the router's logits
/// GEMM over the rank's tokens (in router_gemm_dtype), and the local experts' grouped fc1 (gate+up) and fc2 over
/// their token-expert pairs.
struct MoeLinears {
  Linear router, fc1, fc2;
};
MoeLinears moe_linears(const Context& ctx, const Sharding& sh) {
  const ModelDesc& m = ctx.model;
  const double h = m.hidden, per_expert = sh.expert_tokens / sh.local_experts;
  return {linear(ctx, router_gemm_dtype(ctx), sh.moe_tokens, m.moe->experts, h),
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
  // The permutation and un-permutation of the pairs' hidden vectors (fused: tokens + pairs rows per pass;
  // unfused: every pair's row read and written, framework.h).
  const bool fused = ctx.framework.fused_moe_permutation;
  const double per_pass = fused ? sh.moe_tokens + pairs : 2.0 * pairs;
  p.permutation = memory_time(g, Bytes(per_pass * h * kAct)) * 2.0;
  // Megatron-Core's all-to-all dispatcher then sorts the received pairs by local expert for the grouped GEMM
  // ("permutation 2": sort_chunks_by_idxs, or a transposed copy when padding to capacity) and restores the
  // order before the combine (token_dispatcher.py): two more read-and-write passes when a rank holds several
  // experts.
  if (sh.local_experts > 1) p.permutation += memory_time(g, Bytes(pairs * h * kAct * 2.0)) * 2.0;
  // Fused, each pass's backward is the other pass (TE v2.7 pytorch/permutation.py: _moe_permute_mask_map's
  // backward runs unpermute_with_mask_map, _moe_unpermute_mask_map's without merging probs runs
  // permute_with_mask_map; the chunk sort's backward sorts back, a transposed copy's is a transposed copy):
  // the same rows as the forward. Unfused (index_select / scatter_add and their autograd): about twice.
  p.permutation_bwd = fused ? p.permutation : p.permutation * 2.0;
  p.activation = memory_time(g, Bytes(activation_elems(m, ctx.framework) * pairs * sh.expert_ffn * kAct));
  // The router's, permutation's and dispatcher's small kernels and the token-count wait (moe_host.h).
  const MoeHostCost host = moe_host_cost(ctx.plan, ctx.framework, g, static_cast<int>(sh.local_experts));
  p.kernels_fwd = host.kernels_fwd;
  p.kernels_bwd = host.kernels_bwd;
  p.host = host.sync;
  return p;
}

}  // namespace

MoeForwardParts moe_forward_parts(const Context& ctx, const Sharding& sh) {
  if (!ctx.model.moe || sh.local_experts <= 0) return {};
  return moe_forward_parts_of(ctx, sh, moe_linears(ctx, sh));
}

namespace {

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

/// A layer's MLP as its parts: the dense MLP, the MoE layer's (when the model has MoE layers) and the share of
/// the layers that are MoE.
struct MlpParts {
  MlpCost dense, routed;
  double moe = 0;
};

MlpParts mlp_parts(const Context& ctx, const Sharding& sh) {
  MlpParts parts;
  parts.dense = dense_mlp(ctx, sh, sh.ffn);
  parts.moe = ctx.model.moe ? fraction_of_layers(ctx.model, is_moe_layer) : 0.0;
  if (parts.moe > 0) parts.routed = moe_mlp(ctx, sh);
  return parts;
}

/// The MLP of one layer averaged over the model's dense and MoE layers.
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

/// Megatron-Core selective recompute (plan.h RecomputeModule): each module's forward once more in backward, the
/// norms as their memory passes; a recomputed MoE layer re-runs its dispatch and combine too (time_model.cc).
PassCost module_recompute(const Context& ctx, const Sharding& sh, const AttentionCost& attn, const MlpParts& mlp,
                          Seconds norms) {
  const unsigned modules = ctx.plan.recompute_modules;
  const ModelDesc& m = ctx.model;
  const double moe = mlp.moe;
  PassCost r;
  if (modules & kRecomputeCoreAttn) {
    r.time = r.attention = attn.fwd;
    r.flops = 2.0 * attn.flops_fwd;
  }
  if (modules & kRecomputeLayernorm) r.time += norms;
  auto add = [&r](const Gemms& g, Seconds mem, double share, bool is_moe) {
    const Seconds t = (g.fwd + mem) * share;
    r.time += t;
    r.flops += g.flops_fwd * share;
    if (is_moe) r.moe += t;
  };
  if ((modules & kRecomputeMlp) && moe < 1.0) add(mlp.dense.gemms, mlp.dense.mem_fwd, 1.0 - moe, false);
  if (moe > 0 && (modules & kRecomputeMoe)) {
    add(mlp.routed.gemms, mlp.routed.mem_fwd + mlp.routed.kernels_fwd, moe, true);
  } else if (moe > 0) {
    if (modules & kRecomputeMoeAct)
      add(Gemms{}, memory_time(ctx.system.gpu, Bytes(activation_elems(m, ctx.framework) * sh.expert_tokens *
                                                      sh.expert_ffn * kAct)),
          moe, true);
    if (modules & kRecomputeSharedExperts) {
      const MlpCost shared = dense_mlp(ctx, sh, sh.shared_ffn);
      add(shared.gemms, shared.mem_fwd, moe, true);
    }
  }
  if (m.mla && (modules & kRecomputeMlaUpProj)) add(mla_up_projections(ctx, sh), Seconds(0), 1.0, false);
  return r;
}

/// One layer's quantization kernels under the plan's fp8/fp4 recipe, forward and backward.
struct QuantizeTimes {
  Seconds fwd, bwd;
};

QuantizeTimes quantize_times(const Context& ctx, const Sharding& sh, const Gemms& proj, const MlpCost& mlp) {
  const ModelDesc& m = ctx.model;
  const Framework& fw = ctx.framework;
  const Gpu& g = ctx.system.gpu;
  const double T = sh.tokens, h = m.hidden;
  const RecipeKernels k = recipe_kernels(effective_fp8_recipe(ctx.plan, fw), fw, g);
  // Attention projections: QKV and output inputs (the QKV input before sequence parallelism's all-gather, as
  // the existing cast convention), their outputs, and their weights (FLOPs / 2T: every projection sees T rows).
  const double attn_in = sh.norm_tokens * h + T * sh.heads * m.head_dim;
  const double attn_out = m.mla ? attn_in : T * (sh.heads + 2.0 * sh.kv_heads) * m.head_dim + T * h;
  const double attn_w = T > 0 ? proj.flops_fwd / (2.0 * T) : 0.0;
  constexpr double kLinears = 4.0;  // QKV, output projection, MLP up and down: one quantization each
  auto pass = [&](const QuantizeCost& q, double elems) {
    return memory_time(g, Bytes(elems * q.bytes_per_elem / (kLinears * q.kernels))) * (kLinears * q.kernels) +
           memory_time(g, Bytes(0.0)) * (kLinears * q.launch_only_ops);
  };
  QuantizeTimes t;
  t.fwd = pass(k.activation, attn_in + mlp.linear_input_elems);
  t.bwd = pass(k.gradient, attn_out + mlp.linear_output_elems);
  // Weights: with parameters kept in the recipe's dtype (fp8 param gather) only the column-wise copy is made (a
  // read and write of the 1-byte data); otherwise the recipe's full quantization. Transformer Engine quantizes
  // them once per step and reuses them (fp8_caches_weights); torchao casts in every forward.
  const bool fp8_params = ctx.plan.fp8_param_gather.value_or(fw.fp8_param_gather);
  const QuantizeCost w = fp8_params ? QuantizeCost{2.0, 1} : k.weight;
  const double per_mb = fw.fp8_caches_weights ? 1.0 / std::max(1, ctx.plan.num_microbatches()) : 1.0;
  t.fwd += pass(w, attn_w + mlp.linear_weight_elems) * per_mb;
  return t;
}

}  // namespace

Seconds eager_rope_time(const Context& ctx, const Sharding& sh) {
  const double elems = sh.tokens * (sh.heads + sh.kv_heads) * ctx.model.head_dim;
  return memory_time(ctx.system.gpu, Bytes(elems * ctx.framework.eager_rope_bytes_per_element));
}

Seconds kv_repeat_time(const Context& ctx, const Sharding& sh) {
  const ModelDesc& m = ctx.model;
  if (m.mla || sh.kv_heads >= sh.heads) return Seconds(0);
  // K and V: read the kv heads, write the query heads, in 16 bits.
  return memory_time(ctx.system.gpu, Bytes(2.0 * sh.tokens * (sh.kv_heads + sh.heads) * m.head_dim * kAct));
}

LayerCost layer_cost(const Context& ctx, const Sharding& sh) {
  const ModelDesc& m = ctx.model;
  const Framework& fw = ctx.framework;
  const Gpu& g = ctx.system.gpu;
  const double T = sh.tokens, Tn = sh.norm_tokens, h = m.hidden, d = m.head_dim;

  const Projections projections = attention_projections(ctx, sh);
  const Gemms proj = projections.all();
  const MlpParts parts = mlp_parts(ctx, sh);
  const MlpCost mlp = mlp_cost(parts, sh);
  const AttentionCost attn = attention_cost(ctx, sh);

  // Memory-bound kernels of the forward pass, by bytes read + written. Fused: one read and one write per
  // tensor. Eager (unfused) frameworks run each norm as several elementwise kernels.
  const double norm_passes = fw.fused_elementwise ? 1.0 : fw.unfused_passes_per_norm;
  const Bytes norm(2.0 * Tn * h * kAct * norm_passes);
  const Bytes residual(3.0 * Tn * h * kAct);  // read x and branch output, write the sum
  const Bytes rope(2.0 * T * (sh.heads + sh.kv_heads) * d * kAct);
  const bool rotary = m.position == PositionKind::rope;
  Seconds mem_fwd = 2.0 * memory_time(g, norm) + 2.0 * memory_time(g, residual) + mlp.mem_fwd;
  const bool own_rope = rotary && fw.eager_rope_bytes_per_element > 0;
  if (rotary && !own_rope) mem_fwd += memory_time(g, rope);
  // Backward of elementwise kernels reads the saved input and the incoming gradient and writes one gradient:
  // about twice the forward traffic.
  Seconds mem_bwd = (mem_fwd - mlp.mem_fwd) * 2.0 + mlp.mem_bwd;
  // Kernels whose backward moves what their forward moves (framework.h): an eager RoPE of the framework's own
  // and the K/V repeat of grouped-query attention (the copy, then the sum over the copies).
  const Seconds same_both_ways =
      (own_rope ? eager_rope_time(ctx, sh) : Seconds(0)) + (fw.gqa_repeats_kv ? kv_repeat_time(ctx, sh) : Seconds(0));
  mem_fwd += same_both_ways;
  mem_bwd += same_both_ways;
  if (tp_overlap_chunks(ctx).ag > 1 && fw.tp_overlap_rs_reduce_kernel) {
    // AsyncTP's reduce-scatters (after proj and FC2 in forward, of the QKV and FC1 dX in backward) end with a sum
    // of the tp received partials: reads T x h 16-bit elements, writes T / tp x h. The backward's are NCCL's own
    // where the overlap does not pair them (framework.h tp_overlap_pairs_dx_reduce_scatter).
    const Seconds reduce = memory_time(g, Bytes(T * h * kAct * (1.0 + 1.0 / ctx.plan.tp)));
    mem_fwd += reduce * 2.0;
    if (fw.tp_overlap_pairs_dx_reduce_scatter) mem_bwd += reduce * 2.0;
  }
  if (quantized_gemms(ctx.plan)) {
    // The recipe's quantization kernels (precision_recipe.h): each linear's input in forward, its output gradient
    // in backward, and its weight. The QKV and output projections' inputs and outputs, then the MLP's (dense or
    // every expert's); MLA's projections are counted by their inputs for both.
    const QuantizeTimes q = quantize_times(ctx, sh, proj, mlp);
    mem_fwd += q.fwd;
    mem_bwd += q.bwd;
  }
  // SDP's backward masking runs the GEMMs' backward only for the held parameters (techniques.md section 2).
  const double bwd_frac = sh.backward_fraction;
  const double gemm_flops = proj.flops_fwd + mlp.gemms.flops_fwd;

  LayerCost c;
  c.forward.time = proj.fwd + mlp.gemms.fwd + attn.fwd + mem_fwd + mlp.host_fwd + mlp.kernels_fwd;
  c.forward.attention = attn.fwd;
  c.forward.moe = mlp.moe_fwd;
  c.forward.flops = gemm_flops + 2.0 * attn.flops_fwd;
  c.backward.time = (proj.bwd + mlp.gemms.bwd) * bwd_frac + attn.bwd + mem_bwd + mlp.kernels_bwd;
  c.backward.attention = attn.bwd;
  c.backward.moe = mlp.moe_bwd;
  c.backward.flops = (base_frozen(ctx.plan) ? 1.0 : 2.0) * gemm_flops * bwd_frac + attn.flops_bwd;
  const std::pair<LinearGemm, const Gemms*> linears[] = {
      {LinearGemm::qkv, &projections.in}, {LinearGemm::proj, &projections.out},
      {LinearGemm::fc1, &mlp.up}, {LinearGemm::fc2, &mlp.down}};
  for (const auto& [which, gemms] : linears) {
    c.forward.linear[linear_slot(which)] = gemms->fwd;
    c.backward.linear[linear_slot(which)] = gemms->dgrad * bwd_frac;
    c.backward.linear[linear_slot(which, true)] = gemms->wgrad * bwd_frac;
  }
  // Fine-tuning adapters and QLoRA's dequantisation (finetune.h), before recompute re-runs the forward.
  const AdapterCost adapters = adapter_cost(ctx, sh);
  c.forward.time += adapters.fwd;
  c.forward.flops += adapters.flops_fwd;
  c.backward.time += adapters.bwd;
  c.backward.flops += adapters.flops_bwd;
  switch (ctx.plan.recompute) {
    case Recompute::none: break;
    case Recompute::selective:
      if (fw.selective_is_op_sac) {
        // torchtitan's op-level selective checkpointing (parallelize_llama.py _save_list policy): saves the
        // outputs of every other matmul and of SDPA, recomputes the rest: of the layer's matmuls in call order
        // (wq, wk, wv, wo, w1, w3, w2) the 2nd, 4th and 6th (wk, wo, w3), plus every elementwise kernel.
        const double recomputed = 2.0 * T * h * (sh.kv_heads * d + sh.heads * d + sh.ffn);
        const double share = gemm_flops > 0 ? std::min(1.0, recomputed / gemm_flops) : 0.0;
        c.recompute.time = (proj.fwd + mlp.gemms.fwd) * share + mem_fwd;
        c.recompute.flops = recomputed;
        break;
      }
      // Korthikanti Sec. 5: re-run the attention core (Megatron's default module), and any other modules asked.
      c.recompute = module_recompute(ctx, sh, attn, parts, 2.0 * memory_time(g, norm));
      break;
    case Recompute::full: {
      // Block method: only recompute_layers of each chunk's layers re-run their forward (the per-layer mean).
      const double share = full_recompute_share(ctx.plan, sh);
      c.recompute = {c.forward.time * share, c.forward.attention * share, c.forward.moe * share,
                     c.forward.flops * share};
      break;
    }
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
  // A frozen embedding (fine-tuning) gets no gradient: nothing runs for it in backward.
  const bool frozen = base_frozen(ctx.plan);
  const Seconds first_fwd = memory_time(g, embed), first_bwd = frozen ? Seconds(0) : memory_time(g, embed * 2.0);
  // LM head GEMM over the local vocabulary (always 16-bit: fp8 recipes keep the output layer in bf16) and the
  // cross-entropy over [T x V_local] logits, whose HBM traffic per logit is the framework's trait.
  const Dtype d = sixteen_bit_gemm(ctx);
  const Seconds head_fwd = gemm_time(g, d, T, sh.vocab, m.hidden);
  const Seconds head_bwd =
      gemm_time(g, d, T, m.hidden, sh.vocab) + (frozen ? Seconds(0) : gemm_time(g, d, m.hidden, sh.vocab, T));
  const Seconds ce = memory_time(g, Bytes(T * sh.vocab * ctx.framework.loss_traffic_per_logit(ctx.plan.tp)));
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
  c.backward.flops = (frozen ? 1.0 : 2.0) * head_flops;
  return c;
}

}  // namespace shardplan
