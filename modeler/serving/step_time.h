// Time of one engine step on one worker: a forward pass of every token the scheduler batched (prompt chunks and
// one new token per decoding sequence) through all layers, as the sum of its kernels (layer_kernels.h) per block
// class, the LM head, the pipeline hand-offs, the engine's small kernels and its per-step host time
// (engine_step.h, carried by the ServingModel).
#pragma once

#include "modeler/serving/layer_kernels.h"
#include "modeler/serving/serving_model.h"
#include "modeler/system.h"

namespace shardplan::serving {

struct StepTime {
  Seconds total;
  Seconds linear, attention, moe, comm, other, host;  // parts; they add up to total
};

/// One step through all pp stages of the worker (the latency of one token of every sequence of the load).
StepTime step_time(const ServingModel& sm, const System& sys, const WorkerPlan& w, const StepLoad& load);

}  // namespace shardplan::serving
