#include "modeler/validation_record.h"

#include <doctest/doctest.h>

using namespace shardplan;

namespace {
ValidationRecord record() {
  ValidationRecord r;
  r.groups = {{"A100", "megatron-lm", 18, 5.1, 3.8},
              {"H100", "megatron-lm", 24, 7.0, 2.0},
              {"H100", "nemo", 30, 9.4, -1.6},
              {"H100", "torchtitan", 6, 12.0, 11.0}};
  return r;
}
}  // namespace

TEST_SUITE("validation_record") {

TEST_CASE("GPU generations and framework families as validation groups them") {
  CHECK(gpu_generation("h100-sxm5-80gb") == "H100");
  CHECK(gpu_generation("h200-sxm-141gb") == "H100");
  CHECK(gpu_generation("h800-sxm5-80gb") == "H100");
  CHECK(gpu_generation("a100-sxm4-40gb") == "A100");
  CHECK(gpu_generation("gb200") == "Blackwell");
  CHECK(gpu_generation("b300") == "Blackwell");
  CHECK(gpu_generation("v100-sxm3-32gb") == "V100");
  CHECK(gpu_generation("mi300x") == "MI300X");
  CHECK(framework_family("megatron-lm-legacy") == "megatron-lm");
  CHECK(framework_family("nemo-2024") == "nemo");
  CHECK(framework_family("torchtitan") == "torchtitan");
}

TEST_CASE("the exact group, else the same generation's largest, else the same framework's largest") {
  const ValidationRecord r = record();
  RecordMatch m = nearest_record(r, "h200-sxm-141gb", "nemo-2024");
  REQUIRE(m.group);
  CHECK(m.exact);
  CHECK(m.group->runs == 30);
  CHECK(record_text(m, "h200-sxm-141gb", "nemo-2024") == "validated on 30 H100 nemo runs: MAPE 9%, bias -2%");
  m = nearest_record(r, "h100-sxm5-80gb", "llm-foundry");  // no H100 llm-foundry rows: H100's largest group
  REQUIRE(m.group);
  CHECK_FALSE(m.exact);
  CHECK(m.group->framework == "nemo");
  CHECK(record_text(m, "h100-sxm5-80gb", "llm-foundry") ==
        "no published H100 llm-foundry runs; nearest validation record: 30 H100 nemo runs: MAPE 9%, bias -2%");
  m = nearest_record(r, "b200", "megatron-lm");  // no Blackwell rows: megatron-lm's largest group elsewhere
  REQUIRE(m.group);
  CHECK(m.group->generation == "H100");
  m = nearest_record(r, "mi300x", "other");
  CHECK_FALSE(m.group);
  CHECK(record_text(m, "mi300x", "other") ==
        "not validated: no published MI300X or other runs in the validation record");
}

TEST_CASE("intervals: percentiles of ten or more LOO errors, the largest one either side with fewer") {
  std::vector<double> ten;
  for (int i = 0; i < 11; ++i) ten.push_back(i - 5.0);  // -5 .. +5 %
  const auto iv = interval_from_errors(1000, ten);
  REQUIRE(iv.has_value());
  CHECK(iv->error_low_pct == doctest::Approx(-4));
  CHECK(iv->error_high_pct == doctest::Approx(4));
  CHECK(iv->low == doctest::Approx(1000 / 1.04));  // measured = predicted / (1 + error)
  CHECK(iv->high == doctest::Approx(1000 / 0.96));
  CHECK(iv->runs == 11);
  CHECK(iv->basis == "fit_leave_one_out");
  CHECK(iv->text.find("10th-90th percentile of the fit's 11 leave-one-out errors") != std::string::npos);
  const auto few = interval_from_errors(1000, {2.0, -6.0, 1.0});
  REQUIRE(few.has_value());
  CHECK(few->error_low_pct == doctest::Approx(-6));
  CHECK(few->error_high_pct == doctest::Approx(6));
  CHECK_FALSE(interval_from_errors(1000, {}).has_value());
}

TEST_CASE("intervals: a record group's bias -/+ MAPE") {
  const RecordGroup g{"H100", "nemo", 30, 9.0, -2.0};
  const ThroughputInterval iv = interval_from_record(1000, g, true);
  CHECK(iv.error_low_pct == doctest::Approx(-11));
  CHECK(iv.error_high_pct == doctest::Approx(7));
  CHECK(iv.low == doctest::Approx(1000 / 1.07));
  CHECK(iv.high == doctest::Approx(1000 / 0.89));
  CHECK(iv.basis == "validation_record");
  CHECK(iv.text.find("30 H100 nemo runs") != std::string::npos);
}

}
