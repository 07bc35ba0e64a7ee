// Serving speed targets (issue 15): one serving evaluation <= 10 us; serve search for Llama-3.1-70B on 32 H200
// <= 1 s; a placement of ~400 tensors <= 50 ms.
#include <benchmark/benchmark.h>

#include "modeler/io/model_io.h"
#include "modeler/io/serving_host_io.h"
#include "modeler/io/system_io.h"
#include "modeler/serving/disagg_search.h"
#include "modeler/serving/offload.h"
#include "modeler/serving/open_loop.h"
#include "modeler/serving/serve_predict.h"
#include "modeler/serving/serve_search.h"

using namespace shardplan;

namespace {

// Llama-3-70B with fp8 weights and KV on `gpus` GPUs of `gpu` (standard nodes), served by TRT-LLM.
struct Llama70bFp8 {
  serving::ServingModel model;
  System system;
  serving::ServeInputs inputs() const {
    serving::ServeInputs in;
    in.model = &model;
    in.system = &system;
    in.engine = serving::Engine::trtllm;
    return in;
  }
};

Llama70bFp8 llama70b_fp8(const char* gpu, int gpus) {
  serving::Precision p;
  p.weights = serving::WeightFormat::fp8;
  p.kv_bytes = 1;
  io::StandardSystemOptions so;
  so.gpus = gpus;
  return {serving::make_serving_model(io::load_model("llama-3-70b", true), p),
          io::standard_system(io::load_gpu_profile(gpu), so)};
}

// One aggregated prediction of Llama-3-70B, fp8, tp 4 on H100 (two step evaluations and the memory rule).
void BM_ServeEvaluation(benchmark::State& state) {
  const Llama70bFp8 setup = llama70b_fp8("h100-sxm5-80gb", 8);
  serving::ServeInputs in = setup.inputs();
  in.plan.agg.tp = 4;
  in.plan.agg.moe_tp = 4;
  in.workload.concurrency = 64;
  for (auto _ : state) benchmark::DoNotOptimize(serving::serve_predict(in));
}
BENCHMARK(BM_ServeEvaluation)->Unit(benchmark::kMicrosecond);

// The same prediction with speculative decoding (an EAGLE head, k 3): each step adds the head's passes.
void BM_ServeEvaluationSpec(benchmark::State& state) {
  const Llama70bFp8 setup = llama70b_fp8("h100-sxm5-80gb", 8);
  serving::ServeInputs in = setup.inputs();
  in.plan.agg.tp = 4;
  in.plan.agg.moe_tp = 4;
  in.workload.concurrency = 64;
  in.spec.method = serving::SpecMethod::eagle;
  in.spec.tokens = 3;
  in.spec.accept = {0.7};
  for (auto _ : state) benchmark::DoNotOptimize(serving::serve_predict(in));
}
BENCHMARK(BM_ServeEvaluationSpec)->Unit(benchmark::kMicrosecond);

// The same prediction as AIConfigurator's benchmark ran it: 64 clients started together, 20 requests each, 1024
// in / 512 out, simulated step by step (closed_loop.h), as serve validate does for every AIConfigurator row.
void BM_ServeClosedLoop(benchmark::State& state) {
  const Llama70bFp8 setup = llama70b_fp8("h100-sxm5-80gb", 8);
  serving::ServeInputs in = setup.inputs();
  in.plan.agg.tp = 4;
  in.plan.agg.moe_tp = 4;
  in.workload.input_len = 1024;
  in.workload.output_len = 512;
  in.workload.concurrency = 64;
  in.workload.rounds = 20;
  for (auto _ : state) benchmark::DoNotOptimize(serving::serve_predict(in));
}
BENCHMARK(BM_ServeClosedLoop)->Unit(benchmark::kMillisecond);

// The same deployment under an open loop as vLLM's and SGLang's benchmark scripts run it: 1000 requests of
// 1024 in / 128 out at 20 req/s (Poisson, seed 0), simulated step by step, plus the all-at-once run that gives
// the capacity (open_loop.h): what `serve predict --request-rate 20` does.
void BM_ServeOpenLoop(benchmark::State& state) {
  const Llama70bFp8 setup = llama70b_fp8("h100-sxm5-80gb", 8);
  serving::ServeInputs in = setup.inputs();
  in.plan.agg.tp = 4;
  in.plan.agg.moe_tp = 4;
  serving::OpenLoopWorkload wl;
  wl.rate = 20;
  wl.lengths.assign(1000, serving::LengthPair{1024, 128});
  for (auto _ : state) benchmark::DoNotOptimize(serving::predict_open_loop(in, wl));
}
BENCHMARK(BM_ServeOpenLoop)->Unit(benchmark::kMillisecond);

// Tensor placement of Mixtral-8x22B Q4_K_M (56 blocks x (4 attention + 2 expert tensors + KV) + output = 393
// items) on a 24 GB GPU, both phases, greedy + pairwise improvement from two starts.
void BM_TensorPlacement(benchmark::State& state) {
  const ModelDesc m = io::load_model("mixtral-8x22b", true);
  serving::Precision p;
  p.weights = p.moe_weights = serving::WeightFormat::q4_k_m;
  const serving::ServingModel sm = serving::make_serving_model(m, p);
  const io::GpuProfile gpu = io::load_gpu_profile("rtx-4090");
  serving::OffloadSetup s;
  s.model = &sm;
  s.gpu = &gpu.gpu;
  s.host = io::load_host("desktop-ddr5-5600-2ch-pcie4");
  s.vram = GiB(22);
  const auto items = serving::offload_items(s);
  state.counters["items"] = static_cast<double>(items.size());
  for (auto _ : state) benchmark::DoNotOptimize(serving::tensor_placement(items, s));
}
BENCHMARK(BM_TensorPlacement)->Unit(benchmark::kMillisecond);

// serve search for Llama-3-70B (Llama-3.1-70B's architecture) fp8 on 32 H200 under TTFT/TPOT targets.
void BM_ServeSearch(benchmark::State& state) {
  const Llama70bFp8 setup = llama70b_fp8("h200-sxm-141gb", 32);
  serving::ServeInputs in = setup.inputs();
  in.workload.input_len = 2048;
  in.workload.output_len = 512;
  serving::ServeSearchSpace space;
  space.gpus = 32;
  const serving::SearchTargets t{1000, 30};
  for (auto _ : state) benchmark::DoNotOptimize(serving::serve_search(in, space, t));
}
BENCHMARK(BM_ServeSearch)->Unit(benchmark::kMillisecond);

// The same search with disaggregated (xPyD) plans beside the aggregated ones: what `serve search --mode both`
// runs (disagg_search.h prunes the prefill shapes and sizes x per y).
void BM_ServeSearchBoth(benchmark::State& state) {
  const Llama70bFp8 setup = llama70b_fp8("h200-sxm-141gb", 32);
  serving::ServeInputs in = setup.inputs();
  in.workload.input_len = 2048;
  in.workload.output_len = 512;
  serving::ServeSearchSpace space;
  space.gpus = 32;
  const serving::SearchTargets t{1000, 30};
  int evaluated = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(serving::serve_search(in, space, t));
    const serving::DisaggSearchResult d = serving::disagg_search(in, space, t);
    evaluated = d.evaluated;
    benchmark::DoNotOptimize(d);
  }
  state.counters["disagg_evaluated"] = evaluated;
}
BENCHMARK(BM_ServeSearchBoth)->Unit(benchmark::kMillisecond);

}  // namespace
