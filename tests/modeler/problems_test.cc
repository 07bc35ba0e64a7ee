#include "modeler/problems.h"

#include <doctest/doctest.h>

#include <stdexcept>

using namespace shardplan;

TEST_SUITE("problems") {

TEST_CASE("join_problems: one message per line, codes left out") {
  CHECK(join_problems({}) == "");
  CHECK(join_problems({{"a", "first"}}) == "first");
  CHECK(join_problems({{"tp_divides_heads", "tp (8) does not divide heads (12)"}, {"b", "second"}}) ==
        "tp (8) does not divide heads (12)\nsecond");
}

TEST_CASE("check_invariant throws logic_error naming the condition and place") {
  CHECK_NOTHROW(check_invariant(true, "x > 0", "f.cc", 3));
  CHECK_THROWS_WITH_AS(check_invariant(false, "x > 0", "f.cc", 3), "internal error: invariant 'x > 0' failed at f.cc:3",
                       std::logic_error);
  const int x = -1;
  CHECK_THROWS_AS(SHARDPLAN_CHECK(x > 0), std::logic_error);
  CHECK_NOTHROW(SHARDPLAN_CHECK(x < 0));
}

TEST_CASE("user errors are runtime errors carrying their message") {
  CHECK_THROWS_WITH_AS(throw ConfigError("m.yaml:3: model.hidden: must be positive"),
                       "m.yaml:3: model.hidden: must be positive", std::runtime_error);
  CHECK_THROWS_WITH_AS(throw Infeasible("no plan fits"), "no plan fits", Infeasible);
}

}

TEST_CASE("num formats numbers for problem messages") {
  CHECK(num(0.5) == "0.5");
  CHECK(num(1e6) == "1e+06");
  CHECK(num(12.345, "%.1f") == "12.3");
}
