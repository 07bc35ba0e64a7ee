#include "apps/report_table.h"

#include <doctest/doctest.h>

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
