// The kernels of one serving step on one GPU, each timed on its own: a linear layer (dense, sparse or low-rank),
// the routed experts of an MoE layer, one layer's attention, a small elementwise kernel and a collective. Decode
// is memory-bound: each GEMM reads its whole weight matrix for a handful of rows, and decode attention reads the
// sequences' K/V; prefill is compute-bound. The GEMMs run through the same formula as training (gemm_model.h)
// with the weight bytes of the storage format, or at the measured rates of the kernel tables
// (decode_gemm_table.h, prefill_gemm_table.h, moe_table.h, decode_attention_table.h, allreduce_table.h) where
// they have the GPU. step_time.h adds them up into a step.
#pragma once

#include <optional>
#include <vector>

#include "modeler/collectives.h"
#include "modeler/serving/serving_model.h"
#include "modeler/system.h"

namespace shardplan::serving {

/// The work of one step on one attention-DP rank.
struct StepLoad {
  double decode_seqs = 0;     // sequences generating one token
  double decode_ctx = 0;      // mean tokens in their KV cache
  /// Tokens each decoding sequence runs this step: 1, or k + 1 when a speculative step verifies k draft tokens
  /// (speculative.h): every GEMM gets decode_seqs x this many rows, and attention runs this many queries per
  /// sequence over the one K/V read.
  double decode_tokens_per_seq = 1;
  double prefill_tokens = 0;  // prompt tokens in this step
  double prefill_keys = 0;    // mean keys a prompt token attends to (prefix + half the chunk, causal)
  double prefill_seqs = 0;    // prompts whose last chunk is in this step (they sample a first token)
};

/// What every kernel time needs: the model, the machine, the worker's split and its GPU.
struct KernelCtx {
  const ServingModel& sm;
  const System& sys;
  const WorkerPlan& w;
  const Gpu& g;
};

/// Time to stream `weight_bytes` of weights (and `other_bytes` of activations) through one GEMM kernel of `rows`
/// rows: the measured decode-GEMM rate at that m where decode_gemm_table.h has the GPU, else HBM bandwidth x the
/// memory table.
Seconds weight_stream_time(const Gpu& gpu, Dtype math, double rows, Bytes weight_bytes, Bytes other_bytes);
/// The work a GGUF block format adds to one m x n x k matrix multiplication in llama.cpp (0 for other formats):
/// on an Apple GPU (Metal) the mul_mv kernels' int-to-float conversion of every weight for each of up to 8 rows
/// at the GPU's conversion rate; on CUDA the kernel that quantises the activation to q8_1 first.
Seconds gguf_kernel_extra_time(const Gpu& gpu, WeightFormat format, double m, double n, double k);
/// Time of one m x n x k GEMM whose weight matrix is stored in `weight_bytes` (any format): the GEMM formula of
/// gemm_model.h with the weight bytes replaced by the format's; a sparse kernel divides the compute side by its
/// `compute_speedup` (transforms.h). With the weights' `format` given, a GEMM of at least kPrefillGemmMinRows
/// rows computes at the measured rate of prefill_gemm_table.h where it has the GPU and format (the engines'
/// kernels as AIConfigurator timed them) instead of the profile's GEMM curve.
Seconds weight_gemm_time(const Gpu& gpu, Dtype math, double m, double n, double k, Bytes weight_bytes,
                         double compute_speedup = 1.0, std::optional<WeightFormat> format = std::nullopt);

/// One linear layer of a block over `tokens` rows on this rank (its tensor-parallel share; a low-rank layer as
/// its two GEMMs).
Seconds linear_time(const KernelCtx& c, const LinearSpec& s, double tokens);
/// The routed experts of one MoE layer for `pairs` token-expert pairs of the whole MoE group, on one EP rank.
Seconds moe_layer_time(const KernelCtx& c, const std::vector<LinearSpec>& experts, double pairs);
/// One layer's attention on one rank: the prefill tokens' causal attention and the decode sequences' K/V reads
/// (each sequence's cache read once for its decode_tokens_per_seq queries).
Seconds attention_time(const KernelCtx& c, const LayerClass& cls, const StepLoad& l);
/// A small kernel's fixed cost: the measured floor of a kernel in a CUDA-graph replay where decode_gemm_table.h
/// has the GPU, else the profile's kernel overhead.
Seconds small_kernel_time(const Gpu& g);
/// The bytes of elementwise passes at the HBM rate (their kernels' fixed costs are charged separately).
Seconds elementwise_time(const Gpu& g, Bytes bytes);
/// One collective of the step over `group` ranks: a tensor-parallel all-reduce inside a node at the engines'
/// measured custom all-reduce latency (allreduce_table.h), anything else by the collective model.
Seconds step_collective_time(const KernelCtx& c, Collective coll, CommKind kind, Bytes bytes, int group);

}  // namespace shardplan::serving
