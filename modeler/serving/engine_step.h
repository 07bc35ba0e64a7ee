// What a serving engine adds to a step beyond the kernels every engine runs: the small kernels of a block its
// source launches outside the measured GEMM, attention, MoE and all-reduce ops, and the host time per step the
// GPU waits for. Each trait names the engine file it was read from and the version where the behaviour changed.
#pragma once

#include <string>

#include "modeler/model_desc.h"
#include "modeler/serving/serving_types.h"
#include "modeler/units.h"

namespace shardplan::serving {

/// The residual-add RMSNorm before attention and before the MLP, and the gated activation: the three small
/// kernels per block every engine launches (step_time.cc says where each engine does it).
constexpr double kCommonSmallKernelsPerBlock = 3;
/// Per step: the embedding gather, the final norm and the sampler.
constexpr double kCommonSmallKernelsPerStep = 3;

struct EngineStep {
  double small_kernels_per_block = kCommonSmallKernelsPerBlock;
  double small_kernels_per_step = kCommonSmallKernelsPerStep;
  /// Host time per step that does not overlap the GPU (a scheduler that runs between steps); zero where the
  /// engine overlaps it or no measured figure is at hand.
  Seconds host_per_step;
  /// Whether the scheduler prepares step n+1 while step n runs on the GPU (TRT-LLM's and SGLang's overlap
  /// schedulers, vLLM's async scheduling). Where it does not, the host's scheduling sits between steps; its
  /// time is host_per_step where a measured figure exists.
  bool overlaps_scheduler = true;
  std::string source;  // where the traits were read
};

/// The traits of `engine` at `version` (as the engine spells its releases; "" for the current release) for model
/// `m`: RoPE kernels only where it uses rotary positions; nothing for multi-head latent attention, whose RoPE and
/// cache write run inside the engines' MLA kernels or their own fused ops (not counted here); QK-norm's kernels
/// where the model has it (engine_step.cc qk_norm_kernels).
EngineStep engine_step(Engine engine, const std::string& version, const ModelDesc& m);

}  // namespace shardplan::serving
