#include "calibrate/fit_runs_profile.h"

#include <doctest/doctest.h>

#include <string>

#include "modeler/io/system_io.h"

using namespace shardplan;
using namespace shardplan::calibrate;

namespace {

/// A fit as fit_runs returns one, made by hand: the writer's input, without running a fit.
RunsFit a_fit(const io::PublishedRun* run) {
  RunsFit f;
  f.params.push_back({{FitParameter::gemm_scale, Dtype::bf16, ""}, 1.0, 0.8, 0.75, 0.85, 0.9, false});
  f.params.push_back({{FitParameter::busbw_scale, Dtype::bf16, "nvlink"}, 1.0, 0.9, 0.7, 1.1, 0.3, false});
  f.params.push_back({{FitParameter::overlap_efficiency, Dtype::bf16, ""}, 1.0, 0.85, 0.6, 1.1, 0.2, false});
  f.params.push_back({{FitParameter::kernel_overhead_us, Dtype::bf16, ""}, 4.0, 6.5, 1.0, 12.0, 0.4, false});
  f.memory_reserve_gib = 1.5;
  RunFitRow row;
  row.run = run;
  row.measured = 100;
  row.fitted_predicted = 102;
  row.loo_predicted = 104;
  f.rows = {row, row};
  f.not_fitted = {"busbw_scale.infiniband (no run's step time depends on it)"};
  return f;
}

}  // namespace

TEST_SUITE("fit_runs_profile") {

TEST_CASE("the profile inherits the base, loads, applies each fitted value and records the runs") {
  io::PublishedRun run;
  run.id = "my_run_1";
  const RunsFit fit = a_fit(&run);
  FitRunsProfileSpec spec{"mine", "dgx-h100", "runs.yaml", "2026-12-01", {}};
  const std::string text = emit_fit_runs_profile(spec, fit);
  CHECK(text.find("inherits: dgx-h100") != std::string::npos);
  CHECK(text.find("my_run_1") != std::string::npos);
  CHECK(text.find("gemm_scale.bf16: 1 -> 0.8 [0.75, 0.85] (90%)") != std::string::npos);
  CHECK(text.find("not fitted, the base's value kept: busbw_scale.infiniband") != std::string::npos);
  const System base = io::load_system("dgx-h100", 0);
  const System s = io::parse_cluster(text, "mine.yaml", 0);
  CHECK(s.overlap_efficiency == doctest::Approx(0.85));
  CHECK(to_GiB(s.memory_reserve) == doctest::Approx(1.5));
  CHECK(s.gpu.eff.kernel_overhead.v == doctest::Approx(6.5e-6).scale(0));
  CHECK(s.tiers[0].busbw_eff.at(1e8) == doctest::Approx(0.9 * base.tiers[0].busbw_eff.at(1e8)));
  CHECK(s.tiers[1].busbw_eff.at(1e8) == doctest::Approx(base.tiers[1].busbw_eff.at(1e8)));
  const Grid3& g = s.gpu.eff.gemm_grid[static_cast<size_t>(Dtype::bf16)];
  const Grid3& g0 = base.gpu.eff.gemm_grid[static_cast<size_t>(Dtype::bf16)];
  REQUIRE_FALSE(g.empty());
  CHECK(g.at(4096, 4096, 4096) == doctest::Approx(0.8 * g0.at(4096, 4096, 4096)));
  REQUIRE(s.fit_loo_errors_pct.size() == 2);
  CHECK(s.fit_loo_errors_pct[0] == doctest::Approx(4.0));
}

TEST_CASE("--accept-anyway is recorded in the provenance") {
  io::PublishedRun run;
  run.id = "r";
  FitRunsProfileSpec spec{"mine", "dgx-h100", "runs.yaml", "2026-12-01", {"gemm_scale.bf16: the runs need 3"}};
  const std::string text = emit_fit_runs_profile(spec, a_fit(&run));
  CHECK(text.find("ACCEPTED WITH --accept-anyway DESPITE: gemm_scale.bf16: the runs need 3") != std::string::npos);
}

TEST_CASE("parameters_text lists value and interval") {
  io::PublishedRun run;
  const std::string t = parameters_text(a_fit(&run));
  CHECK(t.find("gemm_scale.bf16 0.8 [0.75, 0.85]") != std::string::npos);
  CHECK(t.find("memory_reserve_gib 1.5") != std::string::npos);
}

}
