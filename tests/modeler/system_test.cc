#include "modeler/system.h"

#include <doctest/doctest.h>

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
