#include "modeler/io/validation_run.h"

#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include "modeler/io/published_runs.h"
#include "tests/modeler/test_fixtures.h"

using namespace shardplan;
using namespace shardplan::io;

namespace {

/// One dense run of a small Llama-style model on 8 H100s; micro_batch, sequence_parallel and recompute are left
/// unknown (absent = null), so the validator chooses them.
std::string run_yaml(const std::string& id, const std::string& source, const std::string& framework, int tp,
                     double tokens_per_s_per_gpu, const std::string& extra_measured = "") {
  return "- id: " + id + "\n  source: " + source + "\n  framework: " + framework + R"(
  model:
    layers: 4
    hidden: 256
    ffn_hidden: 512
    heads: 4
    kv_heads: 4
    vocab: 1024
    seq_len: 512
    gated_mlp: true
    tied_embeddings: false
  system:
    gpu: h100-sxm5-80gb
    gpus: 8
  precision: bf16
  plan:
    tp: )" + std::to_string(tp) + R"(
    pp: 1
    dp: )" + std::to_string(8 / tp) + R"(
    global_batch: 16
  measured:
    tokens_per_s_per_gpu: )" + std::to_string(tokens_per_s_per_gpu) + "\n" + extra_measured;
}

std::vector<PublishedRun> parse(const std::string& text) { return parse_published_runs(text, "runs.yaml"); }

}  // namespace

TEST_SUITE("validation_run") {

TEST_CASE("source_label: the text before the first ' (' or ','") {
  CHECK(source_label("Narayanan et al. 2021 (arXiv:2104.04473) Table 1") == "Narayanan et al. 2021");
  CHECK(source_label("Megatron-LM README, Megatron-Core r0.8.0 (2024)") == "Megatron-LM README");
  CHECK(source_label("MosaicML blog (2023), table 2") == "MosaicML blog");
  CHECK(source_label("plain") == "plain");
  CHECK(source_label("") == "");
}

TEST_CASE("run_validation: unknown plan fields are chosen and reported; error sign follows the prediction") {
  const auto runs = parse(run_yaml("slow", "Test A (2024)", "megatron-lm", 2, 1.0) +
                          run_yaml("fast", "Test B, table 1", "nemo", 2, 1e12));
  const ValidationReport rep = run_validation(runs);
  REQUIRE(rep.results.size() == 2);
  for (const RunResult& r : rep.results) {
    CAPTURE(r.run->id);
    CHECK_FALSE(r.skipped);
    // mbs, sp (tp > 1), recompute by the fastest that fits; TP overlap (both profiles offer it at tp 2) by the
    // recipe default: on for nemo's performance recipes, off for Megatron-LM's own defaults.
    REQUIRE(r.resolution.chosen.size() >= 4);
    CHECK(r.resolution.chosen[0].rfind("mbs=", 0) == 0);
    CHECK(r.resolution.chosen[1].rfind("sp=", 0) == 0);
    CHECK(r.resolution.chosen[2].rfind("recompute=", 0) == 0);
    CHECK(r.resolution.chosen[3] ==
          std::string("tp_overlap=") + (r.run->framework == "nemo" ? "on" : "off") + " (recipe default)");
    CHECK(r.resolution.choices[0].why == "fastest that fits");
    CHECK(r.resolution.choices[3].why == "recipe default");
    CHECK(r.resolution.bracket.settings > 1);
    CHECK(r.worst_error_pct <= r.error_pct);
    CHECK(r.best_error_pct >= r.error_pct);
    CHECK(r.resolution.candidates > 1);
    CHECK(r.predicted_tokens_per_s_per_gpu > 0);
    const double measured = r.run->measured_tokens_per_s_per_gpu;
    CHECK(r.error_pct == doctest::Approx(100.0 * (r.predicted_tokens_per_s_per_gpu - measured) / measured));
    CHECK_FALSE(r.predicted_memory_gib.has_value());  // no measured peak memory
  }
  CHECK(rep.results[0].error_pct > 0);  // measured 1 token/s: predicted above it
  CHECK(rep.results[1].error_pct < 0);  // measured 1e12: predicted below it
  CHECK(rep.results[1].error_pct > -100);
  CHECK(rep.results[0].framework == "megatron-lm");
  CHECK(rep.results[1].framework == "nemo");
  CHECK(rep.throughput.runs == 2);
  CHECK(rep.throughput.mape ==
        doctest::Approx((std::fabs(rep.results[0].error_pct) + std::fabs(rep.results[1].error_pct)) / 2));
  CHECK(rep.by_source.size() == 2);
  CHECK(rep.by_source.at("Test A").runs == 1);
  CHECK(rep.by_source.at("Test B").runs == 1);
  CHECK(rep.by_framework.at("nemo").runs == 1);
  CHECK(rep.memory.runs == 0);
}

TEST_CASE("run_validation: mixture-of-experts runs are also grouped by model name") {
  std::string moe = run_yaml("moe", "Test C (2025)", "nemo", 1, 1000.0);
  const std::string at = "    tied_embeddings: false\n";
  moe.replace(moe.find(at), at.size(),
              at + "    name: Tiny MoE\n    moe: {experts: 8, top_k: 2, expert_ffn_hidden: 128}\n");
  moe.replace(moe.find("    dp: 8\n"), 10, "    dp: 8\n    ep: 8\n");
  const ValidationReport rep = run_validation(parse(moe + run_yaml("dense", "Test A (2024)", "nemo", 2, 1000.0)));
  REQUIRE(rep.results.size() == 2);
  REQUIRE_FALSE(rep.results[0].skipped);
  REQUIRE(rep.by_moe_model.size() == 1);
  CHECK(rep.by_moe_model.at("Tiny MoE").runs == 1);
  CHECK(rep.by_moe_model.at("Tiny MoE").mape == doctest::Approx(std::fabs(rep.results[0].error_pct)));
}

TEST_CASE("run_validation: measured peak memory is compared with the allocator's reserved peak") {
  const auto runs = parse(run_yaml("m", "Test (2024)", "megatron-lm", 2, 1000.0, "    peak_memory_gib: 10\n"));
  const ValidationReport rep = run_validation(runs);
  const RunResult& r = rep.results.at(0);
  REQUIRE(r.predicted_memory_gib.has_value());
  REQUIRE(r.memory_error_pct.has_value());
  CHECK(*r.predicted_memory_gib == doctest::Approx(to_GiB(r.resolution.estimate.memory.allocator_reserved())));
  CHECK(*r.memory_error_pct == doctest::Approx(100.0 * (*r.predicted_memory_gib - 10) / 10));
  CHECK(rep.memory.runs == 1);
  CHECK(rep.memory.mape == doctest::Approx(std::fabs(*r.memory_error_pct)));
}

TEST_CASE("run_validation: an invalid plan is skipped with its problems, not counted") {
  // tp 8 does not divide 4 heads.
  const auto runs = parse(run_yaml("bad", "Test (2024)", "megatron-lm", 8, 1000.0));
  const ValidationReport rep = run_validation(runs);
  REQUIRE(rep.results.size() == 1);
  CHECK(rep.results[0].skipped);
  CHECK(rep.results[0].skip_reason.rfind("invalid plan: ", 0) == 0);
  CHECK(rep.results[0].skip_reason.size() > std::string("invalid plan: ").size());
  CHECK(rep.throughput.runs == 0);
  CHECK(rep.by_source.empty());
}

TEST_CASE("framework era: the profile follows the stated release or date, never the source's wording") {
  auto with = [](std::string run, const std::string& keys) {
    const std::string at = "  framework: ";
    const size_t line_end = run.find('\n', run.find(at));
    return run.insert(line_end + 1, keys);
  };
  const auto runs =
      parse(with(run_yaml("a", "Narayanan et al. 2021 (arXiv:2104.04473) Table 1", "megatron-lm", 2, 1000),
                 "  date: 2021-04\n") +
            with(run_yaml("b", "Some README", "megatron-lm", 2, 1000), "  framework_version: v3.0\n") +
            with(run_yaml("c", "Korthikanti et al. 2022", "megatron-lm", 2, 1000),
                 "  framework_version: core_r0.8.0\n  date: 2022-05\n") +
            run_yaml("d", "Narayanan et al. 2021", "megatron-lm", 2, 1000) +
            with(run_yaml("e", "NeMo table", "nemo", 2, 1000), "  framework_version: '24.07'\n") +
            with(run_yaml("f", "Bridge table", "nemo", 2, 1000), "  framework_version: '25.09'\n"));
  const ValidationReport rep = run_validation(runs);
  REQUIRE(rep.results.size() == 6);
  CHECK(rep.results[0].framework == "megatron-lm-legacy");  // dated before 2023
  CHECK(rep.results[1].framework == "megatron-lm-legacy");  // a pre-Megatron-Core release
  CHECK(rep.results[2].framework == "megatron-lm");         // a stated release wins over the date
  CHECK(rep.results[3].framework == "megatron-lm");         // nothing stated: the current profile
  CHECK(rep.results[4].framework == "nemo-2024");
  CHECK(rep.results[5].framework == "nemo");
  CHECK(rep.by_generation_framework.at("H100 megatron-lm").runs == 4);  // legacy runs group with megatron-lm
  CHECK(rep.by_generation_framework.at("H100 nemo").runs == 2);
  CHECK(rep.by_gpu.at("h100-sxm5-80gb").runs == 6);
  CHECK(rep.by_precision.at("bf16").runs == 6);
  // Groups are by the file's framework name, not the profile.
  CHECK(rep.by_framework.at("megatron-lm").runs == 4);
  CHECK(rep.by_framework.at("nemo").runs == 2);
}

TEST_CASE("apply_calibration: GPU efficiency and same-named tier tables, base topology kept") {
  const System base = test::synthetic_system(16);
  System cal = test::synthetic_system(8);
  cal.gpu.eff.memory = Curve::constant(0.5, "calibration run");
  cal.gpu.peak[static_cast<int>(Dtype::bf16)] = TFlops(1);  // not copied: peaks are the datasheet's
  cal.gpus_per_node = 4;
  cal.tiers[0].latency = us(7);
  cal.tiers[0].busbw_eff = Curve::constant(0.7, "calibration run");
  cal.tiers[0].p2p_eff = Curve::constant(0.6, "calibration run");
  cal.tiers[0].bw_per_gpu = GBps(1);
  cal.tiers[0].domain_gpus = 4;
  cal.tiers[1].name = "roce";  // no tier of this name in the base
  cal.tiers[1].latency = us(99);
  cal.provenance = "calibrated 2025-01-01";

  const System s = apply_calibration(base, cal);
  CHECK(s.gpu.eff.memory.y == std::vector<double>{0.5});
  CHECK(s.gpu.eff.memory.source == "calibration run");
  CHECK(s.gpu.peak_for(Dtype::bf16).v == test::kPeak);
  CHECK(s.gpus == 16);
  CHECK(s.gpus_per_node == 8);
  REQUIRE(s.tiers.size() == 2);
  CHECK(s.tiers[0].name == "nvlink");
  CHECK(s.tiers[0].latency.v == doctest::Approx(7e-6).scale(0));
  CHECK(s.tiers[0].busbw_eff.y == std::vector<double>{0.7});
  CHECK(s.tiers[0].p2p_eff.y == std::vector<double>{0.6});
  CHECK(s.tiers[0].bw_per_gpu.v == test::kNvlink);
  CHECK(s.tiers[0].domain_gpus == 8);
  CHECK(s.tiers[1].name == "network");
  CHECK(s.tiers[1].latency.v == 0);
  CHECK(s.tiers[1].bw_per_gpu.v == test::kNetwork);
  CHECK(s.provenance == "calibrated 2025-01-01");
}

TEST_CASE("run_validation with a calibrated system: only runs on its GPU take its tables") {
  const auto runs = parse(run_yaml("r", "Test (2024)", "megatron-lm", 2, 1000));
  const double plain = run_validation(runs).results.at(0).predicted_tokens_per_s_per_gpu;
  System slow = standard_system(load_gpu_profile("h100-sxm5-80gb"), StandardSystemOptions{});
  for (Curve& c : slow.gpu.eff.gemm)
    if (!c.empty()) c = Curve::constant(0.01, "test");
  for (Grid3& g : slow.gpu.eff.gemm_grid) g = Grid3{};  // a calibrated GEMM curve replaces the shipped grid
  CHECK(run_validation(runs, &slow).results.at(0).predicted_tokens_per_s_per_gpu < plain);
  slow.gpu.name = "other-gpu";
  CHECK(run_validation(runs, &slow).results.at(0).predicted_tokens_per_s_per_gpu == doctest::Approx(plain));
}

}
