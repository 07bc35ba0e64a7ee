#include "apps/serve_search_rank.h"

#include <doctest/doctest.h>

#include "modeler/problems.h"

using namespace shardplan;
using namespace shardplan::cli;
using namespace shardplan::serving;

TEST_CASE("--gpu takes one GPU type or several, each once") {
  CHECK(split_gpu_list("h100-sxm5-80gb") == std::vector<std::string>{"h100-sxm5-80gb"});
  CHECK(split_gpu_list("h100-sxm5-80gb,b200") == std::vector<std::string>{"h100-sxm5-80gb", "b200"});
  CHECK_THROWS_WITH_AS(split_gpu_list("b200,b200"), doctest::Contains("'b200' is listed twice"), ConfigError);
  CHECK_THROWS_WITH_AS(split_gpu_list("b200,"), doctest::Contains("--gpu: empty GPU name"), ConfigError);
}

TEST_CASE("GPU-hour prices: one for one type, NAME=P for several, none shipped") {
  const std::vector<std::string> one = {"h100"}, two = {"h100", "b200"};
  CHECK(gpu_prices(one, 0, "", ServeObjective::per_gpu) == std::vector<double>{0});
  CHECK(gpu_prices(one, 2.5, "", ServeObjective::per_dollar) == std::vector<double>{2.5});
  CHECK(gpu_prices(two, 0, "b200=5,h100=2.1", ServeObjective::per_dollar) == std::vector<double>{2.1, 5});
  CHECK(gpu_prices(two, 0, "", ServeObjective::per_gpu) == std::vector<double>{0, 0});
  auto refused = [](const std::vector<std::string>& g, double p, const std::string& l, ServeObjective o,
                    const char* why) {
    CHECK_THROWS_WITH_AS(gpu_prices(g, p, l, o), doctest::Contains(why), ConfigError);
  };
  refused(two, 0, "h100=2.1", ServeObjective::per_gpu, "no price for GPU 'b200'");
  refused(two, 2.0, "", ServeObjective::per_gpu, "--gpu-hour-price: 2 GPU types");
  refused(one, 2.0, "h100=2", ServeObjective::per_gpu, "not both");
  refused(two, 0, "h100=2,a100=1", ServeObjective::per_gpu, "'a100' is not one of --gpu (h100, b200)");
  refused(two, 0, "h100=2,h100=3", ServeObjective::per_gpu, "'h100' is priced twice");
  refused(two, 0, "h100=2,b200", ServeObjective::per_gpu, "expected NAME=PRICE, got 'b200'");
  refused(two, 0, "h100=2,b200=-1", ServeObjective::per_gpu, "must be a positive number, got '-1'");
  refused(two, 0, "h100=2,b200=5x", ServeObjective::per_gpu, "must be a positive number, got '5x'");
  refused(two, 0, "", ServeObjective::per_dollar, "--objective per-dollar needs a price");
  refused(one, 0, "", ServeObjective::per_dollar, "--objective per-dollar needs a price");
}

namespace {

SearchCandidate agg(double per_gpu) {
  SearchCandidate c;
  c.prediction.output_tokens_per_s_per_gpu = per_gpu;
  return c;
}

}  // namespace

TEST_CASE("plans of several GPU types rank together by the objective") {
  std::vector<TypeSearch> types(2);
  types[0].name = "fast";
  types[0].price = 3.0;
  types[0].agg.ranked = {agg(1500), agg(1200)};
  types[1].name = "cheap";
  types[1].price = 1.0;
  types[1].agg.ranked = {agg(900)};
  DisaggCandidate d;
  d.output_tokens_per_s_per_gpu_budget = 1300;
  types[1].disagg.ranked = {d};
  // Per GPU: 1500, 1300 (disagg, per GPU of the budget), 1200, 900.
  const auto g = rank_plans(types, ServeObjective::per_gpu, 8);
  REQUIRE(g.size() == 4);
  CHECK(g[0].per_gpu == 1500);
  CHECK(g[1].dis != nullptr);
  CHECK(g[1].type == 1);
  CHECK(g[3].per_gpu == 900);
  // Per dollar: the cheap type's 1300 / 1.0 and 900 / 1.0 beat 1500 / 3.0.
  const auto c = rank_plans(types, ServeObjective::per_dollar, 8);
  CHECK(c[0].per_gpu == 1300);
  CHECK(c[1].per_gpu == 900);
  CHECK(c[2].per_gpu == 1500);
  for (size_t i = 1; i < c.size(); ++i)
    CHECK(cost_per_mtok(types[c[i - 1].type].price, c[i - 1].per_gpu) <=
          cost_per_mtok(types[c[i].type].price, c[i].per_gpu));
  // Throughput on one budget orders as per GPU.
  const auto t = rank_plans(types, ServeObjective::throughput, 8);
  for (size_t i = 0; i < t.size(); ++i) CHECK(t[i].per_gpu == g[i].per_gpu);
  CHECK(t[0].score == 1500 * 8);
}
