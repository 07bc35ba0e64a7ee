// How NVIDIA AIConfigurator's generator deploys and benchmarks a serving configuration, for the rows of its
// silicon_sample.csv: the worker count a row's concurrency implies, the engine limits the generator writes, and
// the closed-loop benchmark it runs. This is the benchmark's setup, not the engines' physics; serve validate
// applies it to AIConfigurator rows only.
#pragma once

#include <string>

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
  bool mixed_chunk = false;  // SGLang enable_mixed_chunk, as the engine runs it
};

/// AIConfigurator's MTP depth (its ModelConfig.nextn) for a model: 1 for DeepSeek-V3 and -R1
/// (src/aiconfigurator/cli/templates/sglang/deepseek_default.yaml at 6e66597: `nextn: 1`; the checkpoint ships one
/// MTP layer, num_nextn_predict_layers = 1 in tests/validation/serving/hf_configs/deepseek-v3.json), 0 otherwise.
int aic_default_nextn(const std::string& model_name);

/// generator/rule_plugin/benchmark/{trtllm,vllm,sglang}.rule at 095f58a51: the prefill token budget is
/// max_batch + isl + 1500 on an aggregated worker (TRT-LLM rounds it up to 32-token blocks), isl + 1500 on a
/// prefill worker; SGLang's is max_prefill_tokens = isl + 1500, capped by chunked_prefill_size, with
/// enable_mixed_chunk on for aggregated workers. SGLang's chunked_prefill_size is its default on `gpu`
/// (default_max_num_tokens).
/// With `nextn` > 0 the SGLang rule also turns on speculative decoding (`speculative_decoding_type = "NEXTN"`,
/// benchmark/sglang.rule), and SGLang then switches mixed chunk off again: NEXTN runs as EAGLE, and EAGLE sets
/// enable_mixed_chunk = False (python/sglang/srt/server_args.py, _handle_speculative_decoding, sgl-project/sglang
/// 469c63e). So a DeepSeek worker pauses its decodes for each prefill batch although the generator asked for
/// mixed chunks. serve validate does not pass `nextn` yet: the CSV does not record it, and with decodes paused the
/// simulated benchmark keeps every round's prompts together, which overshoots the SGLang H200 DeepSeek rows
/// (docs/serving.md, "TTFT on the AIConfigurator rows").
AicEngineLimits aic_generator_limits(Engine e, Mode mode, int isl, int max_batch, const Gpu& gpu, int nextn = 0);

/// KV-cache bytes per element of an AIConfigurator row whose CSV records no KV format (it has no column for it),
/// for a checkpoint with quantised (not 16-bit) weights; `generator_deployed`: the row states `deployment:
/// aic_generator` (its source names the container image or the deployment database dump; docs/design.md).
/// - Generator-deployed rows and every engine but SGLang: an fp8 cache (1), AIConfigurator's kv-cache mode for
///   quantised checkpoints; the generator writes it as SGLang's --kv-cache-dtype (benchmark/sglang.rule at
///   095f58a51: kv_cache_dtype "fp8" -> "fp8_e4m3").
/// - SGLang sweeps the generator did not deploy keep the engine default --kv-cache-dtype auto, which takes fp8
///   only when the checkpoint's quant config names FP8 KV (kv_cache_quant_algo, as ModelOpt exports write it) and
///   the model dtype otherwise (python/sglang/srt/model_executor/model_runner.py, configure_kv_cache_dtype, the
///   0.5.x releases read in the index): a bf16 cache (2). The rows concerned (SGLang 0.5.6.post2 on H200:
///   Qwen3-235B-A22B-FP8, a block-fp8 checkpoint whose quantization_config names no KV scheme, and
///   Llama-3.1-8B-Instruct, a bf16 checkpoint) carry none.
double aic_quantised_kv_bytes(Engine e, bool generator_deployed);

}  // namespace shardplan::serving
