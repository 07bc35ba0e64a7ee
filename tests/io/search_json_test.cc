#include "modeler/io/search_json.h"

#include <doctest/doctest.h>

#include <string>

#include "tests/modeler/test_fixtures.h"

using namespace shardplan;
using namespace shardplan::io;
using nlohmann::json;

namespace {

/// A valid estimate whose step time is `step_s` (all compute) on tp x dp GPUs.
Estimate with_step(double step_s, int tp, int dp) {
  Estimate e;
  e.plan = test::plan_of(tp, 1, dp, 1, 1, 8 * dp, 128);
  e.time.compute = Seconds(step_s);
  e.memory.weights = GiB(1);
  e.memory.capacity = GiB(80);
  return e;
}

ReportContext context() {
  ReportContext c;
  c.command = "search";
  c.model = "tiny";
  c.system = "synthetic";
  return c;
}

}  // namespace

TEST_SUITE("search_json") {

TEST_CASE("one search: results, rejections with labels, pareto and counts") {
  SearchResult r;
  r.space_size = 100;
  r.evaluated = 90;
  r.feasible = 2;
  r.top = {with_step(1.0, 2, 4), with_step(2.0, 4, 2)};
  r.pareto = {with_step(1.0, 2, 4)};
  r.nearest_misses = {with_step(0.5, 1, 8)};
  r.rejected = {{"tp_divides_heads", 80}, {"oom_activations", 8}};
  const json j = json::parse(search_json(context(), {{8, &r}}).dump());
  CHECK(j["schema_version"] == 1);
  CHECK(j["context"]["command"] == "search");
  REQUIRE(j["results"].size() == 2);
  CHECK(j["results"][0]["gpus"] == 8);
  CHECK(j["results"][0]["plan"]["tp"] == 2);
  CHECK(j["results"][0]["time"]["step_s"] == doctest::Approx(1.0));
  CHECK(j["results"][1]["plan"]["tp"] == 4);
  CHECK(j["rejected"] == json{{"oom_activations", 8}, {"tp_divides_heads", 80}});
  CHECK(j["rejected_labels"]["tp_divides_heads"] == "tp does not divide heads");
  CHECK(j["rejected_labels"]["oom_activations"] == "out of memory (largest item: activations)");
  REQUIRE(j["pareto"].size() == 1);
  CHECK(j["pareto"][0]["plan"]["tp"] == 2);
  CHECK(j["pareto_axes"] == "step_s vs memory headroom");
  REQUIRE(j["nearest_misses"].size() == 1);
  CHECK(j["nearest_misses"][0]["gpus"] == 8);
  CHECK(j["space_size"] == 100);
  CHECK(j["evaluated"] == 90);
  CHECK(j["feasible"] == 2);
  CHECK(j["cancelled"] == false);
}

TEST_CASE("a GPU-count range: results concatenated, rejections summed, pareto over GPU counts") {
  SearchResult a, b, c, d;
  a.top = {with_step(4.0, 1, 8)};
  a.rejected = {{"oom_weights", 3}};
  a.evaluated = 10;
  a.feasible = 1;
  b.top = {with_step(2.0, 2, 8), with_step(3.0, 1, 16)};
  b.rejected = {{"oom_weights", 4}, {"tp_divides_heads", 1}};
  b.evaluated = 20;
  b.feasible = 2;
  b.cancelled = true;
  c.top = {with_step(2.5, 4, 8)};  // slower than 16 GPUs: not on the front
  d.rejected = {{"oom_weights", 5}};  // nothing fits at this count
  const json j = search_json(context(), {{8, &a}, {16, &b}, {32, &c}, {64, &d}});
  REQUIRE(j["results"].size() == 4);
  CHECK(j["results"][0]["gpus"] == 8);
  CHECK(j["results"][1]["gpus"] == 16);
  CHECK(j["results"][2]["gpus"] == 16);
  CHECK(j["results"][3]["gpus"] == 32);
  CHECK(j["rejected"]["oom_weights"] == 12);
  CHECK(j["rejected"]["tp_divides_heads"] == 1);
  REQUIRE(j["pareto"].size() == 2);
  CHECK(j["pareto"][0]["gpus"] == 8);
  CHECK(j["pareto"][1]["gpus"] == 16);
  CHECK(j["pareto"][1]["time"]["step_s"] == doctest::Approx(2.0));
  CHECK(j["pareto_axes"] == "step_s vs gpus");
  CHECK(j["evaluated"] == 30);
  CHECK(j["feasible"] == 3);
  CHECK(j["cancelled"] == true);
}

TEST_CASE("nothing found: empty arrays, not nulls") {
  SearchResult r;
  const json j = search_json(context(), {{8, &r}});
  CHECK(j["results"] == json::array());
  CHECK(j["pareto"] == json::array());
  CHECK(j["nearest_misses"] == json::array());
  CHECK(j["rejected"].is_object());
  CHECK(j["rejected_labels"] == json::object());
}

}
