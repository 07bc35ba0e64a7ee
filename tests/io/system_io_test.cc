#include "modeler/io/system_io.h"

#include <doctest/doctest.h>

#include "modeler/io/paths.h"
#include "modeler/io/yaml_reader.h"
#include "modeler/problems.h"

using namespace shardplan;
using namespace shardplan::io;

namespace {

// A minimal valid GPU profile; line numbers matter for the error-message tests below.
const std::string kMiniGpu = R"(schema_version: 1
kind: gpu
name: mini
sources: ["test"]
peak_tflops: {bf16: 100, fp8: 200}
hbm_capacity_gib: 10
hbm_bw_gbps: 1000
l2_mib: 8
sm_count: 10
host_link_gbps: 32
efficiency:
  gemm:
    bf16: {points: [[1.0e9, 0.5], [1.0e12, 0.8]], source: "t"}
  attention:
    flash2: {fwd: {points: [[1, 0.6]], source: "t"}, bwd: {points: [[1, 0.5]], source: "t"}}
  memory: {points: [[1, 0.9]], source: "t"}
  kernel_overhead_us: 4
  kernel_overhead_source: "t"
node:
  gpus_per_node: 8
  scale_up: {name: nvlink, domain_gpus: 8, bw_per_gpu_gbps: 450, latency_us: 3.4,
             busbw_eff: {points: [[1, 0.8]], source: "t"}, sources: ["t"]}
scale_out: {name: ib, bw_per_gpu_gbps: 50, latency_us: 14,
            busbw_eff: {points: [[1, 0.86]], source: "t"}, sources: ["t"]}
host_memory_gib_per_gpu: 256
)";

std::string replaced(std::string text, const std::string& from, const std::string& to) {
  const size_t at = text.find(from);
  REQUIRE(at != std::string::npos);
  return text.replace(at, from.size(), to);
}

}  // namespace

TEST_CASE("every shipped GPU profile parses and is named after its file") {
  const auto names = list_data_files("hwprofiles/gpus", {".yaml"});
  CHECK(names.size() >= 26);
  for (const std::string& name : names) {
    CAPTURE(name);
    const GpuProfile p = load_gpu_profile(name);
    CHECK(p.gpu.name == name);
    CHECK(!p.gpu.eff.gemm[static_cast<size_t>(Dtype::bf16)].empty());
  }
}

TEST_CASE("every shipped cluster parses at its default size") {
  const auto names = list_data_files("hwprofiles/clusters", {".yaml"});
  CHECK(names.size() >= 8);
  for (const std::string& name : names) {
    CAPTURE(name);
    const System s = load_system(name, 0);
    CHECK(s.name == name);
    CHECK(s.gpus > 0);
    CHECK(s.tiers.size() >= 2);
    CHECK(s.tiers.back().domain_gpus == 0);
  }
}

TEST_CASE("the mini GPU profile reads with units converted once") {
  const GpuProfile p = parse_gpu_profile(kMiniGpu, "mini.yaml");
  CHECK(p.gpu.peak_for(Dtype::bf16).v == doctest::Approx(100e12));
  CHECK(p.gpu.peak_for(Dtype::fp16).v == 0);  // absent = not supported
  CHECK(p.gpu.hbm_capacity.v == doctest::Approx(10.0 * 1024 * 1024 * 1024));
  CHECK(p.gpu.hbm_bw.v == doctest::Approx(1000e9));
  CHECK(p.gpu.eff.kernel_overhead.v == doctest::Approx(4e-6).scale(0));
  CHECK(p.gpu.eff.attention_fwd[1].empty());  // no flash3
  CHECK(p.node.scale_up.latency.v == doctest::Approx(3.4e-6).scale(0));
  CHECK(p.node.scale_out.domain_gpus == 0);
}

TEST_CASE("compute_capability: optional major.minor; 0 when absent; out of range or two minor digits refused") {
  CHECK(parse_gpu_profile(kMiniGpu, "mini.yaml").gpu.compute_capability == 0);
  const std::string with = replaced(kMiniGpu, "sm_count: 10\n", "sm_count: 10\ncompute_capability: 7.5\n");
  CHECK(parse_gpu_profile(with, "mini.yaml").gpu.compute_capability == doctest::Approx(7.5));
  CHECK_THROWS_WITH_AS(parse_gpu_profile(replaced(with, "7.5", "75"), "mini.yaml"),
                       doctest::Contains("mini.yaml:10: compute_capability"), ConfigError);
  CHECK_THROWS_WITH_AS(parse_gpu_profile(replaced(with, "7.5", "7.55"), "mini.yaml"),
                       doctest::Contains("mini.yaml:10: compute_capability: expected major.minor"), ConfigError);
  // The shipped consumer profiles state theirs (NVIDIA, developer.nvidia.com/cuda-gpus).
  CHECK(load_gpu_profile("rtx-2080").gpu.compute_capability == doctest::Approx(7.5));
  CHECK(load_gpu_profile("rtx-3090").gpu.compute_capability == doctest::Approx(8.6));
  CHECK(load_gpu_profile("rtx-4080").gpu.compute_capability == doctest::Approx(8.9));
}

TEST_CASE("unified_memory: no host link; host_link_gbps required without it and refused with it") {
  CHECK_FALSE(parse_gpu_profile(kMiniGpu, "mini.yaml").gpu.unified_memory);
  const std::string unified = replaced(kMiniGpu, "host_link_gbps: 32\n", "unified_memory: true\n");
  const Gpu g = parse_gpu_profile(unified, "mini.yaml").gpu;
  CHECK(g.unified_memory);
  CHECK(g.host_link_bw.v == 0);
  CHECK_THROWS_WITH_AS(parse_gpu_profile(replaced(kMiniGpu, "host_link_gbps: 32\n", ""), "mini.yaml"),
                       doctest::Contains("host_link_gbps"), ConfigError);
  CHECK_THROWS_WITH_AS(
      parse_gpu_profile(replaced(kMiniGpu, "host_link_gbps: 32\n", "host_link_gbps: 32\nunified_memory: true\n"),
                        "mini.yaml"),
      doctest::Contains("mini.yaml:10: host_link_gbps: a unified_memory part has no host link"), ConfigError);
  CHECK_THROWS_WITH_AS(parse_gpu_profile(replaced(kMiniGpu, "host_link_gbps: 32\n", "unified_memory: 3\n"),
                                         "mini.yaml"),
                       doctest::Contains("unified_memory"), ConfigError);
  // The shipped Apple profiles are unified; the NVIDIA ones keep their PCIe link.
  for (const char* apple : {"apple-m1-max-32c", "apple-m2-ultra-76c", "apple-m3-max-40c"}) {
    CAPTURE(apple);
    const Gpu a = load_gpu_profile(apple).gpu;
    CHECK(a.unified_memory);
    CHECK(a.peak_for(Dtype::fp16).v == doctest::Approx(a.peak_for(Dtype::fp32).v));  // fp16 at the fp32 rate
    CHECK(a.peak_for(Dtype::bf16).v == doctest::Approx(a.peak_for(Dtype::fp16).v));  // stored as bf16, as t4's
    CHECK(a.peak_for(Dtype::fp8).v == 0);
  }
  const Gpu rtx5090 = load_gpu_profile("rtx-5090").gpu;
  CHECK_FALSE(rtx5090.unified_memory);
  CHECK(rtx5090.host_link_bw.v == doctest::Approx(63.0e9));
  CHECK(rtx5090.compute_capability == doctest::Approx(12.0));
}

TEST_CASE("the optional reduction-depth GEMM table reads like the other efficiency tables") {
  CHECK(parse_gpu_profile(kMiniGpu, "mini.yaml").gpu.eff.gemm_k.empty());
  const std::string with_k = replaced(kMiniGpu, "  attention:\n",
                                      "  gemm_k: {points: [[512, 0.87], [4096, 1.04]], source: \"t\"}\n  attention:\n");
  const Gpu g = parse_gpu_profile(with_k, "mini.yaml").gpu;
  CHECK(g.eff.gemm_k.at(512) == doctest::Approx(0.87));
  CHECK(g.eff.gemm_k.at(8192) == doctest::Approx(1.04));
  CHECK_THROWS_WITH_AS(parse_gpu(replaced(with_k, "[4096, 1.04]", "[4096, 104]"), "mini.yaml"),
                       "mini.yaml:14: efficiency.gemm_k.points[1]: efficiency 104 is outside (0, 1.2]", ConfigError);
  // The shipped Hopper profiles carry OpenXLA's sm_90 table.
  const Gpu h100 = load_gpu_profile("h100-sxm5-80gb").gpu;
  CHECK(h100.eff.gemm_k.at(512) == doctest::Approx(0.866));
}

TEST_CASE("a DGX H100 at 64 GPUs: NVLink inside the node, InfiniBand across") {
  const System s = load_system("dgx-h100", 64);
  CHECK(s.gpus == 64);
  CHECK(s.gpus_per_node == 8);
  REQUIRE(s.tiers.size() == 2);
  CHECK(s.tiers[0].name == "nvlink");
  CHECK(s.tiers[0].bw_per_gpu.v == doctest::Approx(450e9));
  CHECK(s.tiers[1].bw_per_gpu.v == doctest::Approx(50e9));
  CHECK(s.gpu.peak_for(Dtype::bf16).v == doctest::Approx(989.4e12));
  CHECK(s.provenance == "datasheet defaults");
}

TEST_CASE("inherits and gpu_overrides deep-merge: maps key by key, lists replace") {
  const std::string text = R"(schema_version: 1
kind: cluster
name: dgx-h100-calibrated
inherits: dgx-h100
default_gpus: 16
gpu_overrides:
  sources: ["calibration run"]
  efficiency:
    gemm:
      bf16: {points: [[1.0e9, 0.5], [1.0e12, 0.75]], policy: error, source: "calibrated: test"}
provenance: "calibrated: 2025-01-01 testhost"
)";
  const System s = parse_cluster(text, "calibrated.yaml", 0);
  CHECK(s.name == "dgx-h100-calibrated");
  CHECK(s.gpus == 16);
  CHECK(s.gpus_per_node == 8);                              // inherited from dgx-h100
  CHECK(s.host_memory_per_gpu.v == doctest::Approx(256.0 * 1024 * 1024 * 1024));
  CHECK(s.provenance == "calibrated: 2025-01-01 testhost");  // replaced
  CHECK(s.gpu.name == "h100-sxm5-80gb");
  const Curve& bf16 = s.gpu.eff.gemm[static_cast<size_t>(Dtype::bf16)];
  CHECK(bf16.x.size() == 2);
  CHECK(bf16.policy == OutOfRange::error);
  const Gpu base = load_gpu("h100-sxm5-80gb");
  const Curve& base_fp8 = base.eff.gemm[static_cast<size_t>(Dtype::fp8)];
  CHECK(!base_fp8.empty());
  CHECK(s.gpu.eff.gemm[static_cast<size_t>(Dtype::fp8)].y == base_fp8.y);  // sibling kept
  CHECK(!s.gpu.eff.attention_fwd[1].empty());                                               // other maps kept
  CHECK(s.gpu.hbm_bw.v == doctest::Approx(3350e9));
  CHECK(s.gpu.sources == std::vector<std::string>{"calibration run"});  // a list replaces
  CHECK(s.tiers.size() == 2);
}

TEST_CASE("errors name file, line and key, verbatim") {
  SUBCASE("malformed YAML") {
    CHECK_THROWS_WITH_AS(parse_gpu("name: [1, 2\nkind: gpu\n", "bad.yaml"),
                         "bad.yaml:2:5: invalid YAML: end of sequence flow not found", ConfigError);
  }
  SUBCASE("unknown key with a suggestion, before the missing key it stands for") {
    CHECK_THROWS_WITH_AS(parse_gpu(replaced(kMiniGpu, "hbm_bw_gbps", "hbm_bw_gpbs"), "mini.yaml"),
                         "mini.yaml:7: unknown key 'hbm_bw_gpbs', did you mean 'hbm_bw_gbps'?",
                         ConfigError);
  }
  SUBCASE("unknown key deep in a table") {
    CHECK_THROWS_WITH_AS(parse_gpu(replaced(kMiniGpu, "bf16: {points", "bf61: {points"), "mini.yaml"),
                         "mini.yaml:13: unknown key 'efficiency.gemm.bf61', did you mean 'bf16'?",
                         ConfigError);
  }
  SUBCASE("negative bandwidth") {
    CHECK_THROWS_WITH_AS(parse_gpu(replaced(kMiniGpu, "hbm_bw_gbps: 1000", "hbm_bw_gbps: -1000"), "mini.yaml"),
                         "mini.yaml:7: hbm_bw_gbps: expected a positive number, got -1000", ConfigError);
  }
  SUBCASE("GEMM efficiency above 1.2, reported together with other range problems") {
    std::string text = replaced(kMiniGpu, "[1.0e12, 0.8]", "[1.0e12, 80]");
    text = replaced(text, "memory: {points: [[1, 0.9]]", "memory: {points: [[1, 1.3]]");
    CHECK_THROWS_WITH_AS(parse_gpu(text, "mini.yaml"),
                         "mini.yaml:13: efficiency.gemm.bf16.points[1]: efficiency 80 is outside (0, 1.2]\n"
                         "mini.yaml:16: efficiency.memory.points[0]: efficiency 1.3 is outside (0, 1.2]",
                         ConfigError);
  }
  SUBCASE("missing bf16 GEMM table") {
    CHECK_THROWS_WITH_AS(parse_gpu(replaced(kMiniGpu, "bf16: {points", "fp8: {points"), "mini.yaml"),
                         "mini.yaml:13: efficiency.gemm: missing required key 'efficiency.gemm.bf16'",
                         ConfigError);
  }
  SUBCASE("gpus not a multiple of gpus_per_node") {
    const std::string dgx_h100 = read_file(resolve_data_file("dgx-h100", "hwprofiles/clusters", {".yaml"}, "cluster"));
    CHECK_THROWS_WITH_AS(parse_cluster(dgx_h100, "dgx-h100.yaml", 12),
                         "dgx-h100.yaml:7: gpus (12) is not a multiple of gpus_per_node (8)", ConfigError);
  }
  SUBCASE("an inner tier without a bound") {
    const std::string text = R"(schema_version: 1
kind: cluster
name: x
gpu: h100-sxm5-80gb
tiers:
  - {name: nvlink, bw_per_gpu_gbps: 450, latency_us: 3.4, busbw_eff: {points: [[1, 0.8]], source: "t"}, sources: ["t"]}
  - {name: ib, bw_per_gpu_gbps: 50, latency_us: 14, busbw_eff: {points: [[1, 0.86]], source: "t"}, sources: ["t"]}
provenance: "test"
sources: ["test"]
)";
    CHECK_THROWS_WITH_AS(
        parse_cluster(text, "x.yaml", 0),
        "x.yaml:6: tiers[0].domain_gpus: only the outermost tier may be unbounded (0); 'nvlink' is inside 'ib'",
        ConfigError);
  }
  SUBCASE("inherits names an unknown cluster") {
    CHECK_THROWS_WITH_AS(parse_cluster("schema_version: 1\nkind: cluster\nname: x\ninherits: dgx-h10\n", "x.yaml", 0),
                         "x.yaml:4: inherits: unknown cluster 'dgx-h10', did you mean 'dgx-h100'? (known: dgx-a100, "
                         "dgx-b200, dgx-b300, dgx-h100, dgx-h200, gb200-nvl72, gb300-nvl72, hgx-h800, mi300x-8)",
                         ConfigError);
  }
}

TEST_CASE("issue 12: non-scalar keys in clusters and gpu_overrides are named with file and line") {
  const std::string base = "schema_version: 1\nkind: cluster\nname: c\ninherits: dgx-h100\n";
  CHECK_THROWS_WITH_AS(parse_cluster(base + "[a, b]: 1\n", "c.yaml", 0), "c.yaml:5: expected a plain key, got a list",
                       ConfigError);
  CHECK_THROWS_WITH_AS(parse_cluster(base + "gpu_overrides:\n  [a, b]: 1\n", "c.yaml", 0),
                       "c.yaml:6: gpu_overrides: expected a plain key, got a list", ConfigError);
}

TEST_CASE("fitted: scales apply to the inherited tables, ranges and names are checked") {
  const std::string base = "schema_version: 1\nkind: cluster\nname: c\ninherits: dgx-h100\nprovenance: \"t\"\n";
  const System plain = load_system("dgx-h100", 0);
  const System s = parse_cluster(base + "fitted:\n  attention_scale: 0.9\n  memory_bw_scale: 0.95\n"
                                        "  busbw_scale: {infiniband: 0.8}\n  overlap_efficiency: 0.7\n"
                                        "  memory_reserve_gib: 1.0\n  loo_errors_pct: [1.5, -2]\n  source: \"x\"\n",
                                 "c.yaml", 0);
  const size_t flash3 = static_cast<size_t>(AttentionKernel::flash3);
  CHECK(s.gpu.eff.attention_fwd[flash3].at(1e12) ==
        doctest::Approx(0.9 * plain.gpu.eff.attention_fwd[flash3].at(1e12)));
  CHECK(s.gpu.eff.memory.at(1e8) == doctest::Approx(0.95 * plain.gpu.eff.memory.at(1e8)));
  CHECK(s.tiers[1].busbw_eff.at(1e8) == doctest::Approx(0.8 * plain.tiers[1].busbw_eff.at(1e8)));
  CHECK(s.tiers[0].busbw_eff.at(1e8) == doctest::Approx(plain.tiers[0].busbw_eff.at(1e8)));
  CHECK(s.overlap_efficiency == 0.7);
  CHECK(to_GiB(s.memory_reserve) == doctest::Approx(1.0));
  CHECK(s.fit_loo_errors_pct == std::vector<double>{1.5, -2});
  // fp8 without tables of its own falls back to bf16's: a bf16 scale alone leaves it, an fp8 scale alone scales it.
  const System f = parse_cluster(base + "fitted:\n  gemm_scale: {fp8: 0.5, bf16: 0.8}\n", "c.yaml", 0);
  const Grid3& b0 = plain.gpu.eff.gemm_grid[static_cast<size_t>(Dtype::bf16)];
  const Grid3& b = f.gpu.eff.gemm_grid[static_cast<size_t>(Dtype::bf16)];
  const Grid3& p8 = f.gpu.eff.gemm_grid[static_cast<size_t>(Dtype::fp8)];
  const Grid3& p80 = plain.gpu.eff.gemm_grid[static_cast<size_t>(Dtype::fp8)];
  CHECK(b.at(4096, 4096, 4096) == doctest::Approx(0.8 * b0.at(4096, 4096, 4096)));
  CHECK(p8.at(4096, 4096, 4096) ==
        doctest::Approx(0.5 * (p80.empty() ? b0 : p80).at(4096, 4096, 4096)));

  // alltoall_scale: the tier's all-to-all alone, and busbw_scale of that tier then leaves its all-to-all.
  const System a = parse_cluster(
      base + "fitted:\n  busbw_scale: {infiniband: 0.8}\n  alltoall_scale: {infiniband: 1.2}\n", "c.yaml", 0);
  const Curve& a2a = a.tiers[1].busbw_eff_by[static_cast<size_t>(Collective::all_to_all)];
  const Curve& a2a0 = plain.tiers[1].busbw_eff_by[static_cast<size_t>(Collective::all_to_all)];
  REQUIRE_FALSE(a2a.empty());
  CHECK(a2a.at(1e8) == doctest::Approx(1.2 * (a2a0.empty() ? plain.tiers[1].busbw_eff : a2a0).at(1e8)));
  CHECK(a.tiers[1].busbw_eff.at(1e8) == doctest::Approx(0.8 * plain.tiers[1].busbw_eff.at(1e8)));
  CHECK_THROWS_WITH_AS(parse_cluster(base + "fitted:\n  alltoall_scale: {infiniband: 3}\n", "c.yaml", 0),
                       doctest::Contains("fitted.alltoall_scale.infiniband: 3 is outside the physical range"),
                       ConfigError);

  CHECK_THROWS_WITH_AS(
      parse_cluster(base + "fitted:\n  overlap_efficiency: 2\n", "c.yaml", 0),
      doctest::Contains("c.yaml:7: fitted.overlap_efficiency: 2 is outside the physical range [0.25, 1.25]"),
      ConfigError);
  CHECK_THROWS_WITH_AS(parse_cluster(base + "fitted:\n  busbw_scale: {ib: 0.9}\n", "c.yaml", 0),
                       doctest::Contains("ib"), ConfigError);
  CHECK_THROWS_WITH_AS(parse_cluster(base + "fitted:\n  gemm_scale: {fp4: 0.9}\n", "c.yaml", 0),
                       doctest::Contains("states no peak"), ConfigError);
  CHECK_THROWS_WITH_AS(parse_cluster(base + "fitted:\n  overlap: 0.9\n", "c.yaml", 0),
                       doctest::Contains("overlap"), ConfigError);
  CHECK_THROWS_WITH_AS(parse_cluster(base + "fitted:\n  loo_errors_pct: [abc]\n", "c.yaml", 0),
                       doctest::Contains("c.yaml:7: fitted.loo_errors_pct[0]"), ConfigError);
}

TEST_CASE("fitted.host_layer_pass_ms: host time per layer pass, 0 when absent, its range checked") {
  const std::string base = "schema_version: 1\nkind: cluster\nname: c\ninherits: dgx-h100\nprovenance: \"t\"\n";
  CHECK(load_system("dgx-h100", 0).host_layer_pass.v == 0);  // shipped profiles state none
  CHECK(parse_cluster(base, "c.yaml", 0).host_layer_pass.v == 0);
  const System s = parse_cluster(base + "fitted:\n  host_layer_pass_ms: 2.5\n", "c.yaml", 0);
  CHECK(s.host_layer_pass.v == doctest::Approx(2.5e-3).scale(0));
  CHECK(parse_cluster(base + "fitted:\n  host_layer_pass_ms: 0\n", "c.yaml", 0).host_layer_pass.v == 0);
  CHECK_THROWS_WITH_AS(
      parse_cluster(base + "fitted:\n  host_layer_pass_ms: 25\n", "c.yaml", 0),
      doctest::Contains("c.yaml:7: fitted.host_layer_pass_ms: 25 is outside the physical range [0, 20]"),
      ConfigError);
  CHECK_THROWS_WITH_AS(parse_cluster(base + "fitted:\n  host_layer_pass_ms: -1\n", "c.yaml", 0),
                       doctest::Contains("fitted.host_layer_pass_ms: -1 is outside the physical range"),
                       ConfigError);
}
