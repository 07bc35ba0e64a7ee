// The weight tensors of a model as an inference engine stores them (llama.cpp's GGUF names), with the bytes their
// format gives each one. Offload places these tensors one by one; the step-time model reads their sums per layer.
#pragma once

#include <string>
#include <vector>

#include "modeler/model_desc.h"
#include "modeler/serving/serving_types.h"
#include "modeler/serving/transforms.h"

namespace shardplan::serving {

/// How tensor parallelism splits a matrix: by output columns (QKV, gate/up), by input rows (output projection,
/// down), or not at all (MLA's down-projections, the router, norms).
enum class TpSplit { column, row, none };

/// One weight tensor (for routed experts: all experts of one projection in one layer, as GGUF stacks them).
struct WeightTensor {
  std::string name;      // GGUF name: token_embd, output, blk.N.attn_q, blk.N.ffn_up_exps, ...
  int layer = -1;        // -1: token embedding; layers: output (the LM head); else the block index
  TensorRole role = TensorRole::other;
  double n = 0, k = 0;   // the GEMM's output and input widths per token (one expert for routed experts)
  int experts = 0;       // routed experts stacked in this tensor (0: not a routed-expert tensor)
  bool shared_expert = false;
  TpSplit split = TpSplit::none;
  bool kv = false;       // the K/V projection (replicated when tp exceeds the KV heads)
  double params = 0;     // elements (all experts)
  Bytes bytes;           // stored size in its format
  WeightFormat format = WeightFormat::bf16;
  LinearTransform xf;    // sparsity / low rank (transforms.h); bytes already include it
};

/// Every weight tensor of `m` in the given formats, token embedding first and output last. Norms and biases of a
/// block are one `blk.N.norms` tensor (f32 in GGUF, the weights' format elsewhere).
std::vector<WeightTensor> model_tensors(const ModelDesc& m, const Precision& p);

/// Sum of the tensors' bytes.
Bytes total_bytes(const std::vector<WeightTensor>& tensors);

}  // namespace shardplan::serving
