#include "apps/plan_file.h"

#include <doctest/doctest.h>

#include "modeler/io/report_json.h"
#include "modeler/problems.h"
#include "tests/modeler/test_fixtures.h"

using namespace shardplan;
using namespace shardplan::cli;

namespace {

/// predict's flag table parsed from `args`, then the plan file applied: what predict --plan FILE args... resolves.
struct Applied {
  std::string model;
  SystemFlags system;
  PlanFlags plan;
  std::vector<std::string> overridden;
  Plan resolved;
};

Applied apply(const io::PlanFile& file, std::vector<std::string> args, int gpus = 64) {
  CLI::App app;
  Applied a;
  app.add_option("--model", a.model);
  add_system_flags(&app, &a.system, false);
  add_plan_flags(&app, &a.plan);
  std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 takes arguments in reverse order
  app.parse(reversed);
  a.overridden = apply_plan_file(file, app, &a.model, &a.system, &a.plan);
  System sys;
  sys.gpus = a.system.gpus.value_or(gpus);
  a.resolved = resolve_plan(a.plan, sys);
  a.plan.app = nullptr;  // `app` ends here; what the file filled stays in from_file
  return a;
}

/// An emitted-plan file for tp8 pp4 dp2 on 64 GPUs of dgx-h100.
io::PlanFile emitted() {
  Plan p = test::plan_of(8, 4, 2, 1, 1, 128, 8192);
  p.etp = 8;
  p.sequence_parallel = true;
  p.tp_comm_overlap = true;
  p.zero = 1;
  p.recompute = Recompute::selective;
  nlohmann::json j{{"schema_version", 1}, {"kind", "shardplan-plan"}, {"model", "llama-3-70b"}};
  j["plan"] = io::plan_json(p);
  j["inputs"] = io::inputs_json(io::PlanInputs{"llama-3-70b", "torchtitan", "dgx-h100", "", 64, 0, 0, 0, 0});
  return io::parse_plan_json(j.dump(), "plan.json");
}

}  // namespace

TEST_SUITE("plan_file") {

TEST_CASE("apply_plan_file: without flags the file's model, system, framework and plan come back") {
  const Applied a = apply(emitted(), {});
  CHECK(a.model == "llama-3-70b");
  CHECK(a.system.system == "dgx-h100");
  CHECK(a.system.gpus == 64);
  CHECK(a.plan.framework == "torchtitan");
  CHECK(a.overridden.empty());
  CHECK(a.resolved.tp == 8);
  CHECK(a.resolved.pp == 4);
  CHECK(a.resolved.dp == 2);
  CHECK(a.resolved.etp == 8);
  CHECK(a.resolved.sequence_parallel);
  CHECK(a.resolved.tp_comm_overlap);
  CHECK(a.resolved.zero == 1);
  CHECK(a.resolved.global_batch == 128);
  CHECK(a.resolved.seq_len == 8192);
  CHECK(a.resolved.recompute == Recompute::selective);
}

TEST_CASE("apply_plan_file: a flag replaces its field and is listed; derived fields follow what they derive from") {
  const Applied a = apply(emitted(), {"--mbs", "2", "--tp", "4", "--no-tp-overlap"});
  std::string replaced;
  for (const std::string& o : a.overridden) replaced += o + " ";
  CHECK(replaced == "--tp --no-tp-overlap --mbs ");
  CHECK(a.resolved.tp == 4);
  CHECK(a.resolved.dp == 4);   // gpus / (tp x pp) again, not the file's 2
  CHECK(a.resolved.etp == 4);  // follows tp, as the file's etp did
  CHECK(a.resolved.micro_batch == 2);
  CHECK(a.resolved.global_batch == 128);  // the training problem stays
  CHECK_FALSE(a.resolved.tp_comm_overlap);
  CHECK(a.resolved.sequence_parallel);  // the default at tp 4
  // Another system keeps the file's GPU count.
  const Applied b = apply(emitted(), {"--system", "dgx-b200"});
  CHECK(b.system.system == "dgx-b200");
  CHECK(b.system.gpus == 64);
  CHECK(b.overridden == std::vector<std::string>{"--system"});
  CHECK(b.resolved.dp == 2);
}

TEST_CASE("apply_plan_file: a bare plan needs the model and system from flags") {
  const io::PlanFile bare = io::parse_plan_json("{\"tp\": 2}", "p.json");
  CHECK_THROWS_WITH_AS(apply(bare, {}), "p.json: the plan names no model: give --model", ConfigError);
  CHECK_THROWS_WITH_AS(apply(bare, {"--model", "m"}),
                       "p.json: the plan names no system: give --system CLUSTER or --gpu GPU --gpus N", ConfigError);
  const Applied a = apply(bare, {"--model", "m", "--system", "dgx-h100", "--gpus", "8"});
  CHECK(a.resolved.tp == 2);
  CHECK(a.resolved.dp == 4);
}

TEST_CASE("check_flags_fit: flags that do not apply to the model or plan are errors naming why") {
  const ModelDesc dense = test::tiny_model();
  auto fit = [&](std::vector<std::string> args, const ModelDesc& m) {
    CLI::App app;
    PlanFlags f;
    add_plan_flags(&app, &f);
    std::vector<std::string> reversed(args.rbegin(), args.rend());
    app.parse(reversed);
    System sys;
    sys.gpus = 8;
    check_flags_fit(f, m, resolve_plan(f, sys));
  };
  CHECK_NOTHROW(fit({"--tp", "2"}, dense));
  CHECK_THROWS_WITH_AS(fit({"--etp", "1"}, dense), "--etp applies to mixture-of-experts models, and tiny is dense (no experts)",
                       ConfigError);
  CHECK_THROWS_WITH_AS(fit({"--capacity-factor", "1.25", "--moe-imbalance", "1.2"}, dense),
                       "--capacity-factor applies to mixture-of-experts models, and tiny is dense (no experts)\n"
                       "--moe-imbalance applies to mixture-of-experts models, and tiny is dense (no experts)",
                       ConfigError);
  CHECK_THROWS_AS(fit({"--ep", "2"}, dense), ConfigError);
  CHECK_THROWS_AS(fit({"--ep-overlap"}, dense), ConfigError);
  CHECK_NOTHROW(fit({"--no-ep-overlap"}, dense));
  CHECK_THROWS_WITH_AS(fit({"--sp"}, dense),
                       "--sp needs tp > 1: sequence parallelism splits the norms and dropout over the tensor-parallel "
                       "group, and tp is 1",
                       ConfigError);
  CHECK_THROWS_AS(fit({"--tp-overlap"}, dense), ConfigError);
  CHECK_THROWS_AS(fit({"--cp-kind", "allgather"}, dense), ConfigError);
  CHECK_NOTHROW(fit({"--cp", "2", "--cp-kind", "allgather"}, dense));
  const ModelDesc moe = test::tiny_moe();
  CHECK_NOTHROW(fit({"--ep", "2", "--etp", "1", "--ep-overlap", "--capacity-factor", "1.25"}, moe));
  CHECK_THROWS_WITH_AS(fit({"--ep-overlap"}, moe),
                       "--ep-overlap hides the expert-parallel all-to-all, and ep is 1 (no all-to-all): give --ep N",
                       ConfigError);
}

TEST_CASE("check_flags_fit names the plan file's key when the value came from --plan") {
  const io::PlanFile f = io::parse_plan_json("{\"tp\": 1, \"tp_comm_overlap\": true}", "p.json");
  CHECK_THROWS_WITH_AS(
      [&] {
        const Applied a = apply(f, {"--model", "m", "--system", "s", "--gpus", "8"});
        check_flags_fit(a.plan, test::tiny_model(), a.resolved);
      }(),
      "'tp_comm_overlap' of p.json needs tp > 1: with tp 1 there are no tensor-parallel collectives to overlap",
      ConfigError);
}

TEST_CASE("compare_with_file: now against the file's prediction, signed") {
  Estimate e;
  e.time.compute = Seconds(2.0);
  e.tokens_per_s_per_gpu = 1000;
  e.memory.weights = GiB(10);
  io::PredictedNumbers p;
  p.step_s = 2.0;
  p.tokens_per_s_per_gpu = 1100;
  p.memory_bytes = GiB(10).v;
  CHECK(compare_with_file(p, e) ==
        "step 2 s (file 2 s, +0.00%), 1,000 tokens/s/GPU (file 1,100, -9.09%), 10.00 GiB (file 10.00 GiB, +0.00%)");
}

}  // TEST_SUITE
