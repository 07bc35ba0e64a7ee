#include "modeler/io/flexgen_machine_io.h"

#include <doctest/doctest.h>

#include "modeler/problems.h"

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
