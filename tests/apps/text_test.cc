#include "apps/text.h"

#include <doctest/doctest.h>

using namespace shardplan::cli;

TEST_CASE("fmt formats one number") {
  CHECK(fmt("%.1f", 12.345) == "12.3");
  CHECK(fmt("%+.1f", 2.0) == "+2.0");
}

TEST_CASE("split_commas drops empty items") {
  CHECK(split_commas("a,b,,c") == std::vector<std::string>{"a", "b", "c"});
  CHECK(split_commas("") == std::vector<std::string>{});
  CHECK(split_commas("8") == std::vector<std::string>{"8"});
}
