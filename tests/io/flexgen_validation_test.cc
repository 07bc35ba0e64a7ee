#include "modeler/io/flexgen_validation.h"

#include <doctest/doctest.h>

#include <cmath>

#include "modeler/io/paths.h"

using namespace shardplan;

TEST_CASE("serve validate predicts the shipped FlexGen rows that state a policy and a machine") {
  const auto runs = io::load_serving_runs(io::data_root() + "/tests/validation/serving/serving_runs.yaml");
  int predicted = 0, skipped = 0;
  for (const auto& r : runs) {
    if (r.engine != "flexgen") continue;
    io::ServeRowResult out;
    out.run = &r;
    if (r.throughput_tokens_per_s) out.measured[4] = *r.throughput_tokens_per_s;
    if (r.decode_tokens_per_s) out.measured[2] = *r.decode_tokens_per_s;
    io::predict_flexgen_row(r, &out);
    INFO(r.id << " " << out.skip_reason);
    if (!r.offload || !r.offload->flexgen_policy) {
      CHECK(out.skipped);  // the RTX 3090 row: Table 12's policy is not stated
      ++skipped;
      continue;
    }
    REQUIRE_FALSE(out.skipped);
    ++predicted;
    REQUIRE(out.error_pct[4]);
    // Every row within a factor of two (the MAPE guard is in the validation tier's serving test).
    CHECK(std::abs(*out.error_pct[4]) < 100);
  }
  CHECK(predicted == 6);
  CHECK(skipped == 1);
}

TEST_CASE("a FlexGen row without a machine profile is skipped with the reason") {
  auto runs = io::load_serving_runs(io::data_root() + "/tests/validation/serving/serving_runs.yaml");
  for (auto& r : runs) {
    if (r.id != "flexgen_t4_opt30b_512_32") continue;
    r.machine.clear();
    io::ServeRowResult out;
    io::predict_flexgen_row(r, &out);
    CHECK(out.skipped);
    CHECK(out.skip_reason.find("system.machine") != std::string::npos);
    r.machine = "no-such-machine";
    io::ServeRowResult out2;
    io::predict_flexgen_row(r, &out2);
    CHECK(out2.skipped);
    CHECK(out2.skip_reason.find("machine profile") != std::string::npos);
  }
}
