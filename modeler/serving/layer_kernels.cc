#include "modeler/serving/layer_kernels.h"

#include <algorithm>
#include <cmath>

#include "modeler/collectives.h"
#include "modeler/gemm_model.h"
#include "modeler/layer_cost.h"
#include "modeler/serving/allreduce_table.h"
#include "modeler/serving/decode_attention_table.h"
#include "modeler/serving/decode_gemm_table.h"
#include "modeler/serving/moe_table.h"
#include "modeler/serving/prefill_gemm_table.h"

namespace shardplan::serving {

namespace {

// Activations stay 16-bit except where the GEMM runs in fp8/fp4 (TRT-LLM, SGLang and vLLM quantise the
// activation of an fp8 GEMM on the fly; the output is bf16).
double act_bytes(Dtype math) { return math == Dtype::fp8 || math == Dtype::fp4 ? 1.0 : 2.0; }

// The attention-fwd table the engines' kernels are closest to: FlashAttention-3 / TRT-LLM FMHA where the profile
// has a Hopper-generation table, else FlashAttention-2.
const Curve& attention_curve(const Gpu& g) {
  const Curve& f3 = g.eff.attention_fwd[static_cast<int>(AttentionKernel::flash3)];
  return f3.empty() ? g.eff.attention_fwd[static_cast<int>(AttentionKernel::flash2)] : f3;
}

}  // namespace

Seconds weight_stream_time(const Gpu& gpu, Dtype math, double rows, Bytes weight_bytes, Bytes other_bytes) {
  // Measured decode-GEMM rate at this m where the table has the GPU (it includes the kernel's fixed cost), capped
  // at the HBM bandwidth (the table's small sizes on large-L2 parts read from cache); else the HBM rate at the
  // memory table's efficiency plus the kernel overhead.
  if (const std::optional<double> rate = decode_gemm_bytes_per_s(gpu.name, math, rows, weight_bytes.v)) {
    const double r = std::min(*rate, gpu.hbm_bw.v);
    return Seconds(weight_bytes.v / r) + other_bytes / (gpu.hbm_bw * memory_efficiency(gpu, other_bytes.v));
  }
  const Bytes bytes = weight_bytes + other_bytes;
  return gpu.eff.kernel_overhead + bytes / (gpu.hbm_bw * memory_efficiency(gpu, bytes.v));
}

namespace {
// llama.cpp's Metal backend multiplies up to 8 rows with its matrix-vector kernels and the tiled matrix-matrix
// kernel above (ggml-metal-ops.cpp, `ne11_mm_min = 8`, "break-even where the mat-matrix kernel becomes more
// efficient"; quoted in indexed copies of the current source, not read at the rows' 2024 builds).
constexpr double kMetalMulMvMaxRows = 8;

// Int-to-float conversions per second of an Apple GPU: CONVERT(I->F) issues on the integer and complex-math
// pipeline at one 32-wide instruction per 4 cycles per scheduler, 32 lanes per core and cycle, against 128 FP32
// FMA lanes (philipturner/metal-benchmarks@dc2adc6 README, "ALU Layout" and "Instruction Throughputs", measured on
// A14 and M1 Max; the M2 and M3 generations assumed alike). The profile's fp32 peak counts 2 flops per FMA lane.
double apple_convert_rate(const Gpu& g) { return g.peak_for(Dtype::fp32).v / 2.0 / 4.0; }
}  // namespace

namespace {
// Tile quantisation only for GEMMs of at least one full wave of output tiles: a skinny GEMM (decode, small
// prefill chunks) has fewer tiles than SMs, and cuBLAS/CUTLASS pick split-K or stream-K kernels that keep every
// SM busy (the measured decode GEMMs above run at the memory rate from m = 1 to 64), not one 128x256 tile per SM.
double serving_wave_efficiency(const Gpu& gpu, double m, double n) {
  if (gpu.sm_count <= 0) return 1.0;
  const GemmTile t = gemm_tile(gpu);
  const double tiles = std::ceil(m / t.m) * std::ceil(n / t.n);
  return tiles < gpu.sm_count ? 1.0 : wave_efficiency(gpu, m, n);
}
}  // namespace

Seconds gguf_kernel_extra_time(const Gpu& gpu, WeightFormat format, double m, double n, double k) {
  if (m <= 0 || !is_gguf_block_format(format)) return Seconds(0);
  if (gpu.unified_memory) {
    // Metal (the only llama.cpp GPU backend on the Apple parts, every shipped unified_memory profile): up to
    // kMetalMulMvMaxRows rows run the mul_mv kernels, each converting every weight once per row; above, the tiled
    // mul_mm kernel dequantises a tile once for all its rows (not counted).
    if (m > kMetalMulMvMaxRows) return Seconds(0);
    return Seconds(m * n * k * metal_mul_mv_converts_per_weight(format) / apple_convert_rate(gpu));
  }
  // CUDA: ggml_cuda_op_mul_mat quantises the f32 activation to q8_1 blocks (32 int8 + a half2 d, s: 36 bytes per
  // 32 values) in a kernel of its own before each quantised matrix multiplication (ggml-cuda.cu quantize_src1,
  // read in an indexed copy; mmvq and mmq both take q8_1): one small kernel reading m x k floats and writing the
  // blocks.
  return small_kernel_time(gpu) + elementwise_time(gpu, Bytes(m * k * (4.0 + 36.0 / 32.0)));
}

Seconds weight_gemm_time(const Gpu& gpu, Dtype math, double m, double n, double k, Bytes weight_bytes,
                         double compute_speedup, std::optional<WeightFormat> format) {
  if (m <= 0) return Seconds(0);
  const double flops = 2.0 * m * n * k;
  // A GGUF format's dequantisation work runs inside or before its kernel and is added to the weight stream: on
  // Metal the conversions share the kernel with the loads (no overlap assumed: an upper bound; the F16 and Q4_K_M
  // rows of one M2 Ultra stream at 0.84 and 0.66 of its peak, docs/serving.md), on CUDA the q8_1 kernel runs first.
  const Seconds memory = weight_stream_time(gpu, math, m, weight_bytes, Bytes(m * k * act_bytes(math) + m * n * 2.0)) +
                         (format ? gguf_kernel_extra_time(gpu, *format, m, n, k) : Seconds(0));
  // Prefill-sized GEMMs: the measured rate of the engines' kernels for this format (its fixed cost included).
  if (format && m >= kPrefillGemmMinRows)
    if (const Curve* rate = prefill_gemm_rate(gpu.name, *format))
      return std::max(Seconds(flops / rate->at(flops)) * (1.0 / compute_speedup), memory);
  const FlopsPerSec peak = gpu.sustained_peak(math);
  const Seconds compute =
      Flops(flops) / (peak * (gemm_efficiency(gpu, math, flops, k) * serving_wave_efficiency(gpu, m, n))) *
      (1.0 / compute_speedup);
  return std::max(gpu.eff.kernel_overhead + compute, memory);
}

namespace {

// Local widths of a linear under tensor parallelism; K/V heads are replicated when tp exceeds them.
void local_dims(const KernelCtx& c, const LinearSpec& s, double* n, double* k, double* share) {
  const double tp = c.w.tp;
  *n = s.n;
  *k = s.k;
  *share = 1;
  if (s.split == TpSplit::none) return;
  double div = tp;
  if (s.kv) div = std::min(tp, 1.0 * c.sm.model.kv_heads);
  if (s.split == TpSplit::column) *n /= div;
  else *k /= div;
  *share = 1.0 / div;
}

}  // namespace

Seconds linear_time(const KernelCtx& c, const LinearSpec& s, double tokens) {
  double n, k, share;
  local_dims(c, s, &n, &k, &share);
  const Dtype math = math_dtype(s.format, c.g);
  if (s.xf.rank <= 0)
    return weight_gemm_time(c.g, math, tokens, n, k, s.bytes * share,
                            sparse_compute_speedup(s.xf, tokens, n, k), s.format);
  // W = A B runs as two GEMMs, x -> B x (r wide) -> A (B x). Under tensor parallelism a column-parallel layer
  // keeps B whole and splits A's rows; a row-parallel one splits B's columns and keeps A whole.
  const double r = s.xf.rank;
  const double in_share = r * s.k / (r * (s.n + s.k));
  const bool column = s.split == TpSplit::column;
  const double b_k = column ? s.k : k, a_n = column ? n : s.n;
  const Bytes b_bytes = s.bytes * in_share * (column ? 1.0 : share);
  const Bytes a_bytes = s.bytes * (1.0 - in_share) * (column ? share : 1.0);
  return weight_gemm_time(c.g, math, tokens, r, b_k, b_bytes, sparse_compute_speedup(s.xf, tokens, r, b_k),
                          s.format) +
         weight_gemm_time(c.g, math, tokens, a_n, r, a_bytes, sparse_compute_speedup(s.xf, tokens, a_n, r),
                          s.format);
}

namespace {

// Routed experts on one EP rank: `pairs` token-expert pairs of the whole MoE group spread uniformly over the
// experts; the rank runs its experts/moe_ep experts as one grouped GEMM per projection, reading the weights of
// every expert that received at least one token (expected count under uniform routing: E(1-(1-1/E)^pairs)).
struct ExpertWork {
  Seconds compute;     // the grouped GEMM's math at the GEMM table's efficiency
  Flops flops;         // that math on this rank
  Bytes weights;       // weights of the touched local experts
  Bytes activations;   // rows in and out
  double rows = 1;     // token rows per touched expert (pairs on the rank / touched experts)
  Dtype math = Dtype::bf16;
};

ExpertWork expert_work(const KernelCtx& c, const LinearSpec& s, double pairs) {
  ExpertWork w;
  const double e = s.experts, ep = c.w.moe_ep, etp = c.w.moe_tp;
  const double local = e / ep;
  const double reached = 1.0 - std::pow(1.0 - 1.0 / e, pairs);  // share of experts with at least one token
  const double touched = local * reached;
  const double m = pairs / e;  // rows per expert
  double n = s.n, k = s.k;
  if (s.split == TpSplit::column) n /= etp;
  else k /= etp;
  w.math = math_dtype(s.format, c.g);
  const double flops_one = 2.0 * m * n * k;
  const Flops flops(flops_one * local);
  w.flops = flops;
  const GemmTile tile = gemm_tile(c.g);
  const double rows = local * std::max(1.0, std::ceil(m / tile.m)) * tile.m;
  w.compute = flops / (c.g.sustained_peak(w.math) * (gemm_efficiency(c.g, w.math, flops_one, k) *
                                                     serving_wave_efficiency(c.g, rows, n))) *
              (1.0 / sparse_compute_speedup(s.xf, rows, n, k));
  w.weights = s.bytes * (touched / e / etp);
  w.rows = std::max(1.0, m / reached);
  w.activations = Bytes(local * m * (k * act_bytes(w.math) + n * 2.0));
  return w;
}

Seconds expert_time(const KernelCtx& c, const LinearSpec& s, double pairs) {
  const ExpertWork w = expert_work(c, s, pairs);
  // The decode-GEMM rate at the rows one touched expert gets (its share of the routed tokens).
  const Seconds memory = weight_stream_time(c.g, w.math, w.rows, w.weights, w.activations);
  return std::max(c.g.eff.kernel_overhead + w.compute, memory);
}

}  // namespace

// The routed experts of one MoE layer. Where moe_table.h has the GPU and the experts' format, the layer streams
// its touched experts' weights at the measured MoE-layer rate for its rows per touched expert (that latency
// includes routing, permutation and every kernel's fixed cost), bounded below by the grouped GEMMs' math; else
// one grouped GEMM per projection.
constexpr double kMoeTableMaxRowsPerExpert = 16;  // the derivation's filter (moe_table.cc)

Seconds moe_layer_time(const KernelCtx& c, const std::vector<LinearSpec>& experts, double pairs) {
  if (experts.empty() || pairs <= 0) return Seconds(0);
  const WeightFormat f = experts.front().format;
  const bool uniform =
      std::all_of(experts.begin(), experts.end(), [&](const LinearSpec& s) { return s.format == f; });
  // The byte-rate table was measured at <= 16 rows per expert; beyond that the layer runs at the measured
  // FLOP rate of moe_layer_flop_rate (more rows per expert), bounded below by streaming the touched experts at
  // the HBM bandwidth; GPUs and formats without measurements use the grouped GEMMs' own model.
  const bool measured_regime = pairs / experts.front().experts <= kMoeTableMaxRowsPerExpert;
  const bool rates = uniform && measured_regime && moe_layer_rates(c.g, f) != nullptr;
  const Curve* flop_rate = uniform && !measured_regime ? moe_layer_flop_rate(c.g, f) : nullptr;
  if (!rates && !flop_rate) {
    Seconds t;
    for (const LinearSpec& s : experts) t += expert_time(c, s, pairs);
    return t;
  }
  Seconds compute;
  Flops flops;
  Bytes weights;
  double rows = 1;
  for (const LinearSpec& s : experts) {
    const ExpertWork w = expert_work(c, s, pairs);
    compute += w.compute;
    flops += w.flops;
    weights += w.weights;
    rows = w.rows;
  }
  if (flop_rate) return std::max(Seconds(flops.v / flop_rate->at(flops.v)), weights / c.g.hbm_bw);
  // Capped at the HBM bandwidth: the table's small sizes on large-L2 parts read from cache (moe_table.cc).
  const double rate = *moe_layer_bytes_per_s(c.g, f, rows, weights.v);
  const Seconds memory(weights.v / std::min(rate, c.g.hbm_bw.v));
  return std::max(c.g.eff.kernel_overhead * static_cast<double>(experts.size()) + compute, memory);
}

// Attention of one layer on one rank: prefill as a fused causal kernel at the attention table's efficiency;
// decode reads each sequence's K/V once (memory-bound for GQA, compute-heavy for MLA's 128 heads over a
// 576-wide latent), at the table's best efficiency for its FLOPs.
Seconds attention_time(const KernelCtx& c, const LayerClass& cls, const StepLoad& l) {
  const ModelDesc& m = c.sm.model;
  const double tp = c.w.tp;
  const double heads = m.heads / tp;
  double qk = m.head_dim, v = m.head_dim, kv_elems;  // kv_elems: cached elements per token per rank
  if (m.mla) {
    // Weight-absorbed MLA (DeepSeek-V2 Sec. 2.1.2; FlashMLA): queries attend over the latent directly.
    qk = m.mla->kv_lora_rank + m.mla->qk_rope_head_dim;
    v = m.mla->kv_lora_rank;
    kv_elems = m.mla->kv_lora_rank + m.mla->qk_rope_head_dim;
  } else {
    kv_elems = 2.0 * std::max(1.0, m.kv_heads / tp) * m.head_dim;
  }
  const double window = cls.sliding ? 1.0 * m.sliding_window : 1e18;
  const Curve& curve = attention_curve(c.g);
  const double top = curve.empty() ? 0.5 : *std::max_element(curve.y.begin(), curve.y.end());
  Seconds t;
  if (l.prefill_tokens > 0) {
    // Prefill with MLA runs un-absorbed (per-head 192/128 dims), as the engines do for long chunks.
    const double pqk = m.mla ? m.mla->qk_nope_head_dim + m.mla->qk_rope_head_dim : qk;
    const double pv = m.mla ? m.mla->v_head_dim : v;
    const double keys = std::min(l.prefill_keys, window);
    const double flops = 2.0 * l.prefill_tokens * keys * heads * (pqk + pv);
    const double eff = curve.empty() ? 0.5 : curve.at(flops);
    t += c.g.eff.kernel_overhead + Flops(flops) / (c.g.sustained_peak(Dtype::bf16) * eff);
  }
  if (l.decode_seqs > 0) {
    const double keys = std::min(l.decode_ctx, window);
    const double flops = 2.0 * l.decode_seqs * l.decode_tokens_per_seq * keys * heads * (qk + v);
    const Bytes bytes(l.decode_seqs * keys * kv_elems * c.sm.precision.kv_bytes);
    const Seconds compute = Flops(flops) / (c.g.sustained_peak(Dtype::bf16) * top);
    // GQA decode reads at the measured decode-attention rate where the table has the GPU (the rate includes
    // the kernel's fixed cost; capped at the HBM bandwidth, see decode_attention_table.cc); MLA's latent
    // attention and GPUs without a table use the HBM rate at the memory table's efficiency.
    const Curve* rate = m.mla ? nullptr : decode_attention_rate(c.g.name, c.sm.precision.kv_bytes);
    if (rate) {
      const Seconds memory(bytes.v / std::min(rate->at(bytes.v), c.g.hbm_bw.v));
      t += std::max(c.g.eff.kernel_overhead + compute, memory);
    } else {
      const Seconds memory = bytes / (c.g.hbm_bw * memory_efficiency(c.g, bytes.v));
      t += c.g.eff.kernel_overhead + std::max(compute, memory);
    }
  }
  return t;
}

Seconds small_kernel_time(const Gpu& g) { return small_kernel_latency(g.name).value_or(g.eff.kernel_overhead); }

Seconds elementwise_time(const Gpu& g, Bytes bytes) {
  const double eff = g.eff.memory.empty() ? 1.0 : g.eff.memory.at(bytes.v);
  return bytes / (g.hbm_bw * eff);
}

Seconds step_collective_time(const KernelCtx& c, Collective coll, CommKind kind, Bytes bytes, int group) {
  if (group <= 1 || bytes.v <= 0) return Seconds(0);
  // A tensor-parallel all-reduce inside one node, or inside the NVLink domain that spans nodes (NVL72), runs
  // the engines' custom all-reduce kernel: its measured latency where allreduce_table.h has the GPU and group
  // size (messages up to 64 MiB).
  const int nvlink_gpus =
      std::max(c.sys.gpus_per_node, c.sys.tiers.empty() ? 0 : c.sys.tiers.front().domain_gpus);
  if (coll == Collective::all_reduce && kind == CommKind::tp && group <= nvlink_gpus &&
      bytes.v <= kAllReduceTableMaxBytes)
    if (const Curve* lat = tp_allreduce_latency(c.g.name, group)) return Seconds(lat->at(bytes.v));
  CommOp op{kind, coll, bytes, group, 1, 1, Window::exposed};
  return collective_time(c.sys, op);
}

}  // namespace shardplan::serving
