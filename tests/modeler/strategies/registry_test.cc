#include <doctest/doctest.h>

#include <string>

#include "modeler/strategies/strategy.h"

using namespace shardplan;

TEST_SUITE("registry") {

TEST_CASE("every strategy once, in Megatron's rank order: tp innermost, then cp, dp, pp") {
  std::string names;
  for (const Strategy* s : all_strategies()) names += std::string(names.empty() ? "" : ",") + s->name();
  CHECK(names == "tp,cp,dp,pp");
  CHECK(all_strategies()[0] == &tensor_parallel());
  CHECK(all_strategies()[3] == &pipeline_parallel());
}

}
