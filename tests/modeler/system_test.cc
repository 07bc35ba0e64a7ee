#include "modeler/system.h"

#include <doctest/doctest.h>

#include <cmath>

#include "modeler/problems.h"

using namespace shardplan;

namespace {
System cluster(std::vector<int> domains) {
  System s;
  for (int d : domains) {
    Tier t;
    t.domain_gpus = d;
    s.tiers.push_back(t);
  }
  return s;
}
}  // namespace

TEST_CASE("tier_for_group on a DGX cluster: NVLink domain of 8, then the network") {
  const System s = cluster({8, 0});
  CHECK(s.tier_for_group(1, 1) == 0);
  CHECK(s.tier_for_group(8, 1) == 0);   // TP=8 inside a node
  CHECK(s.tier_for_group(4, 2) == 0);   // span (4-1)*2+1 = 7
  CHECK(s.tier_for_group(2, 4) == 0);   // span 5
  CHECK(s.tier_for_group(16, 1) == 1);  // two nodes
  CHECK(s.tier_for_group(2, 8) == 1);   // DP across nodes: span 9
}

TEST_CASE("tier_for_group on NVL72 racks: the scale-up domain is larger than the 4-GPU node") {
  const System s = cluster({72, 0});
  CHECK(s.tier_for_group(72, 1) == 0);
  CHECK(s.tier_for_group(8, 9) == 0);   // span 64
  CHECK(s.tier_for_group(2, 72) == 1);  // span 73
}

TEST_CASE("tier_for_group with three tiers picks the innermost that holds the span") {
  const System s = cluster({8, 256, 0});
  CHECK(s.tier_for_group(8, 1) == 0);
  CHECK(s.tier_for_group(32, 8) == 1);   // span 249
  CHECK(s.tier_for_group(33, 8) == 2);   // span 257
}

TEST_CASE("a single tier holds every group") {
  const System s = cluster({0});
  CHECK(s.tier_for_group(1024, 1) == 0);
}

TEST_CASE("set_power_limit slows the sustained clock by the cube root of the power ratio") {
  Gpu g;
  g.name = "test-gpu";
  g.tdp_w = 700;
  g.peak[static_cast<int>(Dtype::bf16)] = TFlops(1000);
  set_power_limit(&g, 700);
  CHECK(g.clock_scale == doctest::Approx(1.0));
  set_power_limit(&g, 500);
  CHECK(g.clock_scale == doctest::Approx(std::cbrt(500.0 / 700.0)));  // 0.8939
  CHECK(g.sustained_peak(Dtype::bf16).v == doctest::Approx(1000e12 * std::cbrt(500.0 / 700.0)));
  CHECK(g.peak_for(Dtype::bf16).v == doctest::Approx(1000e12));  // MFU keeps the datasheet peak
  CHECK_THROWS_WITH_AS(set_power_limit(&g, 800), "power limit 800 W is outside (0, 700] W, the TDP of test-gpu",
                       ConfigError);
  g.tdp_w = 0;
  CHECK_THROWS_WITH_AS(set_power_limit(&g, 300), "power limit 300 W: the profile of test-gpu states no tdp_w",
                       ConfigError);
}
