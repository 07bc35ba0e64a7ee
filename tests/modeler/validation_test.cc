#include "modeler/validation.h"

#include <doctest/doctest.h>

#include <limits>

#include "modeler/evaluate.h"
#include "tests/modeler/test_fixtures.h"

using namespace shardplan;

namespace {
// The tiny model, 8 layers, on 8 synthetic GPUs at tp 2, dp 4, 32 sequences of 128 tokens.
test::Setup base() {
  ModelDesc m = test::tiny_model();
  m.layers = 8;
  return test::Setup(m, test::plan_of(2, 1, 4, 1, 1, 32, 128));
}

// Every completion fastest_fitting tries, evaluated here: micro-batches dividing 32 / 4 = 8, SP on/off, 3 recomputes.
std::vector<Estimate> completions(const test::Setup& su) {
  std::vector<Estimate> out;
  for (int mbs : {1, 2, 4, 8})
    for (bool sp : {true, false})
      for (Recompute r : {Recompute::none, Recompute::selective, Recompute::full}) {
        Plan p = su.plan;
        p.micro_batch = mbs;
        p.sequence_parallel = sp;
        p.recompute = r;
        out.push_back(evaluate(su.model, su.system, p, su.framework));
      }
  return out;
}

double fastest(const std::vector<Estimate>& es, double capacity) {
  double best = std::numeric_limits<double>::infinity();
  for (const Estimate& e : es)
    if (e.memory.total().v <= capacity) best = std::min(best, e.time.step().v);
  return best;
}
}  // namespace

TEST_SUITE("validation") {

TEST_CASE("mape in percent") {
  CHECK(mape({110, 90}, {100, 100}) == doctest::Approx(10.0));
  CHECK(mape({1}, {2}) == doctest::Approx(50.0));
  CHECK(mape({3, 3}, {3, 3}) == 0.0);
  CHECK(mape({}, {}) == 0.0);
}

TEST_CASE("every unknown field open: the fastest of all 24 completions, each choice reported") {
  const test::Setup su = base();
  const OpenPlan open{su.plan, std::nullopt, std::nullopt, std::nullopt};
  const Resolution r = fastest_fitting(su.model, su.system, open, su.framework);
  CHECK(r.candidates == 24);
  CHECK(r.fits);
  CHECK(r.estimate.feasible());
  CHECK(r.estimate.time.step().v == fastest(completions(su), 1e300));
  REQUIRE(r.chosen.size() == 3);
  const Plan& p = r.estimate.plan;
  CHECK(r.chosen[0] == "mbs=" + std::to_string(p.micro_batch));
  CHECK(r.chosen[1] == std::string("sp=") + (p.sequence_parallel ? "on" : "off"));
  CHECK(r.chosen[2] == std::string("recompute=") + to_string(p.recompute));
}

TEST_CASE("the fastest completion that fits wins over a faster one that does not") {
  test::Setup su = base();
  const std::vector<Estimate> all = completions(su);
  // Capacity just below the overall fastest completion's footprint.
  const Estimate* top = &all[0];
  for (const Estimate& e : all)
    if (e.time.step() < top->time.step()) top = &e;
  const double capacity = top->memory.total().v - 1;
  REQUIRE(fastest(all, capacity) < std::numeric_limits<double>::infinity());
  su.system.gpu.hbm_capacity = Bytes(capacity);
  const Resolution r =
      fastest_fitting(su.model, su.system, OpenPlan{su.plan, std::nullopt, std::nullopt, std::nullopt}, su.framework);
  CHECK(r.fits);
  CHECK(r.estimate.memory.fits());
  CHECK(r.estimate.time.step().v == fastest(all, capacity));
  CHECK(r.estimate.time.step() > top->time.step());
}

TEST_CASE("nothing fits: the fastest is reported with fits false and its oom problem") {
  test::Setup su = base();
  su.system.gpu.hbm_capacity = MiB(1);
  const Resolution r =
      fastest_fitting(su.model, su.system, OpenPlan{su.plan, std::nullopt, std::nullopt, std::nullopt}, su.framework);
  CHECK_FALSE(r.fits);
  CHECK(r.estimate.time.step().v == fastest(completions(base()), 1e300));
  REQUIRE(r.estimate.problems.size() == 1);
  CHECK(r.estimate.problems[0].code.rfind("oom_", 0) == 0);
}

TEST_CASE("known fields are kept and not reported; tp 1 has no SP choice") {
  test::Setup su = base();
  Resolution r = fastest_fitting(su.model, su.system, OpenPlan{su.plan, 2, std::nullopt, Recompute::none}, su.framework);
  CHECK(r.candidates == 2);
  CHECK(r.estimate.plan.micro_batch == 2);
  CHECK(r.estimate.plan.recompute == Recompute::none);
  REQUIRE(r.chosen.size() == 1);
  CHECK(r.chosen[0].rfind("sp=", 0) == 0);

  su.plan = test::plan_of(1, 1, 8, 1, 1, 32, 128);
  r = fastest_fitting(su.model, su.system, OpenPlan{su.plan, 4, std::nullopt, std::nullopt}, su.framework);
  CHECK(r.candidates == 3);
  REQUIRE(r.chosen.size() == 1);
  CHECK(r.chosen[0].rfind("recompute=", 0) == 0);
}

TEST_CASE("framework defaults: one that splits the batch into pp micro-batches fixes an open micro-batch") {
  test::Setup su = base();
  su.plan = test::plan_of(1, 2, 4, 1, 1, 32, 128);  // 8 sequences per data-parallel rank, 2 pipeline ranks
  const OpenPlan open{su.plan, std::nullopt, std::nullopt, Recompute::none};
  Resolution free = fastest_fitting(su.model, su.system, open, su.framework);
  CHECK(free.candidates == 4);  // micro-batches 1, 2, 4, 8
  su.framework.pp_microbatches_default_to_pp = true;
  // design.md's rule (fastest that fits) unless framework defaults are asked for.
  CHECK(fastest_fitting(su.model, su.system, open, su.framework).candidates == 4);
  const Resolution fixed = fastest_fitting(su.model, su.system, open, su.framework, true);
  CHECK(fixed.candidates == 1);
  CHECK(fixed.estimate.plan.micro_batch == 4);  // 8 / pp 2
  REQUIRE(fixed.chosen.size() == 1);
  CHECK(fixed.chosen[0] == "mbs=4 (pp micro-batches)");
  // A stated micro-batch wins; without PP, or when pp does not divide the rank's batch, the choice stays free.
  CHECK(fastest_fitting(su.model, su.system, OpenPlan{su.plan, 1, std::nullopt, Recompute::none}, su.framework, true)
            .estimate.plan.micro_batch == 1);
  su.plan = test::plan_of(1, 1, 8, 1, 1, 32, 128);
  CHECK(fastest_fitting(su.model, su.system, OpenPlan{su.plan, std::nullopt, std::nullopt, Recompute::none},
                        su.framework, true).candidates == 3);
  su.plan = test::plan_of(1, 8, 1, 1, 1, 12, 128);
  su.model.layers = 8;
  CHECK(fastest_fitting(su.model, su.system, OpenPlan{su.plan, std::nullopt, std::nullopt, Recompute::none},
                        su.framework, true).candidates == 6);  // 12 / pp 8 is no integer: 1, 2, 3, 4, 6, 12
}

TEST_CASE("an invalid plan reports its constraint problems") {
  test::Setup su = base();
  su.plan.tp = 3;
  const Resolution r =
      fastest_fitting(su.model, su.system, OpenPlan{su.plan, std::nullopt, std::nullopt, std::nullopt}, su.framework);
  CHECK_FALSE(r.fits);
  CHECK_FALSE(r.estimate.problems.empty());
  CHECK(r.estimate.problems[0].code == "gpus_product");
  CHECK(r.estimate.time.compute.v == 0);
}

}
