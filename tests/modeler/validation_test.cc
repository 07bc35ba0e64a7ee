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

// An open plan whose recipe-decided settings are stated (no TP overlap, every layer recomputed, eager), so only
// the three plan fields can be open.
OpenPlan open_plan(const Plan& p, std::optional<int> mbs, std::optional<bool> sp, std::optional<Recompute> rc) {
  OpenPlan o;
  o.plan = p;
  o.micro_batch = mbs;
  o.sequence_parallel = sp;
  o.recompute = rc;
  o.tp_comm_overlap = false;
  o.recompute_num_layers = 0;
  o.compiled = false;
  return o;
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
  const OpenPlan open = open_plan(su.plan, std::nullopt, std::nullopt, std::nullopt);
  const Resolution r = fastest_fitting(su.model, su.system, open, su.framework);
  CHECK(r.candidates == 24);
  CHECK(r.fits);
  CHECK(r.estimate.feasible());
  CHECK(r.estimate.time.step().v == fastest(completions(su), 1e300));
  REQUIRE(r.chosen.size() == 3);
  const Plan& p = r.estimate.plan;
  CHECK(r.chosen[0] == "mbs=" + std::to_string(p.micro_batch) + " (fastest that fits)");
  CHECK(r.chosen[1] == std::string("sp=") + (p.sequence_parallel ? "on" : "off") + " (fastest that fits)");
  CHECK(r.chosen[2] == std::string("recompute=") + to_string(p.recompute) + " (fastest that fits)");
  CHECK(r.choices[2].why == "fastest that fits");
  // The bracket spans every completion (all fit): its best is the chosen one, its worst the slowest.
  double worst = 1e300;
  for (const Estimate& e : completions(su)) worst = std::min(worst, e.tokens_per_s_per_gpu);
  CHECK(r.bracket.settings == 24);
  CHECK(r.bracket.best_tokens_per_s_per_gpu == doctest::Approx(r.estimate.tokens_per_s_per_gpu));
  CHECK(r.bracket.worst_tokens_per_s_per_gpu == doctest::Approx(worst));
  CHECK(r.bracket.worst_tokens_per_s_per_gpu < r.bracket.best_tokens_per_s_per_gpu);
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
      fastest_fitting(su.model, su.system, open_plan(su.plan, std::nullopt, std::nullopt, std::nullopt), su.framework);
  CHECK(r.fits);
  CHECK(r.estimate.memory.fits());
  CHECK(r.estimate.time.step().v == fastest(all, capacity));
  CHECK(r.estimate.time.step() > top->time.step());
}

TEST_CASE("nothing fits: the fastest is reported with fits false and its oom problem") {
  test::Setup su = base();
  su.system.gpu.hbm_capacity = MiB(1);
  const Resolution r =
      fastest_fitting(su.model, su.system, open_plan(su.plan, std::nullopt, std::nullopt, std::nullopt), su.framework);
  CHECK_FALSE(r.fits);
  CHECK(r.estimate.time.step().v == fastest(completions(base()), 1e300));
  REQUIRE(r.estimate.problems.size() == 1);
  CHECK(r.estimate.problems[0].code.rfind("oom_", 0) == 0);
}

TEST_CASE("known fields are kept and not reported; tp 1 has no SP choice") {
  test::Setup su = base();
  Resolution r =
      fastest_fitting(su.model, su.system, open_plan(su.plan, 2, std::nullopt, Recompute::none), su.framework);
  CHECK(r.candidates == 2);
  CHECK(r.estimate.plan.micro_batch == 2);
  CHECK(r.estimate.plan.recompute == Recompute::none);
  REQUIRE(r.chosen.size() == 1);
  CHECK(r.chosen[0].rfind("sp=", 0) == 0);

  su.plan = test::plan_of(1, 1, 8, 1, 1, 32, 128);
  r = fastest_fitting(su.model, su.system, open_plan(su.plan, 4, std::nullopt, std::nullopt), su.framework);
  CHECK(r.candidates == 3);
  REQUIRE(r.chosen.size() == 1);
  CHECK(r.chosen[0].rfind("recompute=", 0) == 0);
}

TEST_CASE("recipe defaults: a framework that splits the batch into pp micro-batches fixes an open micro-batch") {
  test::Setup su = base();
  su.plan = test::plan_of(1, 2, 4, 1, 1, 32, 128);  // 8 sequences per data-parallel rank, 2 pipeline ranks
  const OpenPlan open = open_plan(su.plan, std::nullopt, std::nullopt, Recompute::none);
  Resolution free = fastest_fitting(su.model, su.system, open, su.framework);
  CHECK(free.candidates == 4);  // micro-batches 1, 2, 4, 8
  REQUIRE(free.chosen.size() == 1);
  CHECK(free.chosen[0].find("(fastest that fits)") != std::string::npos);
  su.framework.pp_microbatches_default_to_pp = true;
  // The source ran the framework's default: it is the prediction; the other micro-batches stay in the bracket.
  const Resolution fixed = fastest_fitting(su.model, su.system, open, su.framework);
  CHECK(fixed.candidates == 4);
  CHECK(fixed.bracket.settings == free.bracket.settings);
  CHECK(fixed.bracket.best_tokens_per_s_per_gpu == doctest::Approx(free.bracket.best_tokens_per_s_per_gpu));
  CHECK(fixed.estimate.plan.micro_batch == 4);  // 8 / pp 2
  REQUIRE(fixed.chosen.size() == 1);
  CHECK(fixed.chosen[0] == "mbs=4 (recipe default, pp micro-batches)");
  REQUIRE(fixed.choices.size() == 1);
  CHECK(fixed.choices[0].why == "recipe default, pp micro-batches");
  // fastest_fit: the old completion, the fastest micro-batch that fits, as without the framework default.
  const Resolution fast = fastest_fitting(su.model, su.system, open, su.framework, true);
  CHECK(fast.estimate.plan.micro_batch == free.estimate.plan.micro_batch);
  CHECK(fast.chosen == free.chosen);
  // A stated micro-batch wins; without PP, or when pp does not divide the rank's batch, the choice stays free.
  CHECK(fastest_fitting(su.model, su.system, open_plan(su.plan, 1, std::nullopt, Recompute::none), su.framework)
            .estimate.plan.micro_batch == 1);
  su.plan = test::plan_of(1, 1, 8, 1, 1, 32, 128);
  const Resolution no_pp =
      fastest_fitting(su.model, su.system, open_plan(su.plan, std::nullopt, std::nullopt, Recompute::none),
                      su.framework);
  CHECK(no_pp.candidates == 3);
  CHECK(no_pp.chosen[0].find("(fastest that fits)") != std::string::npos);
  su.plan = test::plan_of(1, 8, 1, 1, 1, 12, 128);
  su.model.layers = 8;
  const Resolution odd =
      fastest_fitting(su.model, su.system, open_plan(su.plan, std::nullopt, std::nullopt, Recompute::none),
                      su.framework);
  CHECK(odd.candidates == 6);  // 12 / pp 8 is no integer: 1, 2, 3, 4, 6, 12, fastest that fits
  CHECK(odd.chosen[0].find("(fastest that fits)") != std::string::npos);
}

TEST_CASE("an invalid plan reports its constraint problems") {
  test::Setup su = base();
  su.plan.tp = 3;
  const Resolution r =
      fastest_fitting(su.model, su.system, open_plan(su.plan, std::nullopt, std::nullopt, std::nullopt), su.framework);
  CHECK_FALSE(r.fits);
  CHECK_FALSE(r.estimate.problems.empty());
  CHECK(r.estimate.problems[0].code == "gpus_product");
  CHECK(r.estimate.time.compute.v == 0);
}

TEST_CASE("recipe settings left open take the framework's recipe default and are bracketed") {
  test::Setup su = base();  // tp 2
  OpenPlan open = open_plan(su.plan, 2, true, Recompute::none);
  open.tp_comm_overlap.reset();
  su.framework.offers_tp_overlap = true;
  for (bool recipe_on : {true, false}) {
    CAPTURE(recipe_on);
    su.framework.recipe_tp_comm_overlap = recipe_on;
    const Resolution r = fastest_fitting(su.model, su.system, open, su.framework);
    CHECK(r.candidates == 2);
    CHECK(r.estimate.plan.tp_comm_overlap == recipe_on);
    REQUIRE(r.chosen.size() == 1);
    CHECK(r.chosen[0] == std::string("tp_overlap=") + (recipe_on ? "on" : "off") + " (recipe default)");
    // Either way the bracket holds both settings: overlap on is the faster.
    Plan on = r.estimate.plan, off = r.estimate.plan;
    on.tp_comm_overlap = true;
    off.tp_comm_overlap = false;
    CHECK(r.bracket.settings == 2);
    CHECK(r.bracket.best_tokens_per_s_per_gpu ==
          doctest::Approx(evaluate(su.model, su.system, on, su.framework).tokens_per_s_per_gpu));
    CHECK(r.bracket.worst_tokens_per_s_per_gpu ==
          doctest::Approx(evaluate(su.model, su.system, off, su.framework).tokens_per_s_per_gpu));
  }
  // Stated: not open, not reported.
  open.tp_comm_overlap = false;
  const Resolution stated = fastest_fitting(su.model, su.system, open, su.framework);
  CHECK(stated.candidates == 1);
  CHECK(stated.chosen.empty());
  CHECK_FALSE(stated.estimate.plan.tp_comm_overlap);
}

TEST_CASE("context parallelism's K/V exchange left open takes the framework's, the other in the bracket") {
  test::Setup su = base();
  su.plan = test::plan_of(2, 1, 2, 2, 1, 32, 128);  // tp 2, dp 2, cp 2 on 8 GPUs
  OpenPlan open = open_plan(su.plan, 1, true, Recompute::none);
  for (CpKind recipe : {CpKind::ring, CpKind::allgather}) {
    CAPTURE(to_string(recipe));
    su.framework.recipe_cp_kind = recipe;
    const Resolution r = fastest_fitting(su.model, su.system, open, su.framework);
    CHECK(r.candidates == 2);
    CHECK(r.estimate.plan.cp_kind == recipe);
    REQUIRE(r.chosen.size() == 1);
    CHECK(r.chosen[0] == std::string("cp_kind=") + to_string(recipe) + " (recipe default)");
    CHECK(r.bracket.settings == 2);
  }
  // Stated: not open; and without context parallelism there is nothing to choose.
  open.cp_kind = CpKind::ring;
  su.framework.recipe_cp_kind = CpKind::allgather;
  const Resolution stated = fastest_fitting(su.model, su.system, open, su.framework);
  CHECK(stated.candidates == 1);
  CHECK(stated.estimate.plan.cp_kind == CpKind::ring);
  open.cp_kind.reset();
  open.plan = base().plan;
  CHECK(fastest_fitting(su.model, su.system, open, su.framework).chosen.empty());
}

TEST_CASE("fp8 rows: the recipe and fp8 parameter gathers default to the framework's, the others bracket it") {
  test::Setup su = base();
  su.plan.precision = Dtype::fp8;
  su.plan.zero = 1;
  su.system.gpu.peak[static_cast<int>(Dtype::fp8)] = su.system.gpu.peak[static_cast<int>(Dtype::bf16)] * 2.0;
  OpenPlan open = open_plan(su.plan, 2, true, Recompute::none);
  su.framework.fp8_recipe = Fp8Recipe::tensorwise;
  su.framework.fp8_param_gather = true;
  const Resolution r = fastest_fitting(su.model, su.system, open, su.framework);
  REQUIRE(r.estimate.plan.fp8_recipe.has_value());
  CHECK(*r.estimate.plan.fp8_recipe == Fp8Recipe::tensorwise);
  CHECK(*r.estimate.plan.fp8_param_gather);
  REQUIRE(r.chosen.size() == 2);
  CHECK(r.chosen[0] == "fp8_recipe=tensorwise (recipe default)");
  CHECK(r.chosen[1] == "fp8_param_gather=on (recipe default)");
  // delayed, tensorwise, blockwise (no microscaling without an fp4 peak) x gather on/off.
  const bool microscaling = su.system.gpu.peak_for(Dtype::fp4).v > 0;
  CHECK(r.candidates == (microscaling ? 8 : 6));
  CHECK(r.bracket.best_tokens_per_s_per_gpu >= r.estimate.tokens_per_s_per_gpu);
  CHECK(r.bracket.worst_tokens_per_s_per_gpu <= r.estimate.tokens_per_s_per_gpu);
  // Delayed scaling needs no separate amax pass, so it brackets from above the current-scaling default.
  Plan delayed = r.estimate.plan;
  delayed.fp8_recipe = Fp8Recipe::delayed;
  CHECK(evaluate(su.model, su.system, delayed, su.framework).tokens_per_s_per_gpu > r.estimate.tokens_per_s_per_gpu);
}

TEST_CASE("block recompute left open: every layer by default, 1 .. chunk-1 layers bracketed") {
  test::Setup su = base();  // 8 layers, pp 1
  OpenPlan open = open_plan(su.plan, 2, true, Recompute::full);
  open.recompute_num_layers.reset();
  su.framework.offers_block_recompute = true;
  const Resolution r = fastest_fitting(su.model, su.system, open, su.framework);
  CHECK(r.candidates == 8);  // all layers, then 1..7
  CHECK(r.estimate.plan.recompute_layers == 0);
  REQUIRE(r.chosen.size() == 1);
  CHECK(r.chosen[0] == "recompute_layers=all (recipe default)");
  Plan one = r.estimate.plan;
  one.recompute_layers = 1;
  CHECK(r.bracket.best_tokens_per_s_per_gpu ==
        doctest::Approx(evaluate(su.model, su.system, one, su.framework).tokens_per_s_per_gpu));
}

TEST_CASE("compile left open: a framework that offers it brackets compiled and eager") {
  test::Setup su = base();
  OpenPlan open = open_plan(su.plan, 2, true, Recompute::none);
  open.compiled.reset();
  su.framework.fused_elementwise = false;
  su.framework.unfused_passes_per_norm = 4;
  CHECK(fastest_fitting(su.model, su.system, open, su.framework).candidates == 1);  // not offered: not open
  su.framework.offers_compile = true;
  const Resolution r = fastest_fitting(su.model, su.system, open, su.framework);
  CHECK(r.candidates == 2);
  REQUIRE(r.chosen.size() == 1);
  CHECK(r.chosen[0] == "compiled=no (recipe default)");
  CHECK(r.bracket.best_tokens_per_s_per_gpu > r.estimate.tokens_per_s_per_gpu);  // fused kernels are faster
}

}
