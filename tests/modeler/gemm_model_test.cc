#include "modeler/gemm_model.h"

#include <doctest/doctest.h>

#include "modeler/problems.h"

using namespace shardplan;

TEST_SUITE("gemm_model") {

TEST_CASE("wave efficiency: tiles over SMs, Hopper tiles 128x256") {
  Gpu g;
  g.name = "h100-sxm5-80gb";
  g.sm_count = 132;
  // 1024x1024 -> 8 x 4 = 32 tiles in one wave of 132 slots.
  CHECK(wave_efficiency(g, 1024, 1024) == doctest::Approx(32.0 / 132));
  // 133 tiles take two waves.
  CHECK(wave_efficiency(g, 128 * 133, 256) == doctest::Approx(133.0 / 264));
  g.name = "a100-sxm4-80gb";
  g.sm_count = 108;
  CHECK(wave_efficiency(g, 1024, 1024) == doctest::Approx(64.0 / 108));
  g.sm_count = 0;
  CHECK(wave_efficiency(g, 1024, 1024) == 1.0);
}

TEST_CASE("gemm_time: overhead + max(compute, memory), hand-checked") {
  Gpu g;
  g.name = "a100-sxm4-80gb";
  g.sm_count = 108;
  g.peak[static_cast<int>(Dtype::bf16)] = TFlops(312);
  g.hbm_bw = GBps(2000);
  g.eff.kernel_overhead = us(5);
  g.eff.gemm[static_cast<int>(Dtype::bf16)] = Curve::constant(0.8, "t");
  g.eff.memory = Curve::constant(0.9, "t");
  // 8192^3: 8192/128 = 64 -> 4096 tiles = 38 waves of 108 -> wave eff 4096/4104.
  const double flops = 2.0 * 8192 * 8192 * 8192;
  const double expect = 5e-6 + flops / (312e12 * 0.8 * (4096.0 / 4104));
  CHECK(gemm_time(g, Dtype::bf16, 8192, 8192, 8192).v == doctest::Approx(expect));
  // 16 x 8192 x 8192 is memory-bound: bytes = (16*8192 + 8192*8192)*2 + 16*8192*2.
  const double bytes = (16.0 * 8192 + 8192.0 * 8192) * 2 + 16.0 * 8192 * 2;
  CHECK(gemm_bytes(Dtype::bf16, 16, 8192, 8192).v == bytes);
  CHECK(gemm_time(g, Dtype::bf16, 16, 8192, 8192).v == doctest::Approx(5e-6 + bytes / (2000e9 * 0.9)));
  // fp16 has no table of its own and no peak: an error naming the dtype.
  CHECK_THROWS_WITH_AS(gemm_time(g, Dtype::fp16, 1, 1, 1), "gpu 'a100-sxm4-80gb' states no fp16 peak", ConfigError);
  g.peak[static_cast<int>(Dtype::fp16)] = TFlops(312);
  CHECK(gemm_efficiency(g, Dtype::fp16, 1e12) == doctest::Approx(0.8));  // falls back to bf16's table
}

}
