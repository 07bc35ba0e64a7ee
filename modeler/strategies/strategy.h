// The parallelism-strategy interface: one file per strategy plus one line in the registry (registry.cc).
// The memory and time models iterate over strategies and never switch on their names.
#pragma once

#include <vector>

#include "modeler/framework.h"
#include "modeler/model_desc.h"
#include "modeler/plan.h"
#include "modeler/problems.h"
#include "modeler/system.h"
#include "modeler/workload.h"

namespace shardplan {

struct Context {
  const ModelDesc& model;
  const System& system;
  const Plan& plan;
  const Framework& framework;
};

class Strategy {
 public:
  virtual ~Strategy() = default;
  virtual const char* name() const = 0;
  /// Appends every constraint this plan violates (divisibility, ranges), with actual values.
  virtual void validate(const Context& ctx, Problems* problems) const = 0;
  /// Divides the local layer shape and the model state held by each rank.
  virtual void shard(const Context& ctx, Sharding* sh) const = 0;
  /// Adds the strategy's collectives, per layer, per micro-batch and per step.
  virtual void add_comm(const Context& ctx, const Sharding& sh, CommPlan* comm) const = 0;
  /// Adjusts the micro-batch schedule (counts, bubble, in-flight activations).
  virtual void schedule(const Context& ctx, const Sharding& sh, Schedule* s) const = 0;
};

/// All strategies, in Megatron's rank order (tp or tsp innermost, then cp, ep folded into dp, pp); sdp after dp.
const std::vector<const Strategy*>& all_strategies();

/// Strategy singletons (one per file).
const Strategy& tensor_parallel();
const Strategy& context_parallel();
const Strategy& pipeline_parallel();
const Strategy& data_parallel();
const Strategy& expert_parallel();
const Strategy& folded_tensor_sequence_parallel();
const Strategy& subnetwork_data_parallel();

/// Gradient synchronisation of `params` parameters over a data-parallel group under the plan's ZeRO stage (the
/// data-parallel strategy's schedule, shared with the expert-data-parallel group of routed experts). Under ZeRO-3
/// the `layer_params` part is gathered and reduced per layer (one FSDP unit per layer of `layers`), the rest once
/// per micro-batch.
void add_gradient_sync(const Context& ctx, double params, double layer_params, double layers, int group, int stride,
                       CommPlan* comm);

}  // namespace shardplan
