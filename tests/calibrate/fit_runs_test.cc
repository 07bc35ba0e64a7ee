#include "calibrate/fit_runs.h"

#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include "modeler/io/published_runs.h"
#include "modeler/io/system_io.h"
#include "modeler/io/validation_run.h"
#include "modeler/problems.h"

using namespace shardplan;
using namespace shardplan::calibrate;

namespace {

/// A dense Llama-style run on H100s with micro-batch, sequence parallelism and recompute left open (unless
/// `plan_extra` states them).
std::string run_yaml(const std::string& id, int hidden, int seq, int gpus, int tp, double measured,
                     const std::string& precision = "bf16", const std::string& plan_extra = "") {
  return "- id: " + id + "\n  source: Test (2025)\n  framework: megatron-lm\n  model:\n    layers: 4\n    hidden: " +
         std::to_string(hidden) + "\n    ffn_hidden: " + std::to_string(hidden * 7 / 2) +
         "\n    heads: 16\n    kv_heads: 8\n    vocab: 32000\n    seq_len: " + std::to_string(seq) +
         "\n    gated_mlp: true\n    tied_embeddings: false\n  system:\n    gpu: h100-sxm5-80gb\n    gpus: " +
         std::to_string(gpus) + "\n  precision: " + precision + "\n  plan:\n    tp: " + std::to_string(tp) +
         "\n    pp: 1\n    dp: " + std::to_string(gpus / tp) + "\n    global_batch: " + std::to_string(4 * gpus / tp) +
         plan_extra +
         "\n  measured:\n    tokens_per_s_per_gpu: " + std::to_string(measured) + "\n";
}

std::string runs_text(const std::vector<double>& measured, const std::string& precision = "bf16",
                      const std::string& plan_extra = "") {
  const int hidden[] = {2048, 4096, 4096, 8192, 2048, 8192};
  const int seq[] = {2048, 4096, 2048, 2048, 8192, 4096};
  const int gpus[] = {8, 8, 16, 8, 8, 16};
  const int tp[] = {1, 2, 2, 8, 1, 4};
  std::string s;
  for (size_t i = 0; i < measured.size(); ++i)
    s += run_yaml("r" + std::to_string(i), hidden[i], seq[i], gpus[i], tp[i], measured[i], precision, plan_extra);
  return s;
}

std::vector<RunCase> cases(const std::vector<io::PublishedRun>& runs) {
  const io::GpuProfile gpu = io::load_gpu_profile("h100-sxm5-80gb");
  std::vector<RunCase> out;
  for (const auto& r : runs) out.push_back({&r, run_case_system(r, gpu, nullptr)});
  return out;
}

/// Measured throughputs made by the modeler itself on systems with a known GEMM scale: what a fit must recover.
std::vector<double> synthetic(double gemm_scale, const std::string& precision = "bf16") {
  const auto runs = io::parse_published_runs(runs_text(std::vector<double>(6, 1.0), precision), "runs.yaml");
  System truth = cases(runs).front().base;
  apply_param(&truth, {FitParameter::gemm_scale, precision == "fp8" ? Dtype::fp8 : Dtype::bf16, ""}, gemm_scale);
  const io::ValidationReport rep = io::run_validation(runs, &truth);
  std::vector<double> out;
  for (const auto& r : rep.results) out.push_back(r.predicted_tokens_per_s_per_gpu);
  return out;
}

const ParamValue* find(const RunsFit& fit, const std::string& label) {
  for (const auto& p : fit.params)
    if (p.ref.label() == label) return &p;
  return nullptr;
}

}  // namespace

TEST_SUITE("fit_runs") {

TEST_CASE("a GEMM scale the runs were made with is recovered, with an interval around it and small LOO error") {
  const std::vector<double> measured = synthetic(0.8);
  const auto runs = io::parse_published_runs(runs_text(measured), "runs.yaml");
  const RunsFit fit = fit_runs(cases(runs));
  REQUIRE(fit.out_of_range.empty());
  const ParamValue* g = find(fit, "gemm_scale.bf16");
  REQUIRE(g != nullptr);
  // The fit is a posterior: the prior (the base, 1.0) and the parameters that trade against the GEMM scale on six
  // runs (attention, HBM and bus-bandwidth scales, the per-kernel and host costs) keep part of the 20% slowdown:
  // 0.846 here, 5.7% above the truth, which lies inside the 95% interval [0.735, 0.972].
  CHECK(g->value == doctest::Approx(0.8).epsilon(0.07).scale(0));
  CHECK(g->value > 0.8);  // between the truth and the prior
  CHECK(g->lo95 < 0.8);
  CHECK(g->hi95 > 0.8);
  CHECK(g->data_share > 0.5);  // the runs, not the prior, decided it
  CHECK_FALSE(g->at_bound);
  CHECK(fit.base_mape > 10);   // the base tables run 25% fast on these runs
  CHECK(fit.fit_mape < 3);
  CHECK(fit.loo_mape < 5);
  REQUIRE(fit.rows.size() == 6);
  for (const auto& r : fit.rows) CHECK(r.loo_error_pct().has_value());
  const System fitted = apply_fit(cases(runs).front().base, fit);
  CHECK(fitted.fit_loo_errors_pct.size() == 6);
}

TEST_CASE("a per-kernel cost the runs were made with chooses the eager-dispatch prior; with the host time it is reproduced") {
  // 24 us per kernel, an eager host-dispatch cost (fit_parameters.h): 5 sigma from the base's 4 +- 4 us launch
  // prior, 1.3 sigma under the eager +-15 us one.
  // The plan stated whole, so that the truth and the fit run the same completion.
  const std::string stated = "\n    micro_batch: 1\n    sequence_parallel: false\n    recompute: none";
  const auto shape = io::parse_published_runs(runs_text(std::vector<double>(6, 1.0), "bf16", stated), "runs.yaml");
  System truth = cases(shape).front().base;
  apply_param(&truth, {FitParameter::kernel_overhead_us, Dtype::bf16, ""}, 24.0);
  std::vector<double> measured;
  for (const auto& r : io::run_validation(shape, &truth).results) measured.push_back(r.predicted_tokens_per_s_per_gpu);
  const auto runs = io::parse_published_runs(runs_text(measured, "bf16", stated), "runs.yaml");
  FitOptions opt;
  opt.leave_one_out = false;
  // Runs made by the model itself scatter by nothing: a per-run scatter of 0.5% lets them, not the priors of the
  // parameters that trade against the kernel cost (GEMM and HBM scales), decide it.
  opt.sigma_log = 0.005;
  const RunsFit chosen = fit_runs(cases(runs), opt);
  REQUIRE(chosen.out_of_range.empty());
  REQUIRE(chosen.prior_choices.size() == 1);
  CHECK(chosen.prior_choices[0].find("eager dispatch") != std::string::npos);
  const ParamValue* k = find(chosen, "kernel_overhead_us");
  REQUIRE(k != nullptr);
  // The host time per layer pass stands for the same host cost per pass (fit_parameters.h) and, on runs of one
  // shape, is nearly collinear with a per-kernel cost: the fit shares the truth between the two, and the joint
  // covariance keeps the truth inside the per-kernel cost's interval.
  const ParamValue* h = find(chosen, "host_layer_pass_ms");
  REQUIRE(h != nullptr);
  CHECK(k->value > 4.0);
  CHECK(h->value > 0.0);
  CHECK(chosen.fit_mape < 1.0);  // together they reproduce the runs
  CHECK(k->lo95 < 24.0);
  CHECK(k->hi95 > 24.0);
  CHECK_FALSE(k->at_bound);
  // Held to the launch prior, the same runs leave the kernel cost short of the truth.
  opt.choose_overhead_prior = false;
  const RunsFit held = fit_runs(cases(runs), opt);
  CHECK(held.prior_choices.empty());
  const ParamValue* kh = find(held, "kernel_overhead_us");
  REQUIRE(kh != nullptr);
  CHECK(std::fabs(kh->value - 24.0) > std::fabs(k->value - 24.0));
}

TEST_CASE("runs on the base's own tables leave every parameter near its prior") {
  const auto runs = io::parse_published_runs(runs_text(synthetic(1.0)), "runs.yaml");
  const RunsFit fit = fit_runs(cases(runs));
  for (const auto& p : fit.params) {
    INFO(p.ref.label());
    // Within 3% of a nonzero prior; a prior of 0 (the host time per layer pass) within 0.03 of it, in its unit (ms).
    if (p.prior != 0) CHECK(p.value == doctest::Approx(p.prior).epsilon(0.03).scale(0));
    else CHECK(std::fabs(p.value) < 0.03);
  }
  CHECK(fit.fit_mape < 1);
}

TEST_CASE("a fit that needs a parameter outside its physical range is refused, naming the rows") {
  // Three times faster than the tables: no GEMM scale within [0.5, 1.25] explains it.
  std::vector<double> measured = synthetic(1.0);
  for (double& m : measured) m *= 3;
  const auto runs = io::parse_published_runs(runs_text(measured), "runs.yaml");
  const RunsFit refused = fit_runs(cases(runs));
  REQUIRE_FALSE(refused.out_of_range.empty());
  const std::string all = refused.out_of_range.front();
  CHECK(all.find("outside") != std::string::npos);
  CHECK(all.find("(line ") != std::string::npos);
  CHECK(refused.rows.empty());  // nothing predicted with a refused fit
  FitOptions anyway;
  anyway.accept_anyway = true;
  anyway.leave_one_out = false;
  const RunsFit pinned = fit_runs(cases(runs), anyway);
  bool some_at_bound = false;
  for (const auto& p : pinned.params) {
    const FitParameterSpec& sp = fit_parameter_spec(p.ref.kind);
    CHECK(p.value >= sp.lo - 1e-9);
    CHECK(p.value <= sp.hi + 1e-9);
    some_at_bound = some_at_bound || p.at_bound;
  }
  CHECK(some_at_bound);
  CHECK_FALSE(pinned.out_of_range.empty());
}

TEST_CASE("runs that push a parameter whose lower end means none below it pin it there instead of refusing") {
  // Runs faster by a fixed time per layer pass than the tables: what a negative host time would give, which no
  // host can (fit_parameters.h, pin_at_lo). The group is fitted with it at 0 and says so.
  const std::string stated = "\n    micro_batch: 1\n    sequence_parallel: false\n    recompute: none";
  const auto shape = io::parse_published_runs(runs_text(std::vector<double>(6, 1.0), "bf16", stated), "runs.yaml");
  System truth = cases(shape).front().base;
  apply_param(&truth, {FitParameter::host_layer_pass_ms, Dtype::bf16, ""}, -0.2);  // ms
  std::vector<double> measured;
  for (const auto& r : io::run_validation(shape, &truth).results) measured.push_back(r.predicted_tokens_per_s_per_gpu);
  const auto runs = io::parse_published_runs(runs_text(measured, "bf16", stated), "runs.yaml");
  FitOptions opt;
  opt.leave_one_out = false;
  const RunsFit fit = fit_runs(cases(runs), opt);
  for (const auto& o : fit.out_of_range) MESSAGE(o);
  CHECK(fit.out_of_range.empty());  // not refused
  const ParamValue* h = find(fit, "host_layer_pass_ms");
  REQUIRE(h != nullptr);
  CHECK(h->value == 0.0);
  bool listed = false;
  for (const std::string& n : fit.not_fitted) listed = listed || n.find("host_layer_pass_ms (the runs show none") == 0;
  CHECK(listed);
  // A parameter without the flag is refused at the same end (the range test above): only "none" ends pin.
  CHECK_FALSE(fit_parameter_spec(FitParameter::kernel_overhead_us).pin_at_lo);
  CHECK(fit_parameter_spec(FitParameter::host_layer_pass_ms).pin_at_lo);
}

TEST_CASE("runs of two GPUs are not one fit") {
  const auto runs = io::parse_published_runs(runs_text({1, 1}), "runs.yaml");
  std::vector<RunCase> c = cases(runs);
  c[1].base.gpu.name = "a100-sxm4-80gb";
  CHECK_THROWS_AS(fit_runs(c), ConfigError);
  CHECK_THROWS_AS(fit_runs({}), ConfigError);
}

}
