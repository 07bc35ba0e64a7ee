// Model transforms that change the memory and time of the weight tensors they touch: 2:4 structured sparsity,
// block sparsity, low-rank factorisation and weight quantization (../shared/techniques.md section 8).
//
// A transform rewrites the storage (bytes) and the work (FLOPs, and the kernel that runs it) of the linear layers
// it targets and nothing else. The cost of a tensor is a function of its final state (format, sparsity, rank), so
// the order of the transforms never changes the cost: "sparsify then quantize" and "quantize then sparsify" give
// the same bytes and time. Their accuracy differs (Harma et al., arXiv 2405.20935: the errors compound and the
// order matters); shardplan does not model accuracy at all.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "modeler/problems.h"
#include "modeler/serving/formats.h"
#include "modeler/system.h"
#include "modeler/units.h"

namespace shardplan::serving {

struct WeightTensor;

enum class Sparsity { dense, two_four, block };

/// The transformed state of one linear's weight (defaults: dense, full rank).
struct LinearTransform {
  Sparsity sparsity = Sparsity::dense;
  double density = 1.0;  // kept fraction of the weights (2:4: 0.5)
  int block = 0;         // block sparsity: square block edge in elements
  int rank = 0;          // low-rank: W (n x k) = A (n x r) B (r x k); 0: not factorised
};

/// Which linears a transform touches: attention projections, dense and shared-expert MLPs, routed experts.
/// The embedding table, the LM head, the router and the norms are never transformed.
enum TargetBits : int { kTargetAttn = 1, kTargetMlp = 2, kTargetExperts = 4 };

struct Transform {
  enum class Kind { sparsify, low_rank, quantize };
  Kind kind = Kind::sparsify;
  int targets = kTargetAttn | kTargetMlp | kTargetExperts;
  Sparsity sparsity = Sparsity::two_four;  // sparsify
  double density = 0.5;                    // sparsify (block)
  int block = 0;                           // sparsify (block)
  int rank = 0;                            // low_rank
  WeightFormat format = WeightFormat::bf16;  // quantize
};

/// Parses `2:4[:targets]` or `block:DENSITY:BLOCK[:targets]` (targets: comma list of attn, mlp, experts, all;
/// default all). Throws ConfigError naming `flag` and the violated constraint.
Transform parse_sparsity(const std::string& flag, const std::string& spec);
/// Parses `RANK[:targets]` (default targets attn,mlp: low-rank routed experts are not modelled).
Transform parse_low_rank(const std::string& flag, const std::string& spec);

/// Applies the transforms in order to every targeted tensor and recomputes its bytes from its final state.
/// Throws ConfigError for a combination no kernel runs (2:4 or block sparsity on a GGUF or weight-only integer
/// format, two sparsities on one tensor, a rank that does not shrink the layer, low-rank routed experts).
void apply_transforms(std::vector<WeightTensor>* tensors, const std::vector<Transform>& transforms);

/// Stored bytes of a tensor of `params` dense elements (n x k x experts) in format `f` under `x`.
/// 2:4: the kept half plus 2 bits of position metadata per kept element (NVIDIA Sparse Tensor Cores; Mishra et
/// al., "Accelerating Sparse Deep Neural Networks", arXiv 2104.08378, Sec. 3). Block (BSR): kept blocks plus one
/// 4-byte column index per kept block (techniques.md 8: delta*m*n*B_q + delta*m*n/beta^2*B_idx). Low-rank:
/// r*(n+k) elements per expert.
Bytes transformed_bytes(double n, double k, int experts, WeightFormat f, const LinearTransform& x);

/// Per-rank bytes of a low-rank linear split `div` ways by tensor parallelism. A column-parallel W = A B keeps
/// B (r x k) whole on every rank and splits A's rows; a row-parallel one splits B's columns and keeps A whole
/// (its partial outputs are summed by the all-reduce the row-parallel layer already does). `column`: the split.
Bytes low_rank_rank_bytes(double n, double k, const LinearTransform& x, Bytes bytes, bool column, double div);

/// Compute speedup of a sparse GEMM over the dense GEMM of the same (m, n, k) on its compute-bound side, from
/// the sparse-kernel table (transforms.cc): 1 for dense. The memory-bound side needs no factor: it reads the
/// compressed bytes.
double sparse_compute_speedup(const LinearTransform& x, double m, double n, double k);

/// Problems running the transformed tensors on `gpu`: 2:4 needs Sparse Tensor Cores (they arrived with the bf16
/// tensor cores, NVIDIA A100 whitepaper), and the sparse kernels take 16-bit or fp8 math only.
Problems check_transform_kernels(const std::vector<WeightTensor>& tensors, const Gpu& gpu);

/// "2:4", "block 0.10 x 32", "rank 512", "" for dense: for reports.
std::string transform_label(const LinearTransform& x);

}  // namespace shardplan::serving
