#include "modeler/io/serving_host_io.h"

#include <doctest/doctest.h>

#include "modeler/problems.h"

using namespace shardplan;

TEST_CASE("a host profile parses with its units") {
  const auto h = io::parse_host("schema_version: 1\nkind: host\nname: h\nmemory_gib: 64\nmemory_bw_gbps: 60\n"
                                "cpu_tflops: 1.5\npcie_gbps: 25\nsources: [a]\n", "h.yaml");
  CHECK(h.memory.v == doctest::Approx(64.0 * (1 << 30)));
  CHECK(h.memory_bw.v == doctest::Approx(60e9));
  CHECK(h.cpu_flops.v == doctest::Approx(1.5e12));
  CHECK(h.pcie_bw.v == doctest::Approx(25e9));
}

TEST_CASE("a host profile without a bandwidth is an error naming the key") {
  CHECK_THROWS_WITH_AS(io::parse_host("schema_version: 1\nkind: host\nname: h\nmemory_gib: 64\ncpu_tflops: 1\n"
                                      "pcie_gbps: 25\nsources: []\n", "h.yaml"),
                       doctest::Contains("memory_bw_gbps"), ConfigError);
}
