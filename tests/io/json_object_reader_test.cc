#include "modeler/io/json_object_reader.h"

#include <doctest/doctest.h>

#include "modeler/problems.h"

using namespace shardplan;
using namespace shardplan::io;

TEST_SUITE("json_object_reader") {

TEST_CASE("json_line_of finds a key by its path, not a string value that spells it") {
  const std::string text = "{\n  \"a\": \"b\",\n  \"b\": {\n    \"c\": 1\n  }\n}\n";
  CHECK(json_line_of(text, {"a"}) == 2);
  CHECK(json_line_of(text, {"b"}) == 3);  // "b" on line 2 is a value
  CHECK(json_line_of(text, {"b", "c"}) == 4);
  CHECK(json_line_of(text, {"missing"}) == 0);
}

TEST_CASE("values, ranges and unknown keys are errors naming file, line and path") {
  const std::string text = "{\n  \"n\": 3.5,\n  \"obj\": {\n    \"k\": \"x\",\n    \"mbs\": 2\n  }\n}\n";
  const nlohmann::json doc = nlohmann::json::parse(text);
  const std::map<std::string, std::string> aliases = {{"mbs", "micro_batch"}};
  ObjectReader top(doc, text, "p.json", {}, &aliases);
  CHECK_THROWS_WITH_AS(top.opt_int("n", 1), "p.json:2: n: expected an integer, got 3.5", ConfigError);
  CHECK(top.opt_number("n", 0, 4) == 3.5);
  CHECK_THROWS_WITH_AS(top.opt_number("n", 0, 1), "p.json:2: n: expected a number in [0, 1], got 3.5", ConfigError);
  ObjectReader obj = top.object("obj");
  CHECK_THROWS_WITH_AS(obj.opt_choice("k", {"y", "z"}),
                       "p.json:4: obj.k: expected one of y, z, got \"x\"; did you mean 'y'?", ConfigError);
  obj.get("micro_batch");
  // The alias reaches the child object: the plan key is suggested for the flag spelling.
  CHECK_THROWS_WITH_AS(obj.finish(), "p.json:5: obj.mbs: unknown key, did you mean 'micro_batch'?", ConfigError);
  CHECK_THROWS_WITH_AS(top.object("absent"), "p.json: missing required key 'absent'", ConfigError);
  CHECK(json_type_name(nlohmann::json::array()) == "an array");
  CHECK(json_type_name(nlohmann::json(nullptr)) == "null");
}

}  // TEST_SUITE
