#include "apps/report_table.h"

#include <doctest/doctest.h>

#include "modeler/framework.h"
#include "tests/modeler/test_fixtures.h"

using namespace shardplan;
using namespace shardplan::cli;

TEST_CASE("with_commas groups thousands") {
  CHECK(with_commas(1234567.4) == "1,234,567");
  CHECK(with_commas(999) == "999");
  CHECK(with_commas(-12345) == "-12,345");
}

TEST_CASE("format_plan shows expert parallelism only for a mixture-of-experts model") {
  Plan p;
  p.tp = 8;
  p.etp = 8;  // expert tp follows tp by default, also on a dense model
  CHECK(format_plan(p, false).find("etp") == std::string::npos);
  p.ep = 4;
  CHECK(format_plan(p, true).find("ep 4  etp 8  | routing dropless") != std::string::npos);
  p.capacity_factor = 1.25;
  CHECK(format_plan(p, true).find("token-drop, capacity factor 1.25") != std::string::npos);
  p.recompute = Recompute::full;
  p.recompute_layers = 4;
  CHECK(format_plan(p, false).find("recompute full (4 layers per chunk)") != std::string::npos);
}

TEST_CASE("format_plan names the fp8 recipe a plan runs: its own, else the framework's") {
  Plan p;
  p.precision = Dtype::fp8;
  const Framework& megatron = *find_framework("megatron-lm");  // Megatron-Core's default: delayed scaling
  CHECK(format_plan(p, false).find("| fp8\n") != std::string::npos);  // no framework given: the precision alone
  CHECK(format_plan(p, false, &megatron).find("| fp8 (delayed)\n") != std::string::npos);
  p.fp8_recipe = Fp8Recipe::blockwise;
  CHECK(format_plan(p, false, &megatron).find("| fp8 (blockwise)\n") != std::string::npos);
  p.precision = Dtype::bf16;
  CHECK(format_plan(p, false, &megatron).find("| bf16\n") != std::string::npos);
}

TEST_CASE("format_time lists the parts and the step they add up to") {
  TimeBreakdown t;
  t.compute = Seconds(0.8);
  t.exposed_comm[static_cast<int>(CommKind::dp)] = Seconds(0.1);
  t.bubble = Seconds(0.05);
  t.optimizer = Seconds(0.05);
  const std::string s = format_time(t);
  CHECK(s.find("(ms)") != std::string::npos);
  CHECK(s.find("exposed dp communication") != std::string::npos);
  CHECK(s.find("exposed tp communication") == std::string::npos);  // zero parts are not listed
  CHECK(s.find("1000.00") != std::string::npos);                     // the step
  CHECK(s.find("of which MoE experts") == std::string::npos);         // a dense model's
  t.moe = Seconds(0.3);
  CHECK(format_time(t).find("of which MoE experts") != std::string::npos);
}

TEST_CASE("format_memory says whether the plan fits") {
  MemoryBreakdown m;
  m.weights = GiB(10);
  m.capacity = GiB(80);
  CHECK(format_memory(m).find("fits (70.0 GiB free)") != std::string::npos);
  m.activations = GiB(100);
  CHECK(format_memory(m).find("DOES NOT FIT (30.0 GiB over)") != std::string::npos);
}

TEST_CASE("format_params and format_model: total, and active parameters for MoE models") {
  CHECK(format_params(70.5537e9) == "70.55 B");
  CHECK(format_params(1.008e12) == "1.008 T");
  CHECK(format_params(124.4e6) == "124.4 M");
  CHECK(format_params(5120) == "5,120");
  ModelDesc m = test::tiny_model();
  // 2 x (4 x 64 x 64 attention + 2 x 64 x 256 MLP + 2 x 128 LayerNorms) + 128 final norm + 2 x 128 x 64 tables
  CHECK(format_model(m) == "model: tiny, 2 layers, hidden 64: " + format_params(total_params(m)) + " parameters");
  CHECK(total_params(m) == 2 * (4 * 64 * 64 + 2 * 64 * 256 + 2 * 128) + 128 + 2 * 128 * 64);
  m.moe = MoeDesc{4, 1, 128, 0, 0, 0, false, false};
  CHECK(format_model(m).find(" active per token (1 of 4 experts)") != std::string::npos);
}
