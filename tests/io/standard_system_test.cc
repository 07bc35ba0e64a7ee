#include <doctest/doctest.h>

#include "modeler/io/system_io.h"
#include "modeler/problems.h"

using namespace shardplan;
using namespace shardplan::io;

TEST_CASE("standard_system: NVL72 domain larger than the node, NIC override in Gb/s") {
  StandardSystemOptions opts;
  opts.gpus = 144;
  opts.gpus_per_node = 4;
  opts.nvlink_domain = 72;
  opts.nic_gbps_per_gpu = 400;
  const System s = standard_system(load_gpu_profile("gb200"), opts);
  CHECK(s.gpus == 144);
  CHECK(s.gpus_per_node == 4);
  REQUIRE(s.tiers.size() == 2);
  CHECK(s.tiers[0].domain_gpus == 72);
  CHECK(s.tiers[1].domain_gpus == 0);
  CHECK(s.tiers[1].bw_per_gpu.v == doctest::Approx(50e9));  // 400 Gb/s = 50 GB/s
  CHECK(s.tier_for_group(72, 1) == 0);                      // a whole rack stays on NVLink
  CHECK(s.tier_for_group(2, 72) == 1);                      // one rank per rack crosses the NIC
}

TEST_CASE("standard_system: defaults, a smaller node, and the Gpu overload") {
  const GpuProfile h100 = load_gpu_profile("h100-sxm5-80gb");
  const System one_node = standard_system(h100, {});
  CHECK(one_node.gpus == 8);
  CHECK(one_node.tiers[0].domain_gpus == 8);
  CHECK(one_node.tiers[1].bw_per_gpu.v == doctest::Approx(50e9));

  StandardSystemOptions four;
  four.gpus = 16;
  four.gpus_per_node = 4;
  const System small = standard_system(h100.gpu, four);
  CHECK(small.tiers[0].domain_gpus == 4);  // the NVLink domain is the node, so it follows the node size
  CHECK(small.gpus == 16);

  StandardSystemOptions bad;
  bad.gpus = 12;
  CHECK_THROWS_WITH_AS(standard_system(h100, bad),
                       "standard h100-sxm5-80gb system: gpus (12) is not a multiple of gpus per node (8)", ConfigError);
}
