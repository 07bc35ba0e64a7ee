#include "modeler/serving/serve_objective.h"

#include <doctest/doctest.h>

#include <cmath>

using namespace shardplan::serving;

TEST_CASE("serve objectives parse by name and print back") {
  for (const char* n : kServeObjectiveNames) CHECK(std::string(to_string(*parse_serve_objective(n))) == n);
  CHECK(parse_serve_objective("per-gpu") == ServeObjective::per_gpu);
  CHECK_FALSE(parse_serve_objective("cost").has_value());
  CHECK_FALSE(parse_serve_objective("").has_value());
}

TEST_CASE("cost per million output tokens is price x 1e6 / (3600 x rate)") {
  // 2.00 per GPU-hour at 1000 tokens/s per GPU: 3.6 M tokens per GPU-hour, 2 / 3.6 = 0.5556 per M tokens.
  CHECK(cost_per_mtok(2.0, 1000) == doctest::Approx(0.555556).epsilon(1e-5));
  // Twice the rate halves the cost; twice the price doubles it.
  CHECK(cost_per_mtok(2.0, 2000) == doctest::Approx(cost_per_mtok(2.0, 1000) / 2));
  CHECK(cost_per_mtok(4.0, 1000) == doctest::Approx(cost_per_mtok(2.0, 1000) * 2));
  CHECK(std::isinf(cost_per_mtok(2.0, 0)));
}

TEST_CASE("per-dollar ranks the cheaper tokens first, per-gpu the faster GPU, throughput the budget's total") {
  // A slower GPU at a lower price: 1000 tok/s/GPU at 1.0 makes tokens cheaper than 1800 at 2.5.
  const PlanRate slow_cheap{1000, 8, 1.0}, fast_dear{1800, 8, 2.5};
  CHECK(objective_score(ServeObjective::per_gpu, fast_dear) > objective_score(ServeObjective::per_gpu, slow_cheap));
  CHECK(objective_score(ServeObjective::per_dollar, slow_cheap) >
        objective_score(ServeObjective::per_dollar, fast_dear));
  // The per-dollar score is the inverse of $/Mtok (tokens per unit of money = 1e6 / cost_per_mtok).
  CHECK(objective_score(ServeObjective::per_dollar, slow_cheap) == doctest::Approx(1e6 / cost_per_mtok(1.0, 1000)));
  CHECK(objective_score(ServeObjective::throughput, fast_dear) == doctest::Approx(1800 * 8));
  // No price: per-dollar ranks it last.
  CHECK(objective_score(ServeObjective::per_dollar, {1000, 8, 0}) == 0);
}
