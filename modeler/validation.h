// Validation against published, measured runs: a run's plan may leave fields unknown (null in the
// published-runs file); those take the fastest setting that fits, as the run's authors would have tuned them.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "modeler/estimate.h"
#include "modeler/framework.h"
#include "modeler/model_desc.h"
#include "modeler/system.h"

namespace shardplan {

/// A plan with some fields unknown.
struct OpenPlan {
  Plan plan;  // known fields; unknown ones are placeholders
  std::optional<int> micro_batch;
  std::optional<bool> sequence_parallel;
  std::optional<Recompute> recompute;
};

struct Resolution {
  Estimate estimate;
  std::vector<std::string> chosen;  // "mbs=2", "sp=on", "recompute=selective" for each unknown field
  int candidates = 0;               // plans evaluated
  bool fits = true;                 // false when no candidate fits (the fastest is reported anyway)
};

/// Evaluates every completion of the unknown fields (micro-batch: divisors of gbs/dp up to 16; sequence
/// parallelism on/off when tp > 1; recompute none/selective/full) and returns the fastest that fits, the rule of
/// design.md's published-runs contract. Settings the published-runs schema has no field for (TP and MoE all-to-all
/// overlap) keep the software's default: off. With `framework_defaults`, an unknown field the framework sets itself
/// when its user does not takes that default instead (torchtitan's pipeline micro-batch, gbs / dp / pp).
Resolution fastest_fitting(const ModelDesc& model, const System& system, const OpenPlan& open, const Framework& fw,
                           bool framework_defaults = false);

/// Mean absolute percentage error of predicted vs measured pairs, in percent.
double mape(const std::vector<double>& predicted, const std::vector<double>& measured);

}  // namespace shardplan
