#include "modeler/io/gpu_tables_io.h"

#include <doctest/doctest.h>

#include "modeler/gemm_model.h"
#include "modeler/io/system_io.h"
#include "modeler/problems.h"

using namespace shardplan;
using namespace shardplan::io;

namespace {

GpuProfile mini() {
  GpuProfile p;
  p.gpu.name = "mini";
  p.gpu.peak[static_cast<int>(Dtype::bf16)] = TFlops(100);
  return p;
}

// Line numbers matter for the error tests.
const std::string kTables = R"(schema_version: 1
kind: gpu_tables
gpu: mini
provenance: "test"
sources: ["test"]
gemm:
  bf16:
    m: [128, 1024]
    n: [256]
    k: [512, 4096]
    efficiency:
      - [[0.2, 0.4]]
      - [[0.6, 0.8]]
    source: "t"
attention:
  flash3: {fwd: {points: [[1.0e9, 0.3], [1.0e12, 0.5]], source: "t"}, bwd: {points: [[1.0e9, 0.25]], source: "t"}}
scale_up:
  latency_us: 2.5
  busbw_eff:
    all_reduce: {points: [[1.0e9, 0.99]], source: "t"}
    all_gather: {points: [[1.0e9, 0.7]], source: "t"}
)";

std::string replaced(std::string text, const std::string& from, const std::string& to) {
  const size_t at = text.find(from);
  REQUIRE(at != std::string::npos);
  return text.replace(at, from.size(), to);
}

}  // namespace

TEST_SUITE("gpu_tables_io") {

TEST_CASE("a tables file sets the GEMM grid, attention curves and per-collective scale-up tables") {
  GpuProfile p = mini();
  apply_gpu_tables(kTables, "t.yaml", &p);
  const Grid3& g = p.gpu.eff.gemm_grid[static_cast<int>(Dtype::bf16)];
  CHECK(g.values == std::vector<double>{0.2, 0.4, 0.6, 0.8});
  CHECK(g.at(1024, 256, 512) == doctest::Approx(0.6));
  CHECK(p.gpu.eff.attention_fwd[static_cast<int>(AttentionKernel::flash3)].at(1e12) == doctest::Approx(0.5));
  CHECK(p.node.scale_up.latency.v == doctest::Approx(2.5e-6).scale(0));
  CHECK(p.node.scale_up.busbw_eff_by[static_cast<int>(Collective::all_reduce)].y == std::vector<double>{0.99});
  CHECK(p.node.scale_up.busbw_eff_by[static_cast<int>(Collective::reduce_scatter)].empty());
}

TEST_CASE("tables errors name file, line and key") {
  GpuProfile p = mini();
  CHECK_THROWS_WITH_AS(apply_gpu_tables(replaced(kTables, "[[0.6, 0.8]]", "[[0.6]]"), "t.yaml", &p),
                       "t.yaml:13: gemm.bf16.efficiency[1][0]: expected 2 x 1 x 2 values (m, then n, then k)",
                       ConfigError);
  CHECK_THROWS_WITH_AS(apply_gpu_tables(replaced(kTables, "0.8]]", "80]]"), "t.yaml", &p),
                       "t.yaml:13: gemm.bf16.efficiency[1][0][1]: efficiency 80 is outside (0, 1.2]", ConfigError);
  CHECK_THROWS_WITH_AS(apply_gpu_tables(replaced(kTables, "k: [512, 4096]", "k: [4096, 512]"), "t.yaml", &p),
                       "t.yaml:10: gemm.bf16.k[1]: expected positive, strictly increasing numbers", ConfigError);
  CHECK_THROWS_WITH_AS(apply_gpu_tables(replaced(kTables, "  bf16:", "  fp8:"), "t.yaml", &p),
                       "t.yaml:8: gemm.fp8: a table for a dtype without a peak (the profile's peak_tflops.fp8 is "
                       "absent)",
                       ConfigError);
  CHECK_THROWS_AS(apply_gpu_tables(replaced(kTables, "all_gather:", "all_gathr:"), "t.yaml", &p), ConfigError);
}

TEST_CASE("shipped GPUs with measured tables load them; a cluster's calibrated GEMM curve replaces the grid") {
  for (const std::string name : {"a100-sxm4-80gb", "h100-sxm5-80gb", "h200-sxm-141gb", "b200", "gb200", "b300",
                                 "gb300", "h100-sxm5-96gb"}) {
    CAPTURE(name);
    const GpuProfile p = load_gpu_profile(name);
    CHECK(!p.gpu.eff.gemm_grid[static_cast<int>(Dtype::bf16)].empty());
    CHECK(!p.node.scale_up.busbw_eff_by[static_cast<int>(Collective::all_gather)].empty());
  }
  CHECK(!load_gpu_profile("b200").gpu.eff.gemm_grid[static_cast<int>(Dtype::fp4)].empty());
  const System s = parse_cluster(R"(schema_version: 1
kind: cluster
name: cal
gpu: h100-sxm5-80gb
gpu_overrides:
  efficiency:
    gemm:
      bf16: {points: [[1.0e12, 0.5]], source: "calibration"}
provenance: "calibrated"
sources: ["test"]
)",
                                 "cal.yaml", 8);
  CHECK(s.gpu.eff.gemm_grid[static_cast<int>(Dtype::bf16)].empty());
  CHECK(!s.gpu.eff.gemm_grid[static_cast<int>(Dtype::fp8)].empty());
  CHECK(gemm_shape_efficiency(s.gpu, Dtype::bf16, 8192, 8192, 8192) < 0.51);
}

}
