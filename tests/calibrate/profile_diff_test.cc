#include "calibrate/profile_diff.h"

#include <doctest/doctest.h>

using namespace shardplan;
using namespace shardplan::calibrate;

TEST_SUITE("calibrate.profile_diff") {

TEST_CASE("diff compares overhead, curves at the union of points, and tiers by name") {
  System a, b;
  a.gpu.eff.kernel_overhead = us(4);
  b.gpu.eff.kernel_overhead = us(5);
  a.gpu.eff.memory = Curve::constant(0.9, "a");
  b.gpu.eff.memory = Curve{{1e6, 1e9}, {0.5, 0.92}, OutOfRange::clamp, "b"};
  Tier t;
  t.name = "nvlink";
  t.bw_per_gpu = GBps(450);
  t.latency = us(3);
  a.tiers = {t};
  t.latency = us(2);
  b.tiers = {t};
  const auto rows = diff_systems(a, b);
  REQUIRE(rows.size() == 6);
  CHECK(rows[0].table == "gpu");
  CHECK(rows[0].before == doctest::Approx(4));
  CHECK(rows[0].after == doctest::Approx(5));
  CHECK(rows[1].table == "memory");
  CHECK(rows[1].key == "eff @ 1 bytes");  // a's single point
  CHECK(rows[3].key == "eff @ 1e+09 bytes");
  CHECK(rows[3].before == doctest::Approx(0.9));
  CHECK(rows[3].after == doctest::Approx(0.92));
  CHECK(rows[5].key == "latency_us");
  CHECK(rows[5].after == doctest::Approx(2));
}

TEST_CASE("diff lists the reduction-depth GEMM factor when either profile has one (empty reads as 1)") {
  System a, b;
  b.gpu.eff.gemm_k = Curve{{512, 4096}, {0.87, 1.04}, OutOfRange::clamp, "b"};
  std::vector<DiffRow> rows;
  for (const DiffRow& r : diff_systems(a, b))
    if (r.table == "gemm_k") rows.push_back(r);
  REQUIRE(rows.size() == 2);
  CHECK(rows[0].key == "eff @ 512 k");
  CHECK(rows[0].before == 1.0);
  CHECK(rows[0].after == doctest::Approx(0.87));
}

}
