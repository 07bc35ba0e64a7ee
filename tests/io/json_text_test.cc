#include "modeler/io/json_text.h"

#include <doctest/doctest.h>

#include "modeler/problems.h"

using namespace shardplan;
using nlohmann::json;

namespace {
/// What parsing `text` throws, as the JSON readers turn it.
std::string message_of(const std::string& text, const std::string& file) {
  try {
    const json j = json::parse(text);
    CHECK(!j.is_discarded());
  } catch (const json::out_of_range& e) {
    try {
      io::throw_json_number_out_of_range(e, text, file);
    } catch (const ConfigError& c) {
      return c.what();
    }
  }
  return "no out_of_range";
}
}  // namespace

TEST_SUITE("io.json_text") {

TEST_CASE("a number beyond double's range is named with its line and key") {
  CHECK(message_of("{\n  \"a\": 1,\n  \"rope_theta\": 1e400\n}", "c.json") ==
        "c.json:3: rope_theta: number 1e400 is out of range (beyond +-1.8e308)");
  CHECK(message_of("[-1e999]", "l.json") == "l.json:1: number -1e999 is out of range (beyond +-1.8e308)");
  CHECK(message_of("{\"x\": 1e308}", "ok.json") == "no out_of_range");  // in range: parsed, nothing thrown
}

}
