// How NVIDIA AIConfigurator's generator deploys and benchmarks a serving configuration, for the rows of its
// silicon_sample.csv: the worker count a row's concurrency implies, the engine limits the generator writes, and
// the closed-loop benchmark it runs. This is the benchmark's setup, not the engines' physics; serve validate
// applies it to AIConfigurator rows only.
#pragma once

#include "modeler/serving/serving_types.h"
#include "modeler/system.h"

namespace shardplan::serving {

/// aiperf's closed loop in AIConfigurator's benchmark: --num-requests 20 x concurrency, fixed lengths
/// (generator/config/backend_templates/benchmark/bench_run.sh.j2).
inline constexpr int kAicBenchmarkRounds = 20;

/// Aggregated workers a row ran: AIConfigurator benchmarks a deployment at concurrency = workers x max_batch
/// (generator/rule_plugin/*.rule, BenchConfig.estimated_concurrency) and its CSV gives one worker's shape, so a
/// row whose concurrency exceeds one worker's slots (max_batch x attention DP) ran ceil(concurrency / slots).
/// Never fewer than `listed`, the workers the row states.
int aic_aggregated_workers(int concurrency, int max_batch, int attention_dp, int listed);

/// The engine limits the generator writes for a benchmark deployment.
struct AicEngineLimits {
  int max_num_tokens = 0;    // the plan's prefill token budget per step
  bool mixed_chunk = false;  // SGLang enable_mixed_chunk
};

/// generator/rule_plugin/benchmark/{trtllm,vllm,sglang}.rule at 095f58a51: the prefill token budget is
/// max_batch + isl + 1500 on an aggregated worker (TRT-LLM rounds it up to 32-token blocks), isl + 1500 on a
/// prefill worker; SGLang's is max_prefill_tokens = isl + 1500, capped by chunked_prefill_size, with
/// enable_mixed_chunk on for aggregated workers. SGLang's chunked_prefill_size is its default on `gpu`
/// (default_max_num_tokens).
AicEngineLimits aic_generator_limits(Engine e, Mode mode, int isl, int max_batch, const Gpu& gpu);

}  // namespace shardplan::serving
