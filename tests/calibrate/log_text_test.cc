#include "calibrate/log_text.h"

#include <doctest/doctest.h>

#include "modeler/problems.h"

using namespace shardplan;
using namespace shardplan::calibrate;

TEST_CASE("log lines: ANSI colours, launcher prefixes and carriage returns are removed") {
  const auto lines = logtext::clean_lines(
      "[rank3]:[titan] \x1b[31mstep:  4\x1b[39m  tps: 10,050\r\n[default0]:  hidden_size .. 4\n"
      "[1,0]<stdout>:x\n 12: y\na\rb\n[train]:\n");
  REQUIRE(lines.size() == 7);
  CHECK(lines[0] == "[titan] step:  4  tps: 10,050");
  CHECK(lines[1] == "  hidden_size .. 4");  // the prefix goes, the argument line's indent stays
  CHECK(lines[2] == "x");
  CHECK(lines[3] == "y");
  CHECK(lines[4] == "a");  // a lone carriage return (a progress bar redraw) ends a line
  CHECK(lines[5] == "b");
  CHECK(lines[6] == "[train]:");  // a Bridge section header is no launcher prefix
}

TEST_CASE("log lines: numbers after a key, with thousands commas") {
  CHECK(*logtext::number_after("tps: 10,050  tflops: 314.71", "tps:") == 10050);
  CHECK(*logtext::number_after("memory: 66.91GiB(37.51%)", "memory:") == doctest::Approx(66.91));
  CHECK(*logtext::number_after("CurrSamplesPerSec=159.628891629629, Mem", "CurrSamplesPerSec=") ==
        doctest::Approx(159.6288916));
  CHECK(!logtext::number_after("mfu: N/A", "mfu:"));
  CHECK(!logtext::number_after("no key here", "tps:"));
  CHECK_THROWS_WITH_AS(logtext::to_int("4x", "f.log", 3, "tp"), "f.log:3: tp: expected an integer, got '4x'",
                       ConfigError);
  CHECK_THROWS_WITH_AS(logtext::to_bool("Yes", "f.log", 4, "sp"), "f.log:4: sp: expected True or False, got 'Yes'",
                       ConfigError);
  CHECK(logtext::to_int("'8'", "f", 1, "k") == 8);
}

TEST_CASE("log lines: YAML-style key lines keep their section, Bridge headers included") {
  const auto keys = logtext::key_lines(logtext::clean_lines(
      "trainer:\n  devices: 8\nmodel:\n  optim:\n    name: distributed_fused_adam\n  micro_batch_size: 2\n"
      "not yaml, a log line: 3\n  orphan: 1\n[model] Non-default values (vs Mcore TransformerConfig):\n"
      "  tensor_model_parallel_size: 2  (Mcore default: 1)\n"));
  REQUIRE(keys.size() == 5);
  CHECK(keys[0].section == "trainer");
  CHECK(keys[1].section == "model.optim");
  CHECK(keys[1].value == "distributed_fused_adam");
  CHECK(keys[2].section == "model");
  CHECK(keys[3].section == "");  // after a non-YAML line the nesting starts over
  CHECK(keys[4].section == "model");
  CHECK(keys[4].value == "2");
  CHECK(keys[4].line == 10);
}
