#include "calibrate/fit_params.h"

#include <doctest/doctest.h>

#include <string>

#include "modeler/io/published_runs.h"
#include "modeler/io/system_io.h"
#include "modeler/io/validation_run.h"

using namespace shardplan;
using namespace shardplan::calibrate;

namespace {

/// A dense Llama-style run on H100s (fp8 or bf16), its plan left to the fit's completion.
std::string run_yaml(const std::string& id, const std::string& precision) {
  return "- id: " + id + "\n  source: Test (2025)\n  framework: megatron-lm\n  model:\n    layers: 4\n    hidden: 2048"
         "\n    ffn_hidden: 7168\n    heads: 16\n    kv_heads: 8\n    vocab: 32000\n    seq_len: 2048"
         "\n    gated_mlp: true\n    tied_embeddings: false\n  system:\n    gpu: h100-sxm5-80gb\n    gpus: 8"
         "\n  precision: " + precision + "\n  plan:\n    tp: 1\n    pp: 1\n    dp: 8\n    global_batch: 32"
         "\n  measured:\n    tokens_per_s_per_gpu: 1\n";
}

std::vector<io::PublishedRun> two_runs(const std::string& precision = "bf16") {
  return io::parse_published_runs(run_yaml("r0", precision) + run_yaml("r1", precision), "runs.yaml");
}

std::vector<RunCase> cases(const std::vector<io::PublishedRun>& runs) {
  const io::GpuProfile gpu = io::load_gpu_profile("h100-sxm5-80gb");
  std::vector<RunCase> out;
  for (const auto& r : runs) out.push_back({&r, io::run_system(gpu, r)});
  return out;
}

/// The tier's all-to-all efficiency at 1 GB as collectives.cc reads it: its own curve, else the busbw curve.
double achieved(const Tier& t) {
  const Curve& own = t.busbw_eff_by[static_cast<size_t>(Collective::all_to_all)];
  return (own.empty() ? t.busbw_eff : own).at(1e9);
}

}  // namespace

TEST_SUITE("fit_params") {

TEST_CASE("labels, base values and applying a parameter") {
  CHECK(ParamRef{FitParameter::gemm_scale, Dtype::fp8, ""}.label() == "gemm_scale.fp8");
  CHECK(ParamRef{FitParameter::busbw_scale, Dtype::bf16, "nvlink"}.label() == "busbw_scale.nvlink");
  CHECK(ParamRef{FitParameter::overlap_efficiency, Dtype::bf16, ""}.label() == "overlap_efficiency");
  const auto runs = two_runs();
  System s = cases(runs).front().base;
  CHECK(base_value(s, {FitParameter::gemm_scale, Dtype::bf16, ""}) == 1.0);
  CHECK(base_value(s, {FitParameter::kernel_overhead_us, Dtype::bf16, ""}) == doctest::Approx(4.0));
  const double bw = s.tiers[0].busbw_eff.at(1e9);
  apply_param(&s, {FitParameter::busbw_scale, Dtype::bf16, s.tiers[0].name}, 0.5);
  CHECK(s.tiers[0].busbw_eff.at(1e9) == doctest::Approx(bw * 0.5));
  // With an all-to-all parameter of its own, busbw_scale leaves the tier's all-to-all alone, and alltoall_scale
  // moves nothing else; the two commute.
  for (bool a2a_first : {false, true}) {
    System t = cases(runs).front().base;
    const double ring = t.tiers[0].busbw_eff.at(1e9);
    const auto a2a = [&] { return achieved(t.tiers[0]); };
    const double a2a0 = a2a();
    if (a2a_first) apply_param(&t, {FitParameter::alltoall_scale, Dtype::bf16, t.tiers[0].name}, 1.3);
    apply_param(&t, {FitParameter::busbw_scale, Dtype::bf16, t.tiers[0].name, true}, 0.5);
    if (!a2a_first) apply_param(&t, {FitParameter::alltoall_scale, Dtype::bf16, t.tiers[0].name}, 1.3);
    CHECK(t.tiers[0].busbw_eff.at(1e9) == doctest::Approx(ring * 0.5));
    CHECK(a2a() == doctest::Approx(a2a0 * 1.3));
  }
  CHECK(ParamRef{FitParameter::alltoall_scale, Dtype::bf16, "infiniband"}.label() == "alltoall_scale.infiniband");
  apply_param(&s, {FitParameter::overlap_efficiency, Dtype::bf16, ""}, 0.8);
  CHECK(s.overlap_efficiency == 0.8);
  apply_param(&s, {FitParameter::kernel_overhead_us, Dtype::bf16, ""}, 7.0);
  CHECK(s.gpu.eff.kernel_overhead.v == doctest::Approx(7e-6).scale(0));
  // Host time per layer pass: 0 before any fit (shipped profiles state none), in ms as the profile spells it.
  const ParamRef host{FitParameter::host_layer_pass_ms, Dtype::bf16, ""};
  CHECK(host.label() == "host_layer_pass_ms");
  CHECK(base_value(s, host) == 0.0);
  apply_param(&s, host, 2.5);
  CHECK(s.host_layer_pass.v == doctest::Approx(2.5e-3).scale(0));
  CHECK(base_value(s, host) == doctest::Approx(2.5));
}

TEST_CASE("candidates: bf16 always, the runs' own dtype, every tier; bf16 applied last") {
  const auto runs = two_runs("fp8");
  const auto c = candidate_params(cases(runs));
  REQUIRE(c.size() >= 6);
  CHECK(c[0].label() == "gemm_scale.fp8");
  CHECK(c[1].label() == "gemm_scale.bf16");
  CHECK(c[2].label() == "attention_scale");
  CHECK(c[3].label() == "memory_bw_scale");
  CHECK(c[4].label() == "busbw_scale.nvlink");
  CHECK(c.back().label() == "host_layer_pass_ms");  // every run has layers and passes
}

}
