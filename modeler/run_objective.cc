#include "modeler/run_objective.h"

#include <tuple>

namespace shardplan {

const char* to_string(RunObjective o) { return kRunObjectiveNames[static_cast<int>(o)]; }

std::optional<RunObjective> parse_run_objective(const std::string& name) {
  for (int i = 0; i < 5; ++i)
    if (name == kRunObjectiveNames[i]) return static_cast<RunObjective>(i);
  return std::nullopt;
}

bool needs_run(RunObjective o) {
  return o == RunObjective::time || o == RunObjective::cost || o == RunObjective::energy;
}

namespace {

double score(const RunCandidate& c, RunObjective o) {
  switch (o) {
    case RunObjective::step: return c.step_s;
    case RunObjective::time: return c.run.wall.v;
    case RunObjective::cost: return c.run.gpu_hours;  // price per GPU-hour is one number: cost follows GPU-hours
    case RunObjective::energy: return c.run.facility_energy_kwh;
    case RunObjective::gpus: return c.gpus;
  }
  return 0;
}

}  // namespace

std::optional<size_t> choose_run(const std::vector<RunCandidate>& candidates, RunObjective objective,
                                 const ObjectiveCaps& caps) {
  std::optional<size_t> best;
  auto key = [&](const RunCandidate& c) { return std::make_tuple(score(c, objective), c.step_s, c.gpus); };
  for (size_t i = 0; i < candidates.size(); ++i) {
    const RunCandidate& c = candidates[i];
    if (caps.max_gpus > 0 && c.gpus > caps.max_gpus) continue;
    if (caps.max_cost > 0 && c.run.cost > caps.max_cost) continue;
    if (!best || key(c) < key(candidates[*best])) best = i;
  }
  return best;
}

}  // namespace shardplan
