#include "modeler/serving/step_time.h"

#include <algorithm>
#include <cmath>
#include <map>

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

LinearSpec average(const std::vector<const WeightTensor*>& ts) {
  LinearSpec s;
  const WeightTensor& t0 = *ts.front();
  s.n = t0.n;
  s.k = t0.k;
  s.experts = t0.experts;
  s.split = t0.split;
  s.kv = t0.kv;
  s.router = t0.role == TensorRole::router;
  s.format = t0.format;
  s.xf = t0.xf;
  double b = 0;
  for (const auto* t : ts) b += t->bytes.v;
  s.bytes = Bytes(b / static_cast<double>(ts.size()));
  return s;
}

// The attention-fwd table the engines' kernels are closest to: FlashAttention-3 / TRT-LLM FMHA where the profile
// has a Hopper-generation table, else FlashAttention-2.
const Curve& attention_curve(const Gpu& g) {
  const Curve& f3 = g.eff.attention_fwd[static_cast<int>(AttentionKernel::flash3)];
  return f3.empty() ? g.eff.attention_fwd[static_cast<int>(AttentionKernel::flash2)] : f3;
}

}  // namespace

ServingModel make_serving_model(const ModelDesc& m, const Precision& p) { return make_serving_model(m, p, {}); }

ServingModel make_serving_model(const ModelDesc& m, const Precision& p, const std::vector<Transform>& transforms) {
  ServingModel sm;
  sm.model = m;
  sm.precision = p;
  sm.tensors = model_tensors(m, p);
  apply_transforms(&sm.tensors, transforms);
  // Group the block tensors by (class, name stem) and average their bytes over the class's layers.
  std::map<std::pair<int, std::string>, std::vector<const WeightTensor*>> groups;
  std::map<int, int> class_count;
  auto class_of = [&](int layer) { return (is_moe_layer(m, layer) ? 2 : 0) + (is_sliding_layer(m, layer) ? 1 : 0); };
  for (int i = 0; i < m.layers; ++i) ++class_count[class_of(i)];
  for (const auto& t : sm.tensors) {
    if (t.role == TensorRole::token_embd) {
      sm.embedding_bytes = t.bytes;
      continue;
    }
    if (t.role == TensorRole::output) {
      sm.lm_head = average({&t});
      continue;
    }
    const std::string stem = t.name.substr(t.name.find('.', 4) + 1);
    groups[{class_of(t.layer), stem}].push_back(&t);
  }
  if (m.tied_embeddings) {
    for (const auto& t : sm.tensors)
      if (t.role == TensorRole::token_embd) {
        sm.lm_head = average({&t});
        sm.lm_head.n = m.vocab;
        sm.lm_head.k = m.hidden;
      }
  }
  for (const auto& [cls, count] : class_count) {
    LayerClass c;
    c.count = count;
    c.moe = cls >= 2;
    c.sliding = cls % 2 == 1;
    for (const auto& [key, ts] : groups) {
      if (key.first != cls) continue;
      if (key.second == "norms") {
        c.norm_bytes = average(ts).bytes;
        continue;
      }
      LinearSpec s = average(ts);
      (s.experts > 0 ? c.experts : c.linears).push_back(s);
    }
    sm.classes.push_back(std::move(c));
  }
  return sm;
}

Seconds weight_stream_time(const Gpu& gpu, Dtype math, Bytes weight_bytes, Bytes other_bytes) {
  // Measured decode-GEMM rate where the table has the GPU (it includes the kernel's fixed cost), capped at the
  // HBM bandwidth (the table's small sizes on large-L2 parts read from cache); else the HBM rate at the memory
  // table's efficiency plus the kernel overhead.
  if (const Curve* rate = decode_gemm_rate(gpu.name, math)) {
    const double r = std::min(rate->at(weight_bytes.v), gpu.hbm_bw.v);
    return Seconds(weight_bytes.v / r) + other_bytes / (gpu.hbm_bw * memory_efficiency(gpu, other_bytes.v));
  }
  const Bytes bytes = weight_bytes + other_bytes;
  return gpu.eff.kernel_overhead + bytes / (gpu.hbm_bw * memory_efficiency(gpu, bytes.v));
}

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

Seconds weight_gemm_time(const Gpu& gpu, Dtype math, double m, double n, double k, Bytes weight_bytes,
                         double compute_speedup, std::optional<WeightFormat> format) {
  if (m <= 0) return Seconds(0);
  const double flops = 2.0 * m * n * k;
  const Seconds memory = weight_stream_time(gpu, math, weight_bytes, Bytes(m * k * act_bytes(math) + m * n * 2.0));
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

struct Ctx {
  const ServingModel& sm;
  const System& sys;
  const WorkerPlan& w;
  const Gpu& g;
};

// Local widths of a linear under tensor parallelism; K/V heads are replicated when tp exceeds them.
void local_dims(const Ctx& c, const LinearSpec& s, double* n, double* k, double* share) {
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

Seconds linear_time(const Ctx& c, const LinearSpec& s, double tokens) {
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

// Routed experts on one EP rank: `pairs` token-expert pairs of the whole MoE group spread uniformly over the
// experts; the rank runs its experts/moe_ep experts as one grouped GEMM per projection, reading the weights of
// every expert that received at least one token (expected count under uniform routing: E(1-(1-1/E)^pairs)).
struct ExpertWork {
  Seconds compute;     // the grouped GEMM's math at the GEMM table's efficiency
  Flops flops;         // that math on this rank
  Bytes weights;       // weights of the touched local experts
  Bytes activations;   // rows in and out
  Dtype math = Dtype::bf16;
};

ExpertWork expert_work(const Ctx& c, const LinearSpec& s, double pairs) {
  ExpertWork w;
  const double e = s.experts, ep = c.w.moe_ep, etp = c.w.moe_tp;
  const double local = e / ep;
  const double touched = local * (1.0 - std::pow(1.0 - 1.0 / e, pairs));
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
  w.activations = Bytes(local * m * (k * act_bytes(w.math) + n * 2.0));
  return w;
}

Seconds expert_time(const Ctx& c, const LinearSpec& s, double pairs) {
  const ExpertWork w = expert_work(c, s, pairs);
  const Seconds memory = weight_stream_time(c.g, w.math, w.weights, w.activations);
  return std::max(c.g.eff.kernel_overhead + w.compute, memory);
}

// The routed experts of one MoE layer. Where moe_table.h has the GPU and the experts' format, the layer streams
// its touched experts' weights at the measured MoE-layer rate (that latency includes routing, permutation and
// every kernel's fixed cost), bounded below by the grouped GEMMs' math; else one grouped GEMM per projection.
constexpr double kMoeTableMaxRowsPerExpert = 16;  // the derivation's filter (moe_table.cc)

Seconds moe_layer_time(const Ctx& c, const std::vector<LinearSpec>& experts, double pairs) {
  if (experts.empty() || pairs <= 0) return Seconds(0);
  const WeightFormat f = experts.front().format;
  const bool uniform =
      std::all_of(experts.begin(), experts.end(), [&](const LinearSpec& s) { return s.format == f; });
  // The byte-rate table was measured at <= 16 rows per expert; beyond that the layer runs at the measured
  // FLOP rate of moe_layer_flop_rate (more rows per expert), bounded below by streaming the touched experts at
  // the HBM bandwidth; GPUs and formats without measurements use the grouped GEMMs' own model.
  const bool measured_regime = pairs / experts.front().experts <= kMoeTableMaxRowsPerExpert;
  const Curve* rate = uniform && measured_regime ? moe_layer_rate(c.g, f) : nullptr;
  const Curve* flop_rate = uniform && !measured_regime ? moe_layer_flop_rate(c.g, f) : nullptr;
  if (!rate && !flop_rate) {
    Seconds t;
    for (const LinearSpec& s : experts) t += expert_time(c, s, pairs);
    return t;
  }
  Seconds compute;
  Flops flops;
  Bytes weights;
  for (const LinearSpec& s : experts) {
    const ExpertWork w = expert_work(c, s, pairs);
    compute += w.compute;
    flops += w.flops;
    weights += w.weights;
  }
  if (flop_rate) return std::max(Seconds(flops.v / flop_rate->at(flops.v)), weights / c.g.hbm_bw);
  // Capped at the HBM bandwidth: the table's small sizes on large-L2 parts read from cache (moe_table.cc).
  const Seconds memory(weights.v / std::min(rate->at(weights.v), c.g.hbm_bw.v));
  return std::max(c.g.eff.kernel_overhead * static_cast<double>(experts.size()) + compute, memory);
}

// Attention of one layer on one rank: prefill as a fused causal kernel at the attention table's efficiency;
// decode reads each sequence's K/V once (memory-bound for GQA, compute-heavy for MLA's 128 heads over a
// 576-wide latent), at the table's best efficiency for its FLOPs.
Seconds attention_time(const Ctx& c, const LayerClass& cls, const StepLoad& l) {
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
    const double flops = 2.0 * l.decode_seqs * keys * heads * (qk + v);
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

// The small kernels of a decode step besides the GEMMs, attention, MoE layer and all-reduces, which the measured
// tables already time with their fixed costs. Per block the three kernels every engine launches on its own: the
// residual add + RMSNorm before attention and before the MLP (one kernel each: vLLM's RMSNorm.forward_cuda calls
// ops.fused_add_rms_norm, vllm/model_executor/layers/layernorm.py, and SGLang's fused_add_rmsnorm,
// python/sglang/srt/layers/layernorm.py, read in the indexed snapshots, versions not pinned to the rows';
// TRT-LLM's RMSNorm at tp 1, fused into its all-reduce as RESIDUAL_RMS_NORM at tp > 1,
// tensorrt_llm/_torch/models/modeling_llama.py, whose fused kernel does the norm's work on top of the
// all-reduce the table times) and the gated activation (SiluAndMul / silu_and_mul / swiglu). RoPE and the KV
// write are inside the measured decode attention for TRT-LLM and separate kernels in vLLM and SGLang, and
// Qwen3's per-head q/k norms add one or two more: neither is counted (the model description does not say).
// Per step: the embedding gather, the final norm and the sampler.
constexpr double kSmallKernelsPerBlock = 3;
constexpr double kSmallKernelsPerStep = 3;

// A small kernel's fixed cost: the measured floor of a kernel in a CUDA-graph replay where decode_gemm_table.h
// has the GPU, else the profile's kernel overhead.
Seconds small_kernel_time(const Gpu& g) { return small_kernel_latency(g.name).value_or(g.eff.kernel_overhead); }

// The bytes of the elementwise passes at the HBM rate (their kernels' fixed costs are charged separately).
Seconds elementwise_time(const Gpu& g, Bytes bytes) {
  const double eff = g.eff.memory.empty() ? 1.0 : g.eff.memory.at(bytes.v);
  return bytes / (g.hbm_bw * eff);
}

Seconds comm(const Ctx& c, Collective coll, CommKind kind, Bytes bytes, int group) {
  if (group <= 1 || bytes.v <= 0) return Seconds(0);
  // A tensor-parallel all-reduce inside one node runs the engines' custom all-reduce kernel: its measured
  // latency where allreduce_table.h has the GPU and group size (messages up to 64 MiB).
  if (coll == Collective::all_reduce && kind == CommKind::tp && group <= c.sys.gpus_per_node &&
      bytes.v <= kAllReduceTableMaxBytes)
    if (const Curve* lat = tp_allreduce_latency(c.g.name, group)) return Seconds(lat->at(bytes.v));
  CommOp op{kind, coll, bytes, group, 1, 1, Window::exposed};
  return collective_time(c.sys, op);
}

}  // namespace

StepTime step_time(const ServingModel& sm, const System& sys, const WorkerPlan& w, const StepLoad& l) {
  const Ctx c{sm, sys, w, sys.gpu};
  const ModelDesc& m = sm.model;
  const double tokens = l.decode_seqs + l.prefill_tokens;
  StepTime st;
  if (tokens <= 0) return st;
  const double h = m.hidden;
  const Bytes act(tokens * h * 2.0);
  // Per block: input norm, residual adds, activation function, RoPE: about six passes over the hidden state.
  const Bytes elementwise = act * 6.0;
  // Those passes run as kSmallKernelsPerBlock kernels, each at least a small kernel's fixed cost.
  const Seconds kernel = small_kernel_time(c.g);
  const int group = w.tp * w.attention_dp;
  for (const LayerClass& cls : sm.classes) {
    Seconds lin, moe, cm, other;
    for (const LinearSpec& s : cls.linears) {
      if (s.router) {
        moe += linear_time(c, s, tokens);  // router
        continue;
      }
      lin += linear_time(c, s, tokens);
    }
    if (cls.moe) {
      const double pairs = tokens * w.attention_dp * m.moe->top_k;
      moe += moe_layer_time(c, cls.experts, pairs);
      if (w.attention_dp > 1) {
        // Dispatch and combine: each rank sends its tokens' top-k rows to the experts' ranks and back.
        const Bytes a2a(tokens * m.moe->top_k * h * 2.0);
        cm += comm(c, Collective::all_to_all, CommKind::ep, a2a, group) * 2.0;
      } else {
        cm += comm(c, Collective::all_reduce, CommKind::tp, act, w.tp);
      }
    } else {
      cm += comm(c, Collective::all_reduce, CommKind::tp, act, w.tp);
    }
    cm += comm(c, Collective::all_reduce, CommKind::tp, act, w.tp);  // after attention
    other = kernel * kSmallKernelsPerBlock + elementwise_time(c.g, elementwise + cls.norm_bytes);
    const Seconds attn = attention_time(c, cls, l);
    st.linear += lin * cls.count;
    st.moe += moe * cls.count;
    st.comm += cm * cls.count;
    st.other += other * cls.count;
    st.attention += attn * cls.count;
  }
  // LM head for the sequences that sample a token; pipeline hand-offs between stages; the step's own small
  // kernels (embedding gather, final norm, sampling).
  st.linear += linear_time(c, sm.lm_head, l.decode_seqs + l.prefill_seqs);
  st.other += kernel * kSmallKernelsPerStep;
  if (w.pp > 1) {
    CommOp op{CommKind::pp, Collective::send_recv, act, 2, w.tp * w.attention_dp, 1, Window::exposed};
    st.comm += collective_time(sys, op) * (w.pp - 1.0);
  }
  st.total = st.linear + st.moe + st.comm + st.other + st.attention;
  return st;
}

}  // namespace shardplan::serving
