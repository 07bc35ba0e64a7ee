#include "modeler/serving/host_rates.h"

#include <doctest/doctest.h>

#include "modeler/problems.h"

using namespace shardplan;
using namespace shardplan::serving;

TEST_CASE("DRAM peak is channels x 8 bytes x data rate") {
  CHECK(dram_peak_gbps(2, 5600) == doctest::Approx(89.6));
  CHECK(dram_peak_gbps(8, 3200) == doctest::Approx(204.8));
  CHECK(dram_peak_gbps(2, 3600) == doctest::Approx(57.6));
  CHECK(memory_platform(1) == MemoryPlatform::client);
  CHECK(memory_platform(2) == MemoryPlatform::client);
  CHECK(memory_platform(4) == MemoryPlatform::many_channel);
}

TEST_CASE("llama.cpp's CPU decode fraction reproduces the measurements it is taken from") {
  // llama.cpp issue #4716: Mixtral-8x7B Q8_0, 12.748e9 weights read per token x 34/32 bytes.
  const double mixtral_gb = 12.748e9 * 34.0 / 32.0 / 1e9;
  CHECK(mixtral_gb == doctest::Approx(13.545).epsilon(1e-3));
  const double r5900x = 3.58 * mixtral_gb / dram_peak_gbps(2, 3600);
  const double r7950x = 3.37 * mixtral_gb / dram_peak_gbps(2, 3600);
  CHECK(r5900x == doctest::Approx(0.842).epsilon(2e-3).scale(0));
  CHECK(r7950x == doctest::Approx(0.793).epsilon(2e-3).scale(0));
  CHECK(llama_cpu_decode_fraction(MemoryPlatform::client) ==
        doctest::Approx((r5900x + r7950x) / 2).epsilon(0.01).scale(0));
  // llama.cpp issue #11744: Llama-3.1-70B f16, 69.5e9 weights x 2 bytes at 4.31 tok/s on 16 x DDR5-6400.
  const double server = 4.31 * 69.5e9 * 2 / 1e9 / dram_peak_gbps(16, 6400);
  CHECK(llama_cpu_decode_fraction(MemoryPlatform::many_channel) == doctest::Approx(server).epsilon(0.01).scale(0));
  // A client part sustains more of its peak than a many-channel one, and llama.cpp less than STREAM-class reads.
  CHECK(llama_cpu_decode_fraction(MemoryPlatform::client) > llama_cpu_decode_fraction(MemoryPlatform::many_channel));
  CHECK(llama_cpu_decode_fraction(MemoryPlatform::client) < stream_fraction(MemoryPlatform::client));
  CHECK(stream_fraction(MemoryPlatform::many_channel) == doctest::Approx(73876.7 / 102400.0).epsilon(0.01).scale(0));
}

TEST_CASE("per-core matmul rates are the PP-512 measurements over their threads") {
  const double flop_per_token = 2 * (8.03e9 - 128256.0 * 4096);  // LLaMA-3.1-8B less its input embedding
  CHECK(llama_cpu_gflops_per_core(CpuIsa::avx512) == doctest::Approx(157.46 * flop_per_token / 16 / 1e9).epsilon(1e-3));
  CHECK(llama_cpu_gflops_per_core(CpuIsa::avx2) == doctest::Approx(171.99 * flop_per_token / 32 / 1e9).epsilon(1e-3));
}

TEST_CASE("PCIe link rates and the pinned fraction") {
  CHECK(pcie_link_gbps(3, 16) == doctest::Approx(15.754).epsilon(1e-3));
  CHECK(pcie_link_gbps(4, 16) == doctest::Approx(31.508).epsilon(1e-3));
  CHECK(pcie_link_gbps(5, 16) == doctest::Approx(63.015).epsilon(1e-3));
  CHECK(pcie_link_gbps(2, 16) == doctest::Approx(8.0));
  CHECK_THROWS_AS(pcie_link_gbps(6, 16), ConfigError);
  // nvbandwidth host_to_device_memcpy_ce medians: 26.19 GB/s (8 x RTX 4090), 56.34 (8 x RTX 5090).
  CHECK(pinned_h2d_fraction(4) * pcie_link_gbps(4, 16) == doctest::Approx(26.19).epsilon(0.002));
  CHECK(pinned_h2d_fraction(5) * pcie_link_gbps(5, 16) == doctest::Approx(56.34).epsilon(0.002));
  // Gen 3: bandwidthTest's 12150.7 "MB/s" (1.024e6 B/s each) on a P100 PCIe (gearshifft PR #82).
  CHECK(pinned_h2d_fraction(3) * pcie_link_gbps(3, 16) == doctest::Approx(12150.7 * 1.024e-3).epsilon(0.002));
}

TEST_CASE("llama_host applies the rule to a host's spec") {
  HostSpec s;
  s.name = "desktop";
  s.dram_peak_gbps = dram_peak_gbps(2, 5600);
  s.memory_channels = 2;
  s.cores = 16;
  s.isa = CpuIsa::avx512;
  s.pcie_gen = 4;
  s.pcie_link_gbps = pcie_link_gbps(4, 16);
  const Host h = llama_host(s);
  CHECK(h.memory_bw.v == doctest::Approx(0.82 * 89.6e9));
  CHECK(h.cpu_flops.v == doctest::Approx(16 * 147.7e9));
  CHECK(h.pcie_bw.v == doctest::Approx(0.831 * 31.508e9).epsilon(1e-4));
  s.memory_channels = 8;  // the same peak on a many-channel part: a lower fraction
  CHECK(llama_host(s).memory_bw.v == doctest::Approx(0.73 * 89.6e9));
  s.cores = 0;
  CHECK_THROWS_WITH_AS(llama_host(s), doctest::Contains("core count"), ConfigError);
}

TEST_CASE("a named machine's published CPU-only decode run gives its rate; the lookup is by name only") {
  // ik_llama.cpp Discussion #758: GPT-OSS-20B MXFP4 at 21.62 tok/s on ikawrakow's 7950X; a token reads 4 of 32
  // experts in 24 blocks at 4.25 bits and the other multiplied weights at Q8_0's 8.5 bits.
  const MachineDecodeRun* zen4 = machine_decode_run("ikawrakow-ryzen9-7950x");
  REQUIRE(zen4 != nullptr);
  CHECK(zen4->cpu == "AMD Ryzen 9 7950X");
  CHECK(zen4->bytes_per_token / 1e9 == doctest::Approx(1.269 + 1.294).epsilon(2e-3));
  CHECK(zen4->gbps() == doctest::Approx(55.4).epsilon(2e-3));
  // ik_llama.cpp PR #13: TriLM-3.9B (1.08 GiB) TG flat from 8 to 16 threads (48.62, 48.09 tok/s) on the 5975WX.
  const MachineDecodeRun* tr = machine_decode_run("ikawrakow-threadripper-pro-5975wx");
  REQUIRE(tr != nullptr);
  CHECK(tr->cpu == "AMD Ryzen Threadripper PRO 5975WX");
  CHECK(tr->gbps() == doctest::Approx(48.09 * 1.08 * 1073741824.0 / 1e9).epsilon(1e-6));
  CHECK(tr->gbps() == doctest::Approx(55.8).epsilon(2e-3));
  // The same PR's TriLM run on the 7950X (48.28 tok/s on 8 threads, at most the file a token: 56.0 GB/s)
  // bounds the GPT-OSS figure from above, within 2%.
  const double trilm_7950x = 48.28 * 1.08 * 1073741824.0 / 1e9;
  CHECK(zen4->gbps() <= trilm_7950x);
  CHECK(zen4->gbps() == doctest::Approx(trilm_7950x).epsilon(0.02));
  // Neither a CPU, a whose-machine phrase nor a source string finds a machine: only its name does.
  CHECK(machine_decode_run("AMD Ryzen 9 7950X") == nullptr);
  CHECK(machine_decode_run("ikawrakow's Ryzen 9 7950X") == nullptr);
  CHECK(machine_decode_run("ikawrakow/ik_llama.cpp PR #841 description") == nullptr);
  CHECK(machine_decode_run("") == nullptr);
  // Every entry has a distinct name, a CPU, a source and a positive rate.
  for (const MachineDecodeRun& m : machine_decode_runs()) {
    CAPTURE(m.name);
    CHECK(machine_decode_run(m.name) == &m);
    CHECK_FALSE(m.cpu.empty());
    CHECK_FALSE(m.source.empty());
    CHECK(m.gbps() > 0);
  }
}

TEST_CASE("llama_host takes a machine's measured decode rate instead of the fraction of its peak") {
  HostSpec s;
  s.name = "ikawrakow 7950X";
  s.dram_peak_gbps = dram_peak_gbps(2, 5200);
  s.cores = 16;
  s.isa = CpuIsa::avx512;
  CHECK(llama_host(s).memory_bw.v == doctest::Approx(0.82 * 83.2e9));
  s.measured_decode_gbps = 55.4;
  const Host h = llama_host(s);
  CHECK(h.memory_bw.v == doctest::Approx(55.4e9));
  CHECK(h.cpu_flops.v == doctest::Approx(16 * 147.7e9));  // the matmul rate is the rule's either way
}
