#include "apps/plan_flags.h"

#include <doctest/doctest.h>

#include "modeler/problems.h"

using namespace shardplan;
using namespace shardplan::cli;

namespace {
Plan parse(std::vector<std::string> args, int gpus) {
  CLI::App app;
  PlanFlags f;
  add_plan_flags(&app, &f);
  std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 takes arguments in reverse order
  app.parse(reversed);
  System sys;
  sys.gpus = gpus;
  return resolve_plan(f, sys);
}
}  // namespace

TEST_CASE("resolve_plan: dp from the GPU count, gbs from dp x mbs, sp on with tp > 1") {
  const Plan p = parse({"--tp", "4", "--pp", "2", "--mbs", "2"}, 64);
  CHECK(p.dp == 8);
  CHECK(p.global_batch == 16);
  CHECK(p.sequence_parallel);
  CHECK(p.seq_len == 4096);
  CHECK(p.zero == 1);
  CHECK_FALSE(parse({}, 8).sequence_parallel);
  CHECK_FALSE(parse({"--tp", "2", "--no-sp"}, 8).sequence_parallel);
  CHECK(parse({"--sp"}, 8).sequence_parallel);
}

TEST_CASE("resolve_plan: model-parallel degrees that do not divide the GPU count are an error") {
  CHECK_THROWS_WITH_AS(parse({"--tp", "3"}, 8), "tp x pp x cp (3) does not divide the GPU count (8)", ConfigError);
}

TEST_CASE("parse_precision and parse_recompute") {
  CHECK(parse_precision("mxfp8") == Dtype::fp8);
  CHECK(parse_precision("nvfp4") == Dtype::fp4);
  CHECK_THROWS_AS(parse_precision("int4"), ConfigError);
  CHECK(parse_recompute("selective") == Recompute::selective);
  CHECK_THROWS_AS(parse_recompute("some"), ConfigError);
}

TEST_CASE("resolve_framework suggests a near name") {
  CHECK(resolve_framework("torchtitan").name == "torchtitan");
  CHECK_THROWS_WITH_AS(resolve_framework("torchtitn"), "unknown framework 'torchtitn', did you mean 'torchtitan'?",
                       ConfigError);
}

TEST_CASE("plan_arguments reproduces the plan through the flags") {
  const Plan p = parse({"--tp", "2", "--pp", "2", "--vpp", "2", "--mbs", "1", "--gbs", "8", "--seq", "2048",
                        "--recompute", "full", "--zero", "3"},
                       8);
  const std::string args = plan_arguments(p, "megatron-lm");
  CHECK(args.find("--tp 2 --pp 2 --vpp 2") != std::string::npos);
  CHECK(args.find("--zero 3") != std::string::npos);
  CHECK(args.find("--recompute full") != std::string::npos);
  CHECK(args.find("--framework megatron-lm") != std::string::npos);
  CHECK(args.find("--recompute-layers") == std::string::npos);
  const Plan b = parse({"--pp", "2", "--gbs", "8", "--recompute", "full", "--recompute-layers", "3"}, 8);
  CHECK(b.recompute_layers == 3);
  CHECK(plan_arguments(b, "nemo").find("--recompute full --recompute-layers 3 ") != std::string::npos);
}
