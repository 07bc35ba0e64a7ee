#include "modeler/pipeline_layout.h"

#include <doctest/doctest.h>

using namespace shardplan;

namespace {
PipelineLayout parsed(const std::string& text) {
  std::string error;
  const std::optional<PipelineLayout> l = parse_pipeline_layout(text, &error);
  REQUIRE_MESSAGE(l.has_value(), error);
  return *l;
}
std::string parse_error(const std::string& text) {
  std::string error;
  CHECK_FALSE(parse_pipeline_layout(text, &error).has_value());
  return error;
}
}  // namespace

TEST_SUITE("pipeline_layout") {

TEST_CASE("Megatron-Bridge's H100 DeepSeek-V3 layout: 32 stages, E + 1 layer, 30 x 2 layers, then mtp and loss") {
  const PipelineLayout l = parsed("Et|(tt|)*30mL");
  REQUIRE(l.stages.size() == 32);
  CHECK(l.stages[0].embedding);
  CHECK(l.stages[0].decoders == 1);
  CHECK(l.stages[15].decoders == 2);
  CHECK(l.stages[31].decoders == 0);
  CHECK(l.stages[31].mtp == 1);
  CHECK(l.stages[31].loss);
  CHECK(pipeline_layout_violation(l, 8, 4, 61, 1).empty());
  // pp 8: rank r holds stages r, r + 8, r + 16, r + 24.
  const std::vector<LayoutStage> ranks = rank_loads(l, 8);
  REQUIRE(ranks.size() == 8);
  CHECK(ranks[0].decoders == 7);
  CHECK(ranks[0].embedding);
  CHECK(ranks[3].decoders == 8);
  CHECK(ranks[7].decoders == 6);
  CHECK(ranks[7].mtp == 1);
  CHECK(ranks[7].loss);
  CHECK_FALSE(ranks[7].embedding);
}

TEST_CASE("repeats of characters and groups, cosmetic commas, empty stages") {
  const PipelineLayout l = parsed("Et*4|(t*4|)*14,tmL");
  REQUIRE(l.stages.size() == 16);
  CHECK(l.stages[0].decoders == 4);
  CHECK(l.stages[14].decoders == 4);
  CHECK(l.stages[15].decoders == 1);
  CHECK(pipeline_layout_violation(l, 16, 1, 61, 1).empty());
  CHECK(pipeline_layout_violation(l, 4, 4, 61, 1).empty());
  const PipelineLayout e = parsed("E||t*2|L");
  REQUIRE(e.stages.size() == 4);
  CHECK(e.stages[1].decoders == 0);
  CHECK(pipeline_layout_violation(e, 2, 2, 2, 0).empty());
}

TEST_CASE("grammar errors") {
  CHECK(parse_error("Etx|L") == "unknown layer character 'x' (E embedding, t transformer layer, m MTP, L loss)");
  CHECK(parse_error("E|((t|)*2)*2|L") == "nested parentheses are not supported");
  CHECK(parse_error("E|(t|)L") == "'(t|)' must hold something and be followed by *N");
  CHECK(parse_error("E|(t|L") == "'(' without ')'");
  CHECK(parse_error("E|t)|L") == "')' without '(' at character 4");
  CHECK(parse_error("E|t*|L") == "'*' must be followed by a count");
  CHECK(parse_error("*2E|L") == "'*' without a character or group before it");
  CHECK(parse_error("E|t*99999999|L").find("unrolls to more than") == 0);
}

TEST_CASE("violations: stage count against pp x vpp, layer and MTP counts, order") {
  const PipelineLayout l = parsed("Et|t|tmL");
  CHECK(pipeline_layout_violation(l, 2, 1, 3, 1) == "has 3 stages, not a multiple of pp (2)");
  CHECK(pipeline_layout_violation(l, 3, 2, 3, 1) == "has 3 stages = pp 3 x vpp 1, but the plan's vpp is 2");
  CHECK(pipeline_layout_violation(l, 3, 1, 4, 1) == "has 3 transformer layers ('t'); the model has 4");
  CHECK(pipeline_layout_violation(l, 3, 1, 3, 0) == "has 1 MTP modules ('m'); the plan runs 0 (mtp_layers)");
  CHECK(pipeline_layout_violation(parsed("tE|t|L"), 3, 1, 2, 0) == "must start with 'E' (embedding)");
  CHECK(pipeline_layout_violation(parsed("Et|t|Lt"), 3, 1, 3, 0) == "must end with 'L' (loss)");
  CHECK(pipeline_layout_violation(parsed("Et|t|t"), 3, 1, 3, 0) == "needs one 'L' (loss)");
  CHECK(pipeline_layout_violation(parsed("Et|Et|L"), 3, 1, 2, 0) == "needs one 'E' (embedding)");
  CHECK(pipeline_layout_violation(parsed("Et|mt|L"), 3, 1, 2, 1) ==
        "transformer layers ('t') must come before the MTP modules ('m')");
  CHECK(pipeline_layout_violation(parsed("Et|tm|L"), 3, 1, 2, 1).find("must be in the final stage") !=
        std::string::npos);
}

TEST_CASE("layout strings: E on the first stage, MTP modules and L on the last") {
  CHECK(pipeline_layout_string({4, 4, 1}, 1) == "Et*4|t*4|tmL");
  CHECK(pipeline_layout_string({2, 3}) == "Et*2|t*3L");
  CHECK(pipeline_layout_string({1, 0}, 2) == "Et|m*2L");
  // What it writes parses back to the same stages.
  const PipelineLayout l = parsed(pipeline_layout_string({4, 4, 1}, 1));
  CHECK(pipeline_layout_violation(l, 3, 1, 9, 1).empty());
}

}
