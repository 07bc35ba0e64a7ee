#include "modeler/io/trace_json.h"

#include <doctest/doctest.h>

#include <set>

using namespace shardplan;

TEST_CASE("trace_json: Chrome trace structure, one process per stage, complete events in microseconds") {
  Estimate e;
  e.time.compute = Seconds(1);
  e.time.shape.stages = 2;
  e.time.shape.microbatches = 2;
  e.time.shape.forward = Seconds(1e-3);
  e.time.shape.backward = Seconds(2e-3);
  e.time.shape.layer_comm[static_cast<int>(CommKind::tp)] = Seconds(1e-4);
  const nlohmann::json j = io::trace_json(build_timeline(e), "test");
  // Round-trips through text (what a viewer loads).
  const nlohmann::json t = nlohmann::json::parse(j.dump());
  REQUIRE(t.contains("traceEvents"));
  CHECK(t["displayTimeUnit"] == "ms");
  std::set<int> pids;
  std::set<std::string> thread_names;
  int complete = 0;
  for (const auto& ev : t["traceEvents"]) {
    const std::string ph = ev.at("ph");
    CHECK((ph == "X" || ph == "M"));
    CHECK(ev.at("pid").is_number_integer());
    CHECK(ev.at("tid").is_number_integer());
    if (ph == "M" && ev["name"] == "thread_name") thread_names.insert(ev["args"]["name"].get<std::string>());
    if (ph == "X") {
      ++complete;
      CHECK(ev.at("ts").get<double>() >= 0);
      CHECK(ev.at("dur").get<double>() >= 0);
      CHECK(ev.at("name").is_string());
      pids.insert(ev["pid"].get<int>());
    }
  }
  CHECK(pids == std::set<int>{0, 1});
  CHECK(thread_names == std::set<std::string>{"compute", "bubble", "tp comm"});
  // 2 stages x 2 micro-batches x (forward + backward) compute events, each with a tp comm event, + 2 bubbles each.
  CHECK(complete == 2 * 4 * 2 + 2 * 2);
}
