#include "modeler/run_objective.h"

#include <doctest/doctest.h>

using namespace shardplan;

namespace {
RunCandidate cand(int gpus, double step_s, double wall_s, double cost, double kwh) {
  RunCandidate c;
  c.gpus = gpus;
  c.step_s = step_s;
  c.run.wall = Seconds(wall_s);
  c.run.gpu_hours = gpus * wall_s / 3600;
  c.run.cost = cost;
  c.run.facility_energy_kwh = kwh;
  return c;
}
}  // namespace

TEST_SUITE("run_objective") {
TEST_CASE("names round-trip and unknown names are rejected") {
  for (const char* n : kRunObjectiveNames) CHECK(std::string(to_string(*parse_run_objective(n))) == n);
  CHECK_FALSE(parse_run_objective("cheapest"));
  CHECK(needs_run(RunObjective::cost));
  CHECK_FALSE(needs_run(RunObjective::gpus));
}

TEST_CASE("each objective picks its own GPU count") {
  // 64 GPUs: fastest; 16: cheapest in GPU-hours; 8: fewest.
  const std::vector<RunCandidate> c = {cand(8, 8.0, 8000, 0, 10), cand(16, 3.0, 3000, 0, 9),
                                       cand(64, 1.0, 1000, 0, 20)};
  CHECK(*choose_run(c, RunObjective::step, {}) == 2);
  CHECK(*choose_run(c, RunObjective::time, {}) == 2);
  CHECK(*choose_run(c, RunObjective::cost, {}) == 1);   // 16 x 3000 < 8 x 8000 < 64 x 1000
  CHECK(*choose_run(c, RunObjective::energy, {}) == 1);
  CHECK(*choose_run(c, RunObjective::gpus, {}) == 0);
}

TEST_CASE("caps: fastest under a GPU cap or a budget, none when nothing is within") {
  const std::vector<RunCandidate> c = {cand(8, 8.0, 8000, 100, 0), cand(16, 3.0, 3000, 150, 0),
                                       cand(64, 1.0, 1000, 400, 0)};
  CHECK(*choose_run(c, RunObjective::time, {32, 0}) == 1);
  CHECK(*choose_run(c, RunObjective::time, {0, 120}) == 0);
  CHECK_FALSE(choose_run(c, RunObjective::time, {4, 0}));
}

TEST_CASE("ties go to the faster step, then fewer GPUs") {
  const std::vector<RunCandidate> c = {cand(16, 2.0, 1000, 0, 5), cand(8, 2.0, 2000, 0, 5), cand(32, 1.0, 500, 0, 5)};
  CHECK(*choose_run(c, RunObjective::energy, {}) == 2);
}
}
