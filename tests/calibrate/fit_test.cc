#include "calibrate/fit.h"

#include <doctest/doctest.h>

#include <cmath>

#include "modeler/collectives.h"
#include "modeler/gemm_model.h"
#include "modeler/problems.h"

using namespace shardplan;
using namespace shardplan::calibrate;

namespace {

System test_system() {
  System s;
  s.name = "test";
  s.gpu.name = "h100-test";
  s.gpu.peak[static_cast<int>(Dtype::bf16)] = TFlops(1000);
  s.gpu.hbm_bw = GBps(3000);
  s.gpu.sm_count = 132;
  s.gpus = 16;
  s.gpus_per_node = 8;
  Tier nv;
  nv.name = "nvlink";
  nv.domain_gpus = 8;
  nv.bw_per_gpu = GBps(450);
  nv.latency = us(3);
  nv.busbw_eff = Curve::constant(0.8, "datasheet");
  Tier ib;
  ib.name = "infiniband";
  ib.bw_per_gpu = GBps(50);
  ib.latency = us(14);
  ib.busbw_eff = Curve::constant(0.85, "datasheet");
  s.tiers = {nv, ib};
  return s;
}

/// Deterministic +-1% multiplicative noise.
double noise(int i) { return 1.0 + 0.01 * std::sin(1.7 * i); }

}  // namespace

TEST_SUITE("calibrate.fit") {

TEST_CASE("alpha-beta fit recovers known latency and bandwidth within 2% from noisy synthetic data") {
  // t = 12 us + bus_bytes / 370 GB/s, the nccl-tests model of an 8-GPU NVLink all-reduce, with 1% noise.
  const double alpha = 12e-6, bw = 370e9;
  std::vector<double> x, t;
  int i = 0;
  for (double s = 1024; s <= 4.0 * (1 << 30); s *= 2, ++i) {
    const double bus = s * bus_bw_factor(Collective::all_reduce, 8);
    x.push_back(bus);
    t.push_back((alpha + bus / bw) * noise(i));
  }
  const AlphaBeta ab = fit_alpha_beta(x, t);
  CHECK(ab.alpha_s == doctest::Approx(alpha).epsilon(0.02).scale(0));
  CHECK(ab.bw_Bps == doctest::Approx(bw).epsilon(0.02));
}

TEST_CASE("tier fit from collective rows of several kinds: latency, bandwidth, and rows placed by group span") {
  // The predictor's model (modeler/collectives.h): latency per ring step, 2(n-1) steps for all-reduce, n-1 else.
  const System base = test_system();
  const double alpha = 1e-6, bw = 360e9;
  std::vector<Measurement> rows;
  int i = 0;
  for (const Collective c : {Collective::all_reduce, Collective::all_gather, Collective::reduce_scatter}) {
    for (double s = 4096; s <= 1.0 * (1 << 30); s *= 4, ++i) {
      Measurement m;
      m.bench = Bench::collective;
      m.collective = c;
      m.nranks = 8;
      m.bytes = s;
      m.time_s = (alpha * latency_steps(c, 8, false) + s * bus_bw_factor(c, 8) / bw) * noise(i);
      rows.push_back(m);
    }
  }
  Measurement far = rows.back();  // 8 ranks 2 apart span 15 GPUs: the infiniband tier
  far.stride = 2;
  far.time_s = 1.0;
  const Fit fit = fit_all(rows, base, "cal");
  REQUIRE(fit.tiers.size() == 1);
  CHECK(fit.tiers[0].tier == 0);
  CHECK(fit.tiers[0].ab.alpha_s == doctest::Approx(alpha).epsilon(0.02).scale(0));
  CHECK(fit.tiers[0].ab.bw_Bps == doctest::Approx(bw).epsilon(0.02));
  CHECK(fit.tiers[0].busbw_eff.at(1 << 30) == doctest::Approx(360.0 / 450).epsilon(0.02).scale(0));
  CHECK(fit.tiers[0].res.median_rel < 0.02);
  rows.push_back(far);
  CHECK_THROWS_WITH_AS(fit_all(rows, base, "cal"), "alpha-beta fit needs at least 2 sizes, got 1", ConfigError);
}

TEST_CASE("monotone_curve: octave bins, medians, pool-adjacent-violators") {
  const Curve c = monotone_curve({1, 1, 2, 4, 8}, {0.5, 0.7, 0.5, 0.4, 0.9}, "s");
  // bin 1: median 0.6; bins 2 and 4 (0.5, 0.4) violate and pool with it: (0.6*2 + 0.5 + 0.4) / 4 = 0.525.
  REQUIRE(c.x.size() == 2);
  CHECK(c.y[0] == doctest::Approx(0.525));
  CHECK(c.y[1] == doctest::Approx(0.9));
  CHECK(c.x[1] == 8);
  CHECK(c.source == "s");
}

TEST_CASE("GEMM and memory fits invert the predictor's formula, so predicting measured shapes reproduces them") {
  System truth = test_system();
  truth.gpu.eff.kernel_overhead = us(4);
  truth.gpu.eff.memory = Curve::constant(0.9, "truth");
  truth.gpu.eff.gemm[static_cast<int>(Dtype::bf16)] = Curve{{1e9, 1e12}, {0.4, 0.8}, OutOfRange::clamp, "truth"};
  std::vector<Measurement> rows;
  for (double b = 1 << 20; b <= 4.0 * (1 << 30); b *= 2) {
    Measurement m;
    m.bench = Bench::memory;
    m.op = "copy";
    m.bytes = b;
    m.time_s = 4e-6 + b / (3000e9 * 0.9);
    rows.push_back(m);
  }
  for (const double d : {1024.0, 2048.0, 4096.0, 8192.0}) {
    Measurement m;
    m.bench = Bench::gemm;
    m.m = m.n = m.k = d;
    m.flops = 2 * d * d * d;
    m.time_s = gemm_time(truth.gpu, Dtype::bf16, d, d, d).v;
    rows.push_back(m);
  }
  const Fit fit = fit_all(rows, test_system(), "cal");
  REQUIRE(fit.gpu.kernel_overhead_s);
  CHECK(*fit.gpu.kernel_overhead_s == doctest::Approx(4e-6).epsilon(0.01).scale(0));
  CHECK(fit.gpu.memory->at(1e9) == doctest::Approx(0.9).epsilon(0.01).scale(0));
  CHECK(fit.gpu.res.at("gemm bf16").max_rel < 0.01);
  CHECK(fit.gpu.res.at("memory").max_rel < 0.01);
}

TEST_CASE("the GEMM fit divides out the profile's reduction-depth factor, so shapes of every k reproduce") {
  const Curve depth{{512, 4096}, {0.7, 1.0}, OutOfRange::clamp, "depth"};
  System truth = test_system();
  truth.gpu.eff.kernel_overhead = us(4);
  truth.gpu.eff.memory = Curve::constant(0.9, "truth");
  truth.gpu.eff.gemm[static_cast<int>(Dtype::bf16)] = Curve{{1e9, 1e12}, {0.4, 0.8}, OutOfRange::clamp, "truth"};
  truth.gpu.eff.gemm_k = depth;
  std::vector<Measurement> rows;
  // Equal FLOPs at different depths: 8192 x 8192 x 512 and 2048 x 2048 x 8192.
  for (const auto& [mn, k] : {std::pair{8192.0, 512.0}, std::pair{2048.0, 8192.0}, std::pair{4096.0, 1024.0}}) {
    Measurement m;
    m.bench = Bench::gemm;
    m.m = m.n = mn;
    m.k = k;
    m.flops = 2 * mn * mn * k;
    m.time_s = gemm_time(truth.gpu, Dtype::bf16, mn, mn, k).v;
    rows.push_back(m);
  }
  System base = test_system();
  base.gpu.eff.kernel_overhead = us(4);
  base.gpu.eff.memory = Curve::constant(0.9, "truth");
  base.gpu.eff.gemm_k = depth;
  const Fit fit = fit_all(rows, base, "cal");
  CHECK(fit.gpu.res.at("gemm bf16").max_rel < 0.01);
  // Without dividing it out, the two equal-FLOPs rows would disagree by 0.7 and could not both reproduce.
  base.gpu.eff.gemm_k = Curve{};
  CHECK(fit_all(rows, base, "cal").gpu.res.at("gemm bf16").max_rel > 0.1);
}

TEST_CASE("attention rows of our reference kernel are not written as a production kernel's table") {
  Measurement m;
  m.bench = Bench::attention;
  m.kernel = "reference";
  m.backend = "shardplan-reference";
  m.flops = 1e12;
  m.time_s = 0.01;
  const Fit fit = fit_all({m}, test_system(), "cal");
  CHECK(fit.gpu.attention.empty());
  CHECK(fit.gpu.notes == std::vector<std::string>{"attention rows from kernel 'reference' (backend "
                                                  "shardplan-reference) are not a production fused kernel; not "
                                                  "written to the profile"});
}

}
