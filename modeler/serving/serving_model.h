// The model as a serving step sees it: the weight tensors grouped into classes of identical blocks (dense or MoE
// MLP, sliding-window or full attention), each linear layer averaged over its class, plus the LM head and the
// embedding table. Built once per model and precision; step_time.h evaluates steps on it.
#pragma once

#include <vector>

#include "modeler/model_desc.h"
#include "modeler/serving/engine_step.h"
#include "modeler/serving/serving_types.h"
#include "modeler/serving/tensors.h"

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
  /// The serving engine's per-step host cost and per-block kernel list (engine_step.h); the default is an
  /// engine-neutral step (no host cost, the kernels every engine launches).
  EngineStep engine;
};
ServingModel make_serving_model(const ModelDesc& m, const Precision& p);
/// The same with model transforms applied to its tensors (transforms.h); throws ConfigError for a combination
/// no kernel runs.
ServingModel make_serving_model(const ModelDesc& m, const Precision& p, const std::vector<Transform>& transforms);

}  // namespace shardplan::serving
