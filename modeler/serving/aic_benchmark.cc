#include "modeler/serving/aic_benchmark.h"

#include <algorithm>

#include "modeler/serving/engine_memory.h"

namespace shardplan::serving {

int aic_aggregated_workers(int concurrency, int max_batch, int attention_dp, int listed) {
  const int slots = std::max(1, max_batch * attention_dp);
  return std::max(listed, (concurrency + slots - 1) / slots);
}

int aic_default_nextn(const std::string& model_name) {
  return model_name.find("DeepSeek-V3") != std::string::npos || model_name.find("DeepSeek-R1") != std::string::npos
             ? 1
             : 0;
}

AicEngineLimits aic_generator_limits(Engine e, Mode mode, int isl, int max_batch, const Gpu& gpu, int nextn) {
  const bool disagg = mode == Mode::disaggregated;
  const int mb = disagg ? 0 : max_batch;
  AicEngineLimits l;
  int t = isl + 1500 + (e == Engine::sglang ? 0 : mb);
  if (e == Engine::trtllm) t = (t + 31) / 32 * 32;
  if (e == Engine::sglang) t = std::min(t, default_max_num_tokens(e, gpu));
  l.max_num_tokens = t;
  // Speculative decoding (nextn > 0) switches SGLang's mixed chunk off (aic_benchmark.h).
  l.mixed_chunk = e == Engine::sglang && !disagg && nextn == 0;
  return l;
}

double aic_quantised_kv_bytes(Engine e, bool generator_deployed) {
  return e == Engine::sglang && !generator_deployed ? 2.0 : 1.0;
}

}  // namespace shardplan::serving
