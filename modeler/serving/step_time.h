// Time of one engine step on one worker: a forward pass of every token the scheduler batched (prompt chunks and
// one new token per decoding sequence) through all layers. Decode is memory-bound: each GEMM reads its whole
// weight matrix for a handful of rows, and decode attention reads the sequences' K/V; prefill is compute-bound.
// Both run through the same GEMM formula as training (gemm_model.h) with the weight bytes of the storage format.
#pragma once

#include <optional>

#include <vector>

#include "modeler/model_desc.h"
#include "modeler/serving/serving_types.h"
#include "modeler/serving/tensors.h"
#include "modeler/system.h"

namespace shardplan::serving {

/// One linear layer of a block, averaged over the blocks of its class (GGUF mixes vary the format by layer).
struct LinearSpec {
  double n = 0, k = 0;   // per token, one expert
  Bytes bytes;           // all experts
  int experts = 0;
  TpSplit split = TpSplit::none;
  bool kv = false;
  bool router = false;
  WeightFormat format = WeightFormat::bf16;
  LinearTransform xf;   // sparsity / low rank (transforms.h)
};

/// Blocks with the same shape: dense or MoE MLP, sliding-window or full attention.
struct LayerClass {
  int count = 0;
  bool moe = false, sliding = false;
  std::vector<LinearSpec> linears;  // attention projections, dense or shared-expert MLP, router
  std::vector<LinearSpec> experts;  // routed-expert projections (up, down)
  Bytes norm_bytes;
};

/// The model prepared for repeated step evaluations (built once per model and precision).
struct ServingModel {
  ModelDesc model;
  Precision precision;
  std::vector<WeightTensor> tensors;
  std::vector<LayerClass> classes;
  LinearSpec lm_head;   // the output projection (the embedding table when tied)
  Bytes embedding_bytes;
};
ServingModel make_serving_model(const ModelDesc& m, const Precision& p);
/// The same with model transforms applied to its tensors (transforms.h); throws ConfigError for a combination
/// no kernel runs.
ServingModel make_serving_model(const ModelDesc& m, const Precision& p, const std::vector<Transform>& transforms);

/// The work of one step on one attention-DP rank.
struct StepLoad {
  double decode_seqs = 0;     // sequences generating one token
  double decode_ctx = 0;      // mean tokens in their KV cache
  double prefill_tokens = 0;  // prompt tokens in this step
  double prefill_keys = 0;    // mean keys a prompt token attends to (prefix + half the chunk, causal)
  double prefill_seqs = 0;    // prompts whose last chunk is in this step (they sample a first token)
};

struct StepTime {
  Seconds total;
  Seconds linear, attention, moe, comm, other;  // parts; they add up to total
};

/// One step through all pp stages of the worker (the latency of one token of every sequence of the load).
StepTime step_time(const ServingModel& sm, const System& sys, const WorkerPlan& w, const StepLoad& load);

/// Time to stream `weight_bytes` of weights (and `other_bytes` of activations) through one GEMM kernel: the
/// measured decode-GEMM rate where decode_gemm_table.h has the GPU, else HBM bandwidth x the memory table.
Seconds weight_stream_time(const Gpu& gpu, Dtype math, Bytes weight_bytes, Bytes other_bytes);
/// Time of one m x n x k GEMM whose weight matrix is stored in `weight_bytes` (any format): the GEMM formula of
/// gemm_model.h with the weight bytes replaced by the format's; a sparse kernel divides the compute side by its
/// `compute_speedup` (transforms.h). With the weights' `format` given, a GEMM of at least kPrefillGemmMinRows
/// rows computes at the measured rate of prefill_gemm_table.h where it has the GPU and format (the engines'
/// kernels as AIConfigurator timed them) instead of the profile's GEMM curve. Exposed for tests.
Seconds weight_gemm_time(const Gpu& gpu, Dtype math, double m, double n, double k, Bytes weight_bytes,
                         double compute_speedup = 1.0, std::optional<WeightFormat> format = std::nullopt);

}  // namespace shardplan::serving
