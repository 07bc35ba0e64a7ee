// Search speed (issue 4 targets): plan evaluations per second per core for dense Llama-3.1-405B (goal >= 200,000),
// and the full search for Llama-3.1-405B on 16,384 H100 (gbs 2048, seq 8192; goal <= 5 s wall on 2 cores).
// Inputs come from the repository's models/ and hwprofiles/ (SHARDPLAN_SOURCE_DIR).
#include "shardplan_source_dir.h"
#include <benchmark/benchmark.h>

#include "modeler/evaluate.h"
#include "modeler/io/model_io.h"
#include "modeler/io/system_io.h"
#include "modeler/plan_space.h"
#include "modeler/search.h"

namespace shardplan {
namespace {

struct Inputs {
  ModelDesc model = io::load_model("llama-3.1-405b");
  System system = io::load_system("dgx-h100", 16384);
  const Framework& fw = *find_framework("megatron-lm");
  PlanSpace space;
  std::vector<Plan> valid;  // plans that pass validate_plan: the ones whose evaluation costs a full model run
  Inputs() {
    SpaceRequest r;
    r.global_batch = 2048;
    r.seq_len = 8192;
    space = make_plan_space(model, system, r);
    for (const Layout& l : space.layouts)
      for (uint64_t k = 0; k < space.layout_size(l); ++k) {
        const Plan p = space.plan_at(l, k);
        if (validate_plan(model, system, p, fw).empty()) valid.push_back(p);
      }
  }
};

const Inputs& inputs() {
  static const Inputs in;
  return in;
}

/// One full evaluate() of a valid plan (memory, time, throughput), cycling through the search space's valid plans.
void BM_EvaluateLlama405B(benchmark::State& state) {
  const Inputs& in = inputs();
  size_t i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(evaluate(in.model, in.system, in.valid[i], in.fw));
    i = (i + 1) % in.valid.size();
  }
  state.counters["evals_per_s"] =
      benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_EvaluateLlama405B);

/// Every plan of the space, valid or not (what the search spends per candidate).
void BM_EvaluateSpaceLlama405B(benchmark::State& state) {
  const Inputs& in = inputs();
  size_t li = 0;
  uint64_t k = 0;
  for (auto _ : state) {
    const Layout& l = in.space.layouts[li];
    benchmark::DoNotOptimize(evaluate(in.model, in.system, in.space.plan_at(l, k), in.fw));
    if (++k == in.space.layout_size(l)) {
      k = 0;
      li = (li + 1) % in.space.layouts.size();
    }
  }
  state.counters["evals_per_s"] =
      benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_EvaluateSpaceLlama405B);

/// The whole search with state.range(0) threads; wall time is what the user waits.
void BM_SearchLlama405B16k(benchmark::State& state) {
  const Inputs& in = inputs();
  SearchOptions opt;
  opt.threads = static_cast<int>(state.range(0));
  uint64_t plans = 0;
  for (auto _ : state) {
    const SearchResult r = search(in.model, in.system, in.fw, in.space, opt);
    plans += r.evaluated;
    benchmark::DoNotOptimize(r.top.data());
  }
  state.counters["plans"] = static_cast<double>(in.space.size());
  state.counters["plans_per_s"] = benchmark::Counter(static_cast<double>(plans), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_SearchLlama405B16k)->Arg(1)->Arg(2)->UseRealTime()->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace shardplan

BENCHMARK_MAIN();
