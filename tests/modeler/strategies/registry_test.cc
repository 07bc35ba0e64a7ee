#include <doctest/doctest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "modeler/strategies/strategy.h"

using namespace shardplan;

TEST_SUITE("registry") {

TEST_CASE("every strategy once; the core four in Megatron's rank order: tp innermost, then cp, dp, pp") {
  std::vector<std::string> names;
  for (const Strategy* s : all_strategies()) names.push_back(s->name());
  CHECK(std::set<std::string>(names.begin(), names.end()).size() == names.size());
  auto at = [&](const char* n) { return std::find(names.begin(), names.end(), n) - names.begin(); };
  const auto n = static_cast<std::ptrdiff_t>(names.size());
  REQUIRE(at("tp") < n);
  REQUIRE(at("cp") < n);
  REQUIRE(at("dp") < n);
  REQUIRE(at("pp") < n);
  CHECK(at("tp") == 0);
  CHECK(at("tp") < at("cp"));
  CHECK(at("cp") < at("dp"));
  CHECK(at("dp") < at("pp"));
  CHECK(all_strategies()[0] == &tensor_parallel());
  CHECK(std::find(all_strategies().begin(), all_strategies().end(), &pipeline_parallel()) != all_strategies().end());
}

}
