#include "modeler/serving/aic_benchmark.h"

#include <doctest/doctest.h>

using namespace shardplan;
using namespace shardplan::serving;

namespace {
Gpu gpu_of(const char* name, double gib) {
  Gpu g;
  g.name = name;
  g.hbm_capacity = GiB(gib);
  return g;
}
const Gpu kH100 = gpu_of("h100-sxm5-80gb", 80);
const Gpu kB200 = gpu_of("b200", 179.1);
}  // namespace

TEST_CASE("AIConfigurator rows: workers = ceil(concurrency / (max_batch x attention DP)), never below the listed") {
  CHECK(aic_aggregated_workers(64, 64, 1, 1) == 1);
  CHECK(aic_aggregated_workers(65, 64, 1, 1) == 2);
  CHECK(aic_aggregated_workers(256, 32, 2, 1) == 4);
  CHECK(aic_aggregated_workers(8, 64, 1, 3) == 3);
  CHECK(aic_aggregated_workers(4, 0, 1, 1) == 4);  // a zero batch counts as one slot, not a division by zero
}

TEST_CASE("AIConfigurator generator limits per engine and mode") {
  // TRT-LLM aggregated: max_batch + isl + 1500, rounded up to 32-token blocks.
  const AicEngineLimits t = aic_generator_limits(Engine::trtllm, Mode::aggregated, 1024, 10, kH100);
  CHECK(t.max_num_tokens == 2560);  // 2534 -> 2560
  CHECK_FALSE(t.mixed_chunk);
  // A prefill worker leaves the batch out.
  CHECK(aic_generator_limits(Engine::trtllm, Mode::disaggregated, 1024, 10, kH100).max_num_tokens == 2528);
  // vLLM: no rounding.
  CHECK(aic_generator_limits(Engine::vllm, Mode::aggregated, 1024, 10, kH100).max_num_tokens == 2534);
  // SGLang: isl + 1500 capped by chunked_prefill_size, mixed chunk on aggregated workers only.
  const AicEngineLimits s = aic_generator_limits(Engine::sglang, Mode::aggregated, 1024, 10, kH100);
  CHECK(s.max_num_tokens == 2524);
  CHECK(s.mixed_chunk);
  // The cap is SGLang's chunked_prefill_size on that GPU: 8192 on an 80 GB H100, 16384 on a B200.
  CHECK(aic_generator_limits(Engine::sglang, Mode::aggregated, 8192, 10, kH100).max_num_tokens == 8192);
  CHECK(aic_generator_limits(Engine::sglang, Mode::aggregated, 8192, 10, kB200).max_num_tokens == 9692);
  CHECK(aic_generator_limits(Engine::sglang, Mode::aggregated, 16000, 10, kB200).max_num_tokens == 16384);
  CHECK_FALSE(aic_generator_limits(Engine::sglang, Mode::disaggregated, 1024, 10, kH100).mixed_chunk);
}

TEST_CASE("AIConfigurator's MTP default turns SGLang's mixed chunk off") {
  CHECK(aic_default_nextn("deepseek-ai/DeepSeek-V3") == 1);
  CHECK(aic_default_nextn("deepseek-ai/DeepSeek-R1") == 1);
  CHECK(aic_default_nextn("Qwen/Qwen3-32B") == 0);
  CHECK(aic_default_nextn("DeepSeek-Coder-V2-Lite-Base") == 0);  // no MTP layer
  // SGLang's EAGLE path (which NEXTN runs as) switches mixed chunk off; the token budget is unchanged.
  const AicEngineLimits m = aic_generator_limits(Engine::sglang, Mode::aggregated, 1024, 10, kH100, 1);
  CHECK_FALSE(m.mixed_chunk);
  CHECK(m.max_num_tokens == 2524);
  CHECK(aic_generator_limits(Engine::sglang, Mode::aggregated, 1024, 10, kH100, 0).mixed_chunk);
  // The other engines have no mixed-chunk switch; their budgets do not depend on MTP.
  CHECK(aic_generator_limits(Engine::trtllm, Mode::aggregated, 1024, 10, kH100, 1).max_num_tokens == 2560);
}

TEST_CASE("KV cache of a quantised checkpoint with no recorded KV format: fp8, but SGLang's auto outside the generator") {
  // The generator writes --kv-cache-dtype fp8_e4m3 (benchmark/sglang.rule); AIConfigurator's other rows run fp8.
  CHECK(aic_quantised_kv_bytes(Engine::sglang, true) == 1.0);
  CHECK(aic_quantised_kv_bytes(Engine::trtllm, false) == 1.0);
  CHECK(aic_quantised_kv_bytes(Engine::vllm, false) == 1.0);
  // SGLang's --kv-cache-dtype auto keeps the model dtype unless the checkpoint names FP8 KV (model_runner.py).
  CHECK(aic_quantised_kv_bytes(Engine::sglang, false) == 2.0);
}
