// The modeler's one entry point: a pure function of model, system, plan and framework.
// Order (Calculon's): validate -> shard -> per-layer work -> per-micro-batch costs -> per-step aggregation ->
// capacity check -> invariants.
#pragma once

#include "modeler/estimate.h"
#include "modeler/framework.h"
#include "modeler/model_desc.h"
#include "modeler/plan.h"
#include "modeler/strategies/strategy.h"
#include "modeler/system.h"

namespace shardplan {

/// Evaluates one plan. Invalid plans come back with `problems` set and no time; plans that do not fit come back
/// fully evaluated with an "oom" problem naming the largest memory item.
Estimate evaluate(const ModelDesc& model, const System& system, const Plan& plan, const Framework& framework);

/// A layer's shape before any strategy shards it: the micro-batch's tokens, all heads, the whole MLP and vocabulary.
Sharding unsharded(const Context& ctx);

/// Checks only the constraints (cheap): the first pass of the search.
Problems validate_plan(const ModelDesc& model, const System& system, const Plan& plan, const Framework& framework);

/// Physical sanity of an estimate (every part >= 0, parts add up, tp == 1 means no tp communication, ...).
void check_invariants(const Estimate& e);

}  // namespace shardplan
