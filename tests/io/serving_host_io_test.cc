#include "modeler/io/serving_host_io.h"

#include <doctest/doctest.h>

#include "modeler/problems.h"
#include "modeler/serving/host_rates.h"

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

TEST_CASE("the desktop host profile states the host rule applied to its spec") {
  // hwprofiles/hosts/desktop-ddr5-5600-2ch-pcie4.yaml: 2 x DDR5-5600, 16 Zen 4 cores (AVX-512), PCIe 4.0 x16.
  serving::HostSpec s;
  s.name = "desktop";
  s.dram_peak_gbps = serving::dram_peak_gbps(2, 5600);
  s.memory_channels = 2;
  s.cores = 16;
  s.isa = serving::CpuIsa::avx512;
  s.pcie_gen = 4;
  s.pcie_link_gbps = serving::pcie_link_gbps(4, 16);
  const serving::Host rule = serving::llama_host(s);
  const serving::Host h = io::load_host("desktop-ddr5-5600-2ch-pcie4");
  CHECK(h.memory_bw.v == doctest::Approx(rule.memory_bw.v).epsilon(1e-3));
  CHECK(h.cpu_flops.v == doctest::Approx(rule.cpu_flops.v).epsilon(1e-3));
  CHECK(h.pcie_bw.v == doctest::Approx(rule.pcie_bw.v).epsilon(1e-3));
}
