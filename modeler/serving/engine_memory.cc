#include "modeler/serving/engine_memory.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <string>

namespace shardplan::serving {

namespace {
// CUDA context, cuBLAS workspaces and the NCCL buffers a process holds outside the engines' budgets: about
// 0.5 GiB on recent drivers (PyTorch CUDA context 300-500 MiB, observed in nvidia-smi; not calibrated) [U].
constexpr double kRuntimeGiB = 0.5;
// llama.cpp's physical micro-batch (-ub, default 512: common/common.h n_ubatch).
constexpr double kLlamaUbatch = 512;
}  // namespace

int default_max_num_tokens(Engine e) {
  switch (e) {
    // vLLM V1 online serving default max_num_batched_tokens 8192 (vllm/engine/arg_utils.py, usage context
    // OPENAI_API_SERVER on data-centre GPUs) [U: recalled]; SGLang chunked_prefill_size 8192 (server_args.py,
    // GPUs with more than 60 GB) [U]; TRT-LLM max_num_tokens 8192 (trtllm-serve / LLM API BuildConfig default)
    // [U]; llama.cpp's ubatch 512.
    case Engine::vllm:
    case Engine::sglang:
    case Engine::trtllm: return 8192;
    case Engine::llamacpp: return static_cast<int>(kLlamaUbatch);
    case Engine::other: return 8192;
  }
  return 8192;
}

int default_max_num_tokens(Engine e, const Gpu& gpu) {
  const double gib = to_GiB(gpu.hbm_capacity);
  switch (e) {
    // vLLM V1 (vllm/engine/arg_utils.py, EngineArgs.get_batch_defaults): the OpenAI server's
    // max_num_batched_tokens is 8192 on devices with at least 70 GiB that are not an A100 (vLLM PR #17885), and
    // 2048 otherwise.
    case Engine::vllm: {
      std::string name = gpu.name;
      std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
      return gib >= 70 && name.find("a100") == std::string::npos ? 8192 : 2048;
    }
    // SGLang (python/sglang/srt/server_args.py, chunked_prefill_size by the device's memory): 2048 below 35 GiB,
    // 4096 below 60 GiB (A100 40 GB, L40S; releases before that tier used 8192 there), 8192 below 160 GiB
    // (H100, H200), 16384 above (B200, B300, GB200, GB300).
    case Engine::sglang: return gib < 35 ? 2048 : gib < 60 ? 4096 : gib < 160 ? 8192 : 16384;
    default: return default_max_num_tokens(e);
  }
}

double default_memory_fraction(Engine e, int tp) {
  switch (e) {
    case Engine::vllm: return 0.90;  // CacheConfig.gpu_memory_utilization default 0.9 (vllm/config) [U]
    case Engine::trtllm: return 0.90;  // KvCacheConfig.free_gpu_memory_fraction default 0.9 (tensorrt_llm) [U]
    case Engine::sglang:
      // SGLang server_args.py's mem_fraction_static heuristic by tp size (v0.3-0.4): 0.88, 0.87 (tp 2), 0.85
      // (tp 4), 0.81 (tp 8), 0.79 (tp 16) [U: recalled; newer releases size it from the GPU's memory].
      return tp >= 16 ? 0.79 : tp >= 8 ? 0.81 : tp >= 4 ? 0.85 : tp >= 2 ? 0.87 : 0.88;
    case Engine::llamacpp: return 1.0;
    case Engine::other: return 0.90;
  }
  return 0.9;
}

Bytes kv_bytes_per_token(const ServingModel& sm, const WorkerPlan& w, double seq_len) {
  const ModelDesc& m = sm.model;
  const double per_layer = m.mla ? 1.0 * (m.mla->kv_lora_rank + m.mla->qk_rope_head_dim)
                                 : 2.0 * std::max(1.0, 1.0 * m.kv_heads / w.tp) * m.head_dim;
  double layers = 0;
  for (const LayerClass& c : sm.classes) {
    const double keep = c.sliding && seq_len > 0 ? std::min(1.0, m.sliding_window / seq_len) : 1.0;
    layers += c.count * keep;
  }
  return Bytes(per_layer * sm.precision.kv_bytes * layers / w.pp);
}

Bytes weight_bytes_per_gpu(const ServingModel& sm, const WorkerPlan& w) {
  double layer_bytes = 0;
  for (const WeightTensor& t : sm.tensors) {
    if (t.layer < 0 || t.layer >= sm.model.layers) continue;
    double div = 1;
    if (t.experts > 0) div = 1.0 * w.moe_tp * w.moe_ep;
    else if (t.split != TpSplit::none) div = t.kv ? std::min(1.0 * w.tp, 1.0 * sm.model.kv_heads) : w.tp;
    layer_bytes += low_rank_rank_bytes(t.n, t.k, t.xf, t.bytes, t.split == TpSplit::column, div).v;
  }
  // The busiest stage: ceil(layers / pp) layers; embedding on the first and LM head on the last (both for pp 1).
  const double stage = std::ceil(1.0 * sm.model.layers / w.pp) / sm.model.layers;
  const double head = sm.model.tied_embeddings ? 0 : sm.lm_head.bytes.v;
  const double ends = w.pp == 1 ? sm.embedding_bytes.v + head : std::max(sm.embedding_bytes.v, head);
  return Bytes(layer_bytes * stage + ends / w.tp);
}

MemoryReport engine_memory(const ServingModel& sm, const Gpu& gpu, const WorkerPlan& w, Engine e,
                           const EngineMemoryOptions& opts, double seq_len) {
  const ModelDesc& m = sm.model;
  MemoryReport r;
  r.capacity = gpu.hbm_capacity;
  r.weights = weight_bytes_per_gpu(sm, w);
  r.other = GiB(kRuntimeGiB);
  const double tokens = opts.max_num_tokens > 0 ? opts.max_num_tokens : default_max_num_tokens(e, gpu);
  const double ffn = m.moe ? std::max(m.ffn_hidden, m.moe->expert_ffn_hidden * m.moe->top_k) : m.ffn_hidden;
  // Peak activation of the largest step: the gated MLP's intermediate (2 f / tp, 16-bit) plus about four
  // hidden-sized buffers (residual, normed input, attention output, QKV) [derived, not calibrated].
  const double per_token = 2.0 * (2.0 * ffn / w.tp + 4.0 * m.hidden + (m.heads + 2.0 * m.kv_heads) * m.head_dim / w.tp);
  r.fraction = opts.fraction > 0 ? opts.fraction : default_memory_fraction(e, w.tp);
  switch (e) {
    case Engine::llamacpp: {
      // Compute buffers: the ubatch's f32 logits (n_ubatch x vocab) and MLP intermediates [derived].
      r.activations = Bytes(kLlamaUbatch * 4.0 * (m.vocab + 2.0 * ffn));
      const double ctx = opts.context > 0 ? opts.context : seq_len;
      r.kv_cache = kv_bytes_per_token(sm, w, ctx) * ctx;
      r.rule = "llama.cpp: model + context (" + std::to_string(static_cast<long long>(ctx)) +
               " tokens) + compute buffers";
      break;
    }
    case Engine::sglang:
      r.activations = Bytes(tokens * per_token);
      r.kv_cache = r.capacity * r.fraction - r.weights;
      r.rule = "SGLang: KV = mem_fraction_static x capacity - weights";
      break;
    case Engine::trtllm:
      r.activations = Bytes(tokens * per_token);
      r.kv_cache = (r.capacity - r.weights - r.activations - r.other) * r.fraction;
      r.rule = "TRT-LLM: KV = free_gpu_memory_fraction x (capacity - weights - activations)";
      break;
    case Engine::vllm:
    case Engine::other:
      r.activations = Bytes(tokens * per_token);
      r.kv_cache = r.capacity * r.fraction - r.weights - r.activations;
      r.rule = "vLLM: KV = gpu_memory_utilization x capacity - weights - peak activation";
      break;
  }
  settle_memory(&r);
  return r;
}

void settle_memory(MemoryReport* r) {
  if (r->kv_cache.v < 0) {
    r->fits = false;
    r->kv_cache = Bytes(0);
  }
  r->total = r->weights + r->activations + r->kv_cache + r->other;
  if (r->total > r->capacity) r->fits = false;
}

}  // namespace shardplan::serving
