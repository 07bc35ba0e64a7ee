#include "modeler/io/flexgen_machine_io.h"

#include <doctest/doctest.h>

#include "modeler/problems.h"
#include "modeler/serving/host_rates.h"

using namespace shardplan;

TEST_CASE("the shipped FlexGen machine profile loads with its sources") {
  const io::FlexgenMachineProfile p = io::load_flexgen_machine("gcp-n1-highmem-32-t4");
  CHECK(p.gpu == "t4");
  CHECK(p.machine.name == "gcp-n1-highmem-32-t4");
  CHECK(to_GBps(p.machine.pcie_h2d) < 15.75);  // below the PCIe 3.0 x16 link rate
  CHECK(p.machine.host_memory.v == doctest::Approx(GiB(208).v));
  CHECK(p.machine.disk_read.v > p.machine.disk_write.v);
  CHECK(p.sources.size() >= 3);
}

TEST_CASE("a machine profile with an unknown or missing key is an error naming it") {
  const std::string ok = R"(schema_version: 1
kind: offload-machine
name: m
gpu: t4
gpu_gemm_tflops: 24
gpu_memory_bw_gbps: 272
gpu_memory_gib: 14.75
pcie_h2d_gbps: 13
pcie_d2h_gbps: 13
host_memory_gib: 208
host_memory_bw_gbps: 96
disk_gib: 1397
disk_read_gbps: 2
disk_write_gbps: 1
sources: ["x"]
)";
  CHECK(io::parse_flexgen_machine(ok, "m.yaml").machine.gpu_gemm.v == doctest::Approx(24e12));
  std::string typo = ok;
  typo.replace(typo.find("disk_gib"), 8, "disk_gb");
  CHECK_THROWS_WITH_AS(io::parse_flexgen_machine(typo, "m.yaml"), doctest::Contains("m.yaml:"), ConfigError);
  std::string zero = ok;
  zero.replace(zero.find("pcie_h2d_gbps: 13"), 17, "pcie_h2d_gbps: 0");
  CHECK_THROWS_WITH_AS(io::parse_flexgen_machine(zero, "m.yaml"), doctest::Contains("pcie_h2d_gbps"), ConfigError);
  std::string nosrc = ok;
  nosrc.replace(nosrc.find("sources: [\"x\"]"), 14, "sources: []");
  CHECK_THROWS_AS(io::parse_flexgen_machine(nosrc, "m.yaml"), ConfigError);
}

TEST_CASE("the T4 machine's DRAM rate is the host rule's, its PCIe rates a PCIe 3.0 x16 measurement") {
  // Skylake-SP, 6 x DDR4-2666, STREAM-class traffic on a many-channel part.
  const io::FlexgenMachineProfile p = io::load_flexgen_machine("gcp-n1-highmem-32-t4");
  const double dram =
      serving::dram_peak_gbps(6, 2666) * serving::stream_fraction(serving::MemoryPlatform::many_channel);
  CHECK(to_GBps(p.machine.host_memory_bw) == doctest::Approx(dram).epsilon(1e-3));
  // bandwidthTest on a P100 PCIe (Gen 3 x16, NUMA-local; mpicbg-scicomp/gearshifft PR #82): 12150.7 and 12890.6
  // "MB/s" host-to-device and device-to-host, where bandwidthTest.cu's MB/s is bytes x 1024 / (ms x 2^20).
  // So bytes per ms = MB/s x 2^20 / 1024, and GB/s = MB/s x 1024 x 1000 / 1e9.
  const double mbs = (1 << 20) / 1024.0 * 1000 / 1e9;
  CHECK(to_GBps(p.machine.pcie_h2d) == doctest::Approx(12150.7 * mbs).epsilon(1e-3));
  CHECK(to_GBps(p.machine.pcie_d2h) == doctest::Approx(12890.6 * mbs).epsilon(1e-3));
  // The host rule's Gen 3 pinned fraction is the same measurement (host-to-device); device-to-host within 7%.
  const double rule = serving::pcie_link_gbps(3, 16) * serving::pinned_h2d_fraction(3);
  CHECK(to_GBps(p.machine.pcie_h2d) == doctest::Approx(rule).epsilon(0.002));
  CHECK(to_GBps(p.machine.pcie_d2h) == doctest::Approx(rule).epsilon(0.07));
  CHECK(p.machine.pcie_h2d.v < p.machine.pcie_d2h.v);
}
