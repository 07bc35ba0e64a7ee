#include "modeler/io/validation_record_io.h"

#include <doctest/doctest.h>

#include "modeler/problems.h"

using namespace shardplan;
using namespace shardplan::io;

TEST_SUITE("validation_record_io") {

TEST_CASE("a report's generation x framework groups round-trip through the record file, rounded to 0.1%") {
  ValidationReport rep;
  rep.by_generation_framework["H100 megatron-lm"] = {24, 7.04, 2.06};
  rep.by_generation_framework["Blackwell nemo"] = {11, 27.25, -3.14};
  const ValidationRecord rec = record_from_report(rep, "runs.yaml");
  REQUIRE(rec.groups.size() == 2);
  CHECK(rec.groups[0].generation == "Blackwell");  // map order
  CHECK(rec.groups[1].framework == "megatron-lm");
  CHECK(rec.groups[1].mape_pct == doctest::Approx(7.0));
  const ValidationRecord back = parse_validation_record(record_yaml(rec), "record.yaml");
  CHECK(back.runs_file == "runs.yaml");
  CHECK(back.command == kRecordCommand);
  REQUIRE(back.groups.size() == 2);
  CHECK(back.groups[0].runs == 11);
  CHECK(back.groups[0].bias_pct == doctest::Approx(-3.1));
  CHECK(back.groups[1].bias_pct == doctest::Approx(2.1));
}

TEST_CASE("a bad record names file, line and key") {
  const std::string text = "schema_version: 1\nruns_file: r.yaml\ncommand: c\ngroups:\n"
                           "  - {generation: H100, framework: nemo, runs: 3, mape: 1, bias_pct: 0}\n";
  CHECK_THROWS_AS(parse_validation_record(text, "record.yaml"), ConfigError);
  try {
    parse_validation_record(text, "record.yaml");
  } catch (const ConfigError& e) {
    CHECK(std::string(e.what()).find("record.yaml:5") == 0);
  }
}

TEST_CASE("quotes: the record's line and its JSON, or 'not validated' without a record") {
  ValidationRecord rec;
  rec.groups = {{"H100", "megatron-lm", 9, 21.1, 21.1}};
  const RecordQuote q = quote_record(rec, "h100-sxm5-80gb", "megatron-lm");
  CHECK(q.text == "validated on 9 H100 megatron-lm runs: MAPE 21%, bias +21%");
  const nlohmann::json j = record_json(q);
  CHECK(j["runs"] == 9);
  CHECK(j["exact"] == true);
  CHECK(j["mape_pct"] == doctest::Approx(21.1));
  const RecordQuote none = quote_record(std::nullopt, "h100-sxm5-80gb", "megatron-lm");
  CHECK(none.text.rfind("not validated: no validation record shipped", 0) == 0);
  CHECK(record_json(none)["runs"] == 0);
}

}
