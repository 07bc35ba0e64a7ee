#include "modeler/io/report_json.h"

#include <doctest/doctest.h>

#include <string>

#include "modeler/evaluate.h"
#include "tests/modeler/test_fixtures.h"

using namespace shardplan;
using namespace shardplan::io;
using nlohmann::json;

namespace {

/// A valid estimate with round numbers: step = 1 + 0.1 + 0.05 + 0.3 + 0.02 = 1.47 s.
Estimate round_estimate() {
  Estimate e;
  e.plan = test::plan_of(2, 2, 2, 1, 1, 8, 128);
  e.memory.weights = GiB(1);
  e.memory.gradients = GiB(2);
  e.memory.optimizer = GiB(3);
  e.memory.activations = GiB(4);
  e.memory.logits = GiB(0.5);
  e.memory.buffers = GiB(0.25);
  e.memory.fragmentation = GiB(0.125);
  e.memory.context = GiB(0.125);
  e.memory.capacity = GiB(80);
  e.time.compute = Seconds(1);
  e.time.recompute = Seconds(0.2);
  e.time.exposed_comm[static_cast<int>(CommKind::tp)] = Seconds(0.1);
  e.time.exposed_comm[static_cast<int>(CommKind::dp)] = Seconds(0.05);
  e.time.bubble = Seconds(0.3);
  e.time.optimizer = Seconds(0.02);
  e.tokens_per_s = 1000;
  e.tokens_per_s_per_gpu = 125;
  e.mfu = 0.4;
  e.hfu = 0.5;
  e.model_flops_per_token = 6e9;
  return e;
}

ReportContext context() {
  ReportContext c;
  c.command = "predict";
  c.model = "tiny";
  c.system = "synthetic";
  c.gpu = "synthetic";
  c.gpus = 8;
  c.framework = "megatron-lm";
  c.provenance = "datasheet defaults";
  return c;
}

}  // namespace

TEST_SUITE("report_json") {

TEST_CASE("predict_json carries the design.md contract keys") {
  const json j = json::parse(predict_json(context(), round_estimate()).dump());  // what consumers read
  CHECK(j.at("schema_version") == 1);
  for (const char* k : {"version", "model", "system", "command", "gpu", "gpus", "framework", "system_provenance",
                        "date"})
    CHECK_MESSAGE(j.at("context").contains(k), k);
  CHECK(j["context"]["model"] == "tiny");
  CHECK(j["context"]["gpus"] == 8);
  CHECK(j["context"]["version"] == SHARDPLAN_VERSION);
  for (const char* k : {"tp", "pp", "vpp", "dp", "cp", "ep", "zero", "sequence_parallel", "micro_batch",
                        "global_batch", "recompute", "precision"})
    CHECK_MESSAGE(j.at("plan").contains(k), k);
  for (const char* k : {"total_bytes", "weights_bytes", "gradients_bytes", "optimizer_bytes", "activations_bytes",
                        "other_bytes", "capacity_bytes", "fits"})
    CHECK_MESSAGE(j.at("memory").contains(k), k);
  for (const char* k : {"step_s", "compute_s", "exposed_comm_s", "bubble_s", "optimizer_s", "recompute_s", "moe_s"})
    CHECK_MESSAGE(j.at("time").contains(k), k);
  for (const char* k : {"tokens_per_s", "tokens_per_s_per_gpu", "mfu", "hfu"})
    CHECK_MESSAGE(j.at("throughput").contains(k), k);
  CHECK(j["feasible"] == true);
  CHECK(j["problems"] == json::array());
}

TEST_CASE("estimate_json: selective recompute lists Megatron's recompute modules") {
  Estimate e = round_estimate();
  e.plan.recompute = Recompute::selective;
  CHECK(estimate_json(e)["plan"]["recompute_modules"] == json::array({"core_attn"}));
  e.plan.recompute_modules = kRecomputeCoreAttn | kRecomputeMoe | kRecomputeLayernorm;
  CHECK(estimate_json(e)["plan"]["recompute_modules"] == json::array({"core_attn", "layernorm", "moe"}));
}

TEST_CASE("estimate_json: values and units as hand-computed") {
  const json j = estimate_json(round_estimate());
  CHECK(j["plan"]["tp"] == 2);
  CHECK(j["plan"]["microbatches_per_step"] == 4);  // gbs 8 / (mbs 1 x dp 2)
  CHECK(j["plan"]["recompute"] == "none");
  CHECK(j["plan"]["recompute_layers"] == 0);
  CHECK(j["plan"]["recompute_modules"] == json::array());  // only under selective recompute
  CHECK(j["plan"]["precision"] == "bf16");
  CHECK(j["plan"]["changes_training_semantics"] == false);
  CHECK(j["memory"]["weights_bytes"] == doctest::Approx(1.0 * (1 << 30)));
  CHECK(j["memory"]["other_bytes"] == doctest::Approx(1.0 * (1 << 30)));   // 0.5 + 0.25 + 0.125 + 0.125 GiB
  CHECK(j["memory"]["total_bytes"] == doctest::Approx(11.0 * (1 << 30)));  // 1 + 2 + 3 + 4 + 1 GiB
  CHECK(j["memory"]["fits"] == true);
  CHECK(j["time"]["step_s"] == doctest::Approx(1.47));
  CHECK(j["time"]["exposed_comm_s"] == doctest::Approx(0.15));
  CHECK(j["time"]["exposed_comm_by_kind_s"]["tp"] == doctest::Approx(0.1));
  CHECK(j["time"]["exposed_comm_by_kind_s"]["dp"] == doctest::Approx(0.05));
  CHECK(j["time"]["exposed_comm_by_kind_s"].size() == kNumCommKinds);
  CHECK(j["time"]["recompute_s"] == doctest::Approx(0.2));
  CHECK(j["throughput"]["mfu"] == doctest::Approx(0.4));
  CHECK(j["throughput"]["model_flops_per_token"] == doctest::Approx(6e9));
}

TEST_CASE("time parts add up to the step") {
  auto sums = [](const json& t) {
    double kinds = 0;
    for (const auto& [k, v] : t["exposed_comm_by_kind_s"].items()) kinds += v.get<double>();
    CHECK(kinds == doctest::Approx(t["exposed_comm_s"].get<double>()).scale(0));
    // recompute_s is the part of compute_s spent re-running forwards, not a separate term.
    CHECK(t["compute_s"].get<double>() + t["exposed_comm_s"].get<double>() + t["bubble_s"].get<double>() +
              t["optimizer_s"].get<double>() ==
          doctest::Approx(t["step_s"].get<double>()).scale(0));
  };
  sums(estimate_json(round_estimate())["time"]);
  const test::Setup su(test::tiny_model(), test::plan_of(2, 2, 2, 1, 1, 8, 128));
  const Estimate e = evaluate(su.model, su.system, su.plan, su.framework);
  REQUIRE(e.time.compute.v > 0);
  sums(estimate_json(e)["time"]);
}

TEST_CASE("an invalid estimate has plan, feasible and problems but no breakdown") {
  Estimate e;
  e.plan = test::plan_of(3, 1, 1);
  e.problems.push_back({"tp_divides_heads", "tp (3) does not divide heads (4)"});
  const json j = predict_json(context(), e);
  CHECK(j.contains("plan"));
  CHECK(j["feasible"] == false);
  REQUIRE(j["problems"].size() == 1);
  CHECK(j["problems"][0]["code"] == "tp_divides_heads");
  CHECK(j["problems"][0]["message"] == "tp (3) does not divide heads (4)");
  CHECK_FALSE(j.contains("memory"));
  CHECK_FALSE(j.contains("time"));
  CHECK_FALSE(j.contains("throughput"));
  CHECK(j["schema_version"] == 1);
  CHECK(j.contains("context"));
}

TEST_CASE("a valid plan that does not fit keeps its breakdown") {
  Estimate e = round_estimate();
  e.memory.capacity = GiB(8);
  e.problems.push_back({"oom", "needs 11.0 GiB, has 8.0 GiB"});
  const json j = estimate_json(e);
  CHECK(j["feasible"] == false);
  CHECK(j["memory"]["fits"] == false);
  CHECK(j.contains("time"));
}

}

TEST_CASE("plan JSON: precision in the contract's spelling, with the fp8 recipe") {
  shardplan::Plan p;
  p.precision = shardplan::Dtype::fp4;
  CHECK(shardplan::io::plan_json(p)["precision"] == "nvfp4");
  p.precision = shardplan::Dtype::fp8;
  p.fp8_recipe = shardplan::Fp8Recipe::mxfp8;
  CHECK(shardplan::io::plan_json(p)["precision"] == "mxfp8");
  p.fp8_recipe = shardplan::Fp8Recipe::blockwise;
  CHECK(shardplan::io::plan_json(p)["precision"] == "fp8");
  CHECK(shardplan::io::plan_json(p)["fp8_recipe"] == "blockwise");
}
