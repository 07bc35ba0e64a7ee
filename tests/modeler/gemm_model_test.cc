#include "modeler/gemm_model.h"

#include <doctest/doctest.h>

#include "modeler/problems.h"
#include "tests/modeler/test_fixtures.h"

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
  CHECK(gemm_time(g, Dtype::bf16, 8192, 8192, 8192).v == doctest::Approx(expect).scale(0));
  // 16 x 8192 x 8192 is memory-bound: bytes = (16*8192 + 8192*8192)*2 + 16*8192*2.
  const double bytes = (16.0 * 8192 + 8192.0 * 8192) * 2 + 16.0 * 8192 * 2;
  CHECK(gemm_bytes(Dtype::bf16, 16, 8192, 8192).v == bytes);
  CHECK(gemm_time(g, Dtype::bf16, 16, 8192, 8192).v == doctest::Approx(5e-6 + bytes / (2000e9 * 0.9)).scale(0));
  // fp16 has no table of its own and no peak: an error naming the dtype.
  CHECK_THROWS_WITH_AS(gemm_time(g, Dtype::fp16, 1, 1, 1), "gpu 'a100-sxm4-80gb' states no fp16 peak", ConfigError);
  g.peak[static_cast<int>(Dtype::fp16)] = TFlops(312);
  CHECK(gemm_efficiency(g, Dtype::fp16, 1e12) == doctest::Approx(0.8));  // falls back to bf16's table
}

TEST_CASE("reduction depth: the table's efficiency times f_k(k), at most the table's top") {
  Gpu g = test::synthetic_gpu();
  Curve rising;
  rising.x = {1e9, 1e12};
  rising.y = {0.4, 0.8};
  g.eff.gemm[static_cast<int>(Dtype::bf16)] = rising;
  Curve depth;
  depth.x = {512, 4096};
  depth.y = {0.5, 1.5};
  // Without a depth table the shape does not matter beyond FLOPs.
  CHECK(gemm_efficiency(g, Dtype::bf16, 1e9, 512) == doctest::Approx(0.4));
  g.eff.gemm_k = depth;
  CHECK(gemm_efficiency(g, Dtype::bf16, 1e9, 512) == doctest::Approx(0.2));
  CHECK(gemm_efficiency(g, Dtype::bf16, 1e9, 4096) == doctest::Approx(0.6));
  CHECK(gemm_efficiency(g, Dtype::bf16, 1e12, 4096) == doctest::Approx(0.8));  // 1.2 capped at the top
  CHECK(gemm_efficiency(g, Dtype::bf16, 1e9, 1 << 20) == doctest::Approx(0.6));  // clamped past the last k
  // gemm_time uses it: 512 x 512 x 512 (2.7e8 FLOPs, at the table's 0.4 end) runs at half that rate.
  g.hbm_bw = BytesPerSec(1e30);
  const double flops = 2.0 * 512 * 512 * 512;
  CHECK(gemm_time(g, Dtype::bf16, 512, 512, 512).v == doctest::Approx(flops / (test::kPeak * 0.2)).scale(0));
}

TEST_CASE("synthetic GPU: compute-bound GEMM is 2mnk / peak") {
  const Gpu g = test::synthetic_gpu();
  // 4096^3: 2 x 4096^3 = 1.374e11 FLOPs at 1e14 FLOP/s = 1.374 ms; bytes 3 x 4096^2 x 2 = 100.7 MB = 0.1 ms.
  const double flops = 2.0 * 4096 * 4096 * 4096;
  CHECK(gemm_time(g, Dtype::bf16, 4096, 4096, 4096).v == doctest::Approx(flops / test::kPeak).scale(0));
}

TEST_CASE("synthetic GPU: memory-bound GEMM is bytes / bandwidth") {
  const Gpu g = test::synthetic_gpu();
  // A GEMV-like 1 x 8192 x 8192: 1.3e8 FLOPs (1.3 us) but 134 MB of weights (134 us).
  const double bytes = (1.0 * 8192 + 8192.0 * 8192) * 2 + 1.0 * 8192 * 2;
  CHECK(gemm_bytes(Dtype::bf16, 1, 8192, 8192).v == bytes);
  CHECK(gemm_time(g, Dtype::bf16, 1, 8192, 8192).v == doctest::Approx(bytes / test::kHbm).scale(0));
  // The ridge: at m = n = k = x, 2x^3 / 1e14 = 6x^2 / 1e12 <=> x = 300; below it memory wins, above compute.
  CHECK(gemm_time(g, Dtype::bf16, 200, 200, 200).v == doctest::Approx(6.0 * 200 * 200 / test::kHbm).scale(0));
  CHECK(gemm_time(g, Dtype::bf16, 400, 400, 400).v == doctest::Approx(2.0 * 400 * 400 * 400 / test::kPeak).scale(0));
}

TEST_CASE("element sizes; narrow GEMMs write at least 16-bit outputs") {
  CHECK(dtype_bytes(Dtype::fp32) == 4.0);
  CHECK(dtype_bytes(Dtype::tf32) == 4.0);
  CHECK(dtype_bytes(Dtype::bf16) == 2.0);
  CHECK(dtype_bytes(Dtype::fp16) == 2.0);
  CHECK(dtype_bytes(Dtype::fp8) == 1.0);
  CHECK(dtype_bytes(Dtype::fp4) == 0.5);
  // m=2, n=3, k=4: A 8 and B 12 elements in, C 6 elements out.
  CHECK(gemm_bytes(Dtype::fp32, 2, 3, 4).v == (8 + 12) * 4.0 + 6 * 4.0);
  CHECK(gemm_bytes(Dtype::fp8, 2, 3, 4).v == (8 + 12) * 1.0 + 6 * 2.0);
  CHECK(gemm_bytes(Dtype::fp4, 2, 3, 4).v == (8 + 12) * 0.5 + 6 * 2.0);
}

TEST_CASE("a weight gradient accumulated into fp32 main_grad writes 4 bytes and reads them back") {
  // m=2, n=3, k=4 in fp8: A and B 20 bytes; C 6 fp32 elements written (24 bytes), read first on 3 of 4 calls.
  CHECK(gemm_bytes(Dtype::fp8, 2, 3, 4, GemmOutput{4.0, 0.0}).v == 20.0 + 24.0);
  CHECK(gemm_bytes(Dtype::fp8, 2, 3, 4, GemmOutput{4.0, 0.75}).v == 20.0 + 24.0 * 1.75);
  // Memory-bound: on a GPU with unbounded FLOPs the time is the bytes over HBM.
  Gpu g;
  g.name = "mem";
  g.peak[static_cast<int>(Dtype::bf16)] = FlopsPerSec(1e30);
  g.hbm_bw = BytesPerSec(1e9);
  const double plain = gemm_time(g, Dtype::bf16, 1000, 1000, 8).v;
  const double accum = gemm_time(g, Dtype::bf16, 1000, 1000, 8, Fp8Scaling::per_tensor, GemmOutput{4.0, 1.0}).v;
  CHECK(plain == doctest::Approx((2 * 8000 * 2.0 + 1e6 * 2.0) / 1e9).scale(0));
  CHECK(accum == doctest::Approx((2 * 8000 * 2.0 + 1e6 * 8.0) / 1e9).scale(0));
}

TEST_CASE("tiles: 128x256 on Hopper and later profile names, else 128x128") {
  Gpu g;
  for (const std::string name :
       {"h100-sxm5-80gb", "h200-sxm-141gb", "h800-sxm5-80gb", "gh200", "b200", "gb200", "b300"}) {
    CAPTURE(name);
    g.name = name;
    CHECK(gemm_tile(g).n == 256);
    CHECK(gemm_tile(g).m == 128);
  }
  for (const std::string name : {"a100-sxm4-80gb", "v100-sxm3-32gb", "mi300x", "synthetic"}) {
    CAPTURE(name);
    g.name = name;
    CHECK(gemm_tile(g).n == 128);
  }
}

TEST_CASE("wave quantization on a 4-SM synthetic GPU slows the compute term by tiles / (waves x SMs)") {
  Gpu g = test::synthetic_gpu();
  g.sm_count = 4;
  CHECK(wave_efficiency(g, 256, 256) == 1.0);          // 2 x 2 tiles: one full wave
  CHECK(wave_efficiency(g, 384, 256) == 6.0 / 8.0);    // 3 x 2 tiles: 2 waves of 4
  CHECK(wave_efficiency(g, 100, 100) == 1.0 / 4.0);    // a partial tile is a whole tile
  CHECK(wave_efficiency(g, 0, 100) == 1.0);            // degenerate shapes are not penalised
  // 384 x 256 x 8192 is compute-bound (intensity ~150 > 100): 2mnk / (peak x 0.75).
  CHECK(gemm_time(g, Dtype::bf16, 384, 256, 8192).v
      == doctest::Approx(2.0 * 384 * 256 * 8192 / (test::kPeak * 0.75)).scale(0));
}

TEST_CASE("efficiency fallbacks: missing curves mean the peak; kernel overhead adds") {
  Gpu g = test::synthetic_gpu();
  g.eff.gemm[static_cast<int>(Dtype::bf16)] = Curve{};
  g.eff.memory = Curve{};
  CHECK(gemm_efficiency(g, Dtype::bf16, 1e9) == 1.0);
  CHECK(memory_efficiency(g, 1e9) == 1.0);
  g.eff.gemm[static_cast<int>(Dtype::bf16)] = Curve::constant(0.5, "test");
  g.eff.kernel_overhead = us(4);
  const double flops = 2.0 * 4096 * 4096 * 4096;
  CHECK(gemm_time(g, Dtype::bf16, 4096, 4096, 4096).v == doctest::Approx(4e-6 + flops / (test::kPeak * 0.5)).scale(0));
}

}

TEST_SUITE("gemm_model grid") {

TEST_CASE("a measured grid is the whole GEMM table of its dtype: no wave model or depth factor on top") {
  Gpu g = test::synthetic_gpu();
  g.sm_count = 4;                                     // the wave model would cut 384 x 256 to 0.75
  g.eff.gemm_k = Curve::constant(0.5, "test");        // and the depth factor would halve it
  Grid3 grid;
  grid.m = {256, 1024};
  grid.n = {256};
  grid.k = {8192};
  grid.values = {0.4, 0.8};
  g.eff.gemm_grid[static_cast<int>(Dtype::bf16)] = grid;
  CHECK(gemm_shape_efficiency(g, Dtype::bf16, 512, 256, 8192) == doctest::Approx(0.6));
  CHECK(gemm_time(g, Dtype::bf16, 512, 256, 8192).v
      == doctest::Approx(2.0 * 512 * 256 * 8192 / (test::kPeak * 0.6)).scale(0));
  // fp8 has neither a grid nor a curve of its own: it falls back to bf16's grid, at its own peak.
  g.peak[static_cast<int>(Dtype::fp8)] = FlopsPerSec(2 * test::kPeak);
  CHECK(gemm_grid(g, Dtype::fp8) == &g.eff.gemm_grid[static_cast<int>(Dtype::bf16)]);
  // A dtype with its own FLOPs curve keeps it rather than borrowing bf16's grid.
  g.eff.gemm[static_cast<int>(Dtype::fp8)] = Curve::constant(0.3, "test");
  CHECK(gemm_grid(g, Dtype::fp8) == nullptr);
  CHECK(gemm_shape_efficiency(g, Dtype::fp8, 384, 256, 8192) == doctest::Approx(0.3 * 0.5 * 0.75));
}

TEST_CASE("block-scaled fp8: the fp8_block grid where the GPU has one, else its per-tensor fp8 tables") {
  Gpu g = test::synthetic_gpu();
  g.peak[static_cast<int>(Dtype::fp8)] = FlopsPerSec(2 * test::kPeak);
  Grid3 tensor, block;
  for (Grid3* x : {&tensor, &block}) {
    x->m = {1024};
    x->n = {1024};
    x->k = {1024};
  }
  tensor.values = {0.8};
  block.values = {0.5};
  g.eff.gemm_grid[static_cast<int>(Dtype::fp8)] = tensor;
  CHECK(!has_fp8_block_table(g));
  CHECK(gemm_grid(g, Dtype::fp8, Fp8Scaling::block) == &g.eff.gemm_grid[static_cast<int>(Dtype::fp8)]);
  g.eff.gemm_grid_fp8_block = block;
  CHECK(has_fp8_block_table(g));
  CHECK(gemm_grid(g, Dtype::fp8, Fp8Scaling::block) == &g.eff.gemm_grid_fp8_block);
  CHECK(gemm_grid(g, Dtype::fp8) == &g.eff.gemm_grid[static_cast<int>(Dtype::fp8)]);  // per tensor by default
  const double flops = 2.0 * 4096 * 4096 * 4096;
  CHECK(gemm_time(g, Dtype::fp8, 4096, 4096, 4096, Fp8Scaling::block).v ==
        doctest::Approx(flops / (2 * test::kPeak * 0.5)).scale(0));
  CHECK(gemm_time(g, Dtype::fp8, 4096, 4096, 4096).v == doctest::Approx(flops / (2 * test::kPeak * 0.8)).scale(0));
  // Other dtypes ignore the scaling.
  CHECK(gemm_grid(g, Dtype::bf16, Fp8Scaling::block) == gemm_grid(g, Dtype::bf16));
}

}
