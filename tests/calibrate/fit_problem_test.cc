#include "calibrate/fit_problem.h"

#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include "modeler/io/published_runs.h"
#include "modeler/io/system_io.h"

using namespace shardplan;
using namespace shardplan::calibrate;

namespace {

/// Two dense runs on 8 H100s, one with its micro-batch stated and one with it open; measured 1000 tokens/s/GPU.
std::vector<io::PublishedRun> two_runs() {
  const auto run = [](const std::string& id, const std::string& plan_extra) {
    return "- id: " + id + "\n  source: Test (2025)\n  framework: megatron-lm\n  model:\n    layers: 4\n    hidden: "
           "2048\n    ffn_hidden: 7168\n    heads: 16\n    kv_heads: 8\n    vocab: 32000\n    seq_len: 2048\n"
           "    gated_mlp: true\n    tied_embeddings: false\n  system:\n    gpu: h100-sxm5-80gb\n    gpus: 8\n"
           "  precision: bf16\n  plan:\n    tp: 1\n    pp: 1\n    dp: 8\n    global_batch: 32" + plan_extra +
           "\n  measured:\n    tokens_per_s_per_gpu: 1000\n";
  };
  return io::parse_published_runs(run("stated", "\n    micro_batch: 2") + run("open", ""), "runs.yaml");
}

std::vector<RunCase> cases(const std::vector<io::PublishedRun>& runs) {
  const io::GpuProfile gpu = io::load_gpu_profile("h100-sxm5-80gb");
  std::vector<RunCase> out;
  for (const auto& r : runs) out.push_back({&r, io::run_system(gpu, r)});
  return out;
}

}  // namespace

TEST_SUITE("fit_problem") {

TEST_CASE("u is the log of a scale and the value itself otherwise") {
  const ParamRef gemm{FitParameter::gemm_scale, Dtype::bf16, ""};
  const ParamRef overhead{FitParameter::kernel_overhead_us, Dtype::bf16, ""};
  CHECK(to_u(gemm, 1.0) == 0.0);
  CHECK(from_u(gemm, std::log(0.8)) == doctest::Approx(0.8));
  CHECK(to_u(overhead, 7.0) == 7.0);
  CHECK(from_u(overhead, 7.0) == 7.0);
}

TEST_CASE("resolution, completions, and a run's residual as the solver sees it") {
  const auto runs = two_runs();
  const std::vector<RunCase> c = cases(runs);
  RunsProblem pb(c, {{FitParameter::gemm_scale, Dtype::bf16, ""}, {FitParameter::kernel_overhead_us, Dtype::bf16, ""}},
             0.06);
  REQUIRE(pb.size() == 2);
  CHECK(pb.prior_u(0) == 0.0);                        // log 1
  CHECK(pb.prior_u(1) == doctest::Approx(4.0));       // the profile's 4 us per kernel
  CHECK(pb.sigma(1) == doctest::Approx(4.0));         // fit_parameters.h
  pb.set_sigma(1, 15.0);
  CHECK(pb.sigma(1) == 15.0);
  const std::vector<double> u0 = {0.0, 4.0};
  const io::ValidationReport rep = resolve(c, pb, u0, 0.0);
  REQUIRE(rep.results.size() == 2);
  const std::vector<Completion> comp = completions(c, rep);
  CHECK(comp[0].plan.micro_batch == 2);               // stated
  CHECK(comp[0].chosen.size() < comp[1].chosen.size());  // the open run had its micro-batch chosen
  CHECK(same_completions(comp, completions(c, rep)));
  CHECK_FALSE(same_completions(comp, {comp[0]}));
  pb.set_completions(comp);
  // The residual is log measured / predicted throughput, the same through the solver's callback.
  const double predicted = pb.predict(0, u0);
  CHECK(predicted == doctest::Approx(rep.results[0].predicted_tokens_per_s_per_gpu));
  CHECK(pb.residual(0, u0) == doctest::Approx(std::log(1000.0 / predicted)));
  CHECK(pb.lm().residual(0, u0) == pb.residual(0, u0));
  CHECK(pb.lm().sigma[1] == 15.0);
  // A slower GEMM table lowers the prediction: the residual rises.
  CHECK(pb.residual(0, {std::log(0.8), 4.0}) > pb.residual(0, u0));
}

}
