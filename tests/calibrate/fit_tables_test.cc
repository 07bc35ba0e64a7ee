#include "calibrate/fit_tables.h"

#include <doctest/doctest.h>

#include "calibrate/tables_writer.h"
#include "modeler/collectives.h"
#include "modeler/gemm_model.h"
#include "modeler/io/gpu_tables_io.h"
#include "modeler/problems.h"

using namespace shardplan;
using namespace shardplan::calibrate;

namespace {

System base() {
  System s;
  s.name = "test";
  s.gpu.name = "test-gpu";
  s.gpu.peak[static_cast<int>(Dtype::bf16)] = TFlops(1000);
  s.gpu.hbm_bw = GBps(3000);
  s.gpu.sm_count = 132;
  s.gpu.eff.kernel_overhead = us(4);
  s.gpus = 8;
  s.gpus_per_node = 8;
  Tier nv;
  nv.name = "nvlink";
  nv.domain_gpus = 8;
  nv.bw_per_gpu = GBps(450);
  nv.latency = us(3);
  nv.busbw_eff = Curve::constant(0.8, "test");
  Tier ib = nv;
  ib.name = "infiniband";
  ib.domain_gpus = 0;
  ib.bw_per_gpu = GBps(50);
  ib.latency = us(14);
  s.tiers = {nv, ib};
  return s;
}

Measurement gemm(double m, double n, double k, double eff) {
  Measurement r;
  r.bench = Bench::gemm;
  r.dtype = Dtype::bf16;
  r.m = m;
  r.n = n;
  r.k = k;
  r.flops = 2 * m * n * k;
  r.time_s = 4e-6 + r.flops / (1000e12 * eff);
  return r;
}

Measurement coll(Collective c, int nranks, double bytes, double busbw_gbps) {
  Measurement r;
  r.bench = Bench::collective;
  r.collective = c;
  r.nranks = nranks;
  r.bytes = bytes;
  r.time_s = 3e-6 * latency_steps(c, nranks, false) + bytes * bus_bw_factor(c, nranks) / (busbw_gbps * 1e9);
  return r;
}

}  // namespace

TEST_SUITE("fit_tables") {

TEST_CASE("the GEMM grid reproduces the measured compute-bound shapes; a missing cell takes its nearest neighbour") {
  const std::vector<Measurement> rows = {gemm(4096, 4096, 4096, 0.7), gemm(4096, 4096, 8192, 0.75),
                                         gemm(8192, 4096, 4096, 0.72)};  // (8192, 4096, 8192) not measured
  const TablesFit fit = fit_tables(rows, base(), "test");
  REQUIRE(fit.gemm.count(Dtype::bf16));
  const Grid3& g = fit.gemm.at(Dtype::bf16);
  CHECK(g.m == std::vector<double>{4096, 8192});
  CHECK(g.k == std::vector<double>{4096, 8192});
  CHECK(g.at(4096, 4096, 8192) == doctest::Approx(0.75));
  // Two cells at log distance ln 2; the tie goes to the first in (m, n, k) order, (4096, 4096, 8192).
  CHECK(g.at(8192, 4096, 8192) == doctest::Approx(0.75));
  CHECK(fit.res.at("gemm bf16").max_rel < 1e-9);
  CHECK(fit.notes == std::vector<std::string>{"gemm bf16: 1 grid cells not measured, filled from the nearest "
                                              "measured shape"});
}

TEST_CASE("scale-up collectives: one latency, a busbw curve per collective from its largest group") {
  std::vector<Measurement> rows;
  for (double s = 1 << 20; s <= (1 << 29); s *= 4) {
    rows.push_back(coll(Collective::all_reduce, 8, s, 440));
    rows.push_back(coll(Collective::all_gather, 8, s, 315));
    rows.push_back(coll(Collective::all_gather, 2, s, 100));  // a smaller group: not what the tier's curve holds
  }
  const TablesFit fit = fit_tables(rows, base(), "test");
  REQUIRE(fit.scale_up_latency_s);
  CHECK(*fit.scale_up_latency_s == doctest::Approx(3e-6).epsilon(0.05).scale(0));
  CHECK(fit.busbw.at(Collective::all_reduce).y.back() == doctest::Approx(440.0 / 450).epsilon(0.01).scale(0));
  CHECK(fit.busbw.at(Collective::all_gather).y.back() == doctest::Approx(0.7).epsilon(0.01).scale(0));
  CHECK(fit.res.at("scale_up all_gather").median_rel < 0.01);
}

TEST_CASE("attention: the forward curve is measured, the backward one derived, and the writer's file loads") {
  std::vector<Measurement> rows;
  for (double f = 1e10; f <= 1e13; f *= 10) {
    Measurement r;
    r.bench = Bench::attention;
    r.kernel = "flash3";
    r.flops = f;
    r.time_s = 4e-6 + f / (1000e12 * 0.5);
    rows.push_back(r);
  }
  rows.push_back(gemm(4096, 4096, 4096, 0.7));
  const TablesFit fit = fit_tables(rows, base(), "test");
  REQUIRE(fit.attention_kernel == AttentionKernel::flash3);
  CHECK(fit.attention_fwd.at(1e12) == doctest::Approx(0.5));
  CHECK(fit.attention_bwd.at(2.5e12) == doctest::Approx(0.5 * kAttentionBwdOverFwd));
  rows.back().kernel = "reference";
  rows.back().bench = Bench::attention;
  CHECK_THROWS_AS(fit_tables(rows, base(), "test"), ConfigError);

  const std::string text = emit_tables({"test-gpu", "unit test", {"test"}}, fit);
  io::GpuProfile p;
  p.gpu = base().gpu;
  io::apply_gpu_tables(text, "written.yaml", &p);
  CHECK(p.gpu.eff.gemm_grid[static_cast<int>(Dtype::bf16)].at(4096, 4096, 4096) == doctest::Approx(0.7));
  CHECK(p.gpu.eff.attention_fwd[static_cast<int>(AttentionKernel::flash3)].at(1e12) == doctest::Approx(0.5));
}

TEST_CASE("block-scaled fp8 rows: a grid of their own beside fp8's, written as fp8_block, loaded for blockwise GEMMs") {
  System b = base();
  b.gpu.peak[static_cast<int>(Dtype::fp8)] = TFlops(2000);
  b.gpu.hbm_bw = GBps(1e9);  // the per-call quantisation of x in each row: one kernel launch (4 us), no bytes
  const auto fp8 = [](double eff, bool block) {
    Measurement r = gemm(4096, 4096, 4096, 1.0);
    r.dtype = Dtype::fp8;
    r.block_scaled = block;
    r.time_s = 4e-6 + 4e-6 + r.flops / (2000e12 * eff);  // quantise x, then the GEMM
    return r;
  };
  const TablesFit fit = fit_tables({fp8(0.7, false), fp8(0.5, true)}, b, "test");
  REQUIRE(fit.gemm.count(Dtype::fp8));
  REQUIRE(!fit.gemm_fp8_block.empty());
  CHECK(fit.gemm.at(Dtype::fp8).at(4096, 4096, 4096) == doctest::Approx(0.7).epsilon(1e-4).scale(0));
  CHECK(fit.gemm_fp8_block.at(4096, 4096, 4096) == doctest::Approx(0.5).epsilon(1e-4).scale(0));
  CHECK(fit.res.count("gemm fp8_block"));
  CHECK(fit.res.at("gemm fp8_block").max_rel < 1e-4);

  const std::string text = emit_tables({"test-gpu", "unit test", {"test"}}, fit);
  CHECK(text.find("fp8_block:") != std::string::npos);
  io::GpuProfile p;
  p.gpu = b.gpu;
  io::apply_gpu_tables(text, "written.yaml", &p);
  CHECK(p.gpu.eff.gemm_grid[static_cast<int>(Dtype::fp8)].at(4096, 4096, 4096) ==
        doctest::Approx(0.7).epsilon(1e-3).scale(0));
  CHECK(p.gpu.eff.gemm_grid_fp8_block.at(4096, 4096, 4096) == doctest::Approx(0.5).epsilon(1e-3).scale(0));
  // A GPU without an fp8 peak cannot take a block-scaled fp8 table.
  io::GpuProfile no_fp8;
  no_fp8.gpu = base().gpu;
  CHECK_THROWS_WITH_AS(io::apply_gpu_tables(text, "written.yaml", &no_fp8),
                       doctest::Contains("peak_tflops.fp8 is absent"), ConfigError);
}

}
