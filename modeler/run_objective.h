// Which plan a team picks depends on what it pays for: the fastest step, the shortest or cheapest or least
// energy-hungry run of T tokens, or the fewest GPUs, under a cap on GPUs or money. The search finds the fastest
// plan per GPU count (for one count and one batch, the fastest step is also the shortest, cheapest and
// lowest-energy run: every run figure grows with step time); these pick among the counts.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "modeler/run_cost.h"

namespace shardplan {

enum class RunObjective { step, time, cost, energy, gpus };
inline constexpr const char* kRunObjectiveNames[] = {"step", "time", "cost", "energy", "gpus"};
const char* to_string(RunObjective o);
/// nullopt for an unknown name.
std::optional<RunObjective> parse_run_objective(const std::string& name);
/// Whether the objective needs a run (--train-tokens or --steps) to be ranked.
bool needs_run(RunObjective o);

/// One GPU count's best plan.
struct RunCandidate {
  int gpus = 0;
  double step_s = 0;
  RunCost run;  // meaningful when a run was given
};

struct ObjectiveCaps {
  int max_gpus = 0;     // 0: no cap
  double max_cost = 0;  // 0: no cap (currency of --gpu-hour-price)
};

/// Index of the best candidate by `objective` among those within the caps; ties go to the faster step, then the
/// fewer GPUs. nullopt when none is within the caps.
std::optional<size_t> choose_run(const std::vector<RunCandidate>& candidates, RunObjective objective,
                                 const ObjectiveCaps& caps);

}  // namespace shardplan
