#include "modeler/serving/engine_step.h"

#include <cstdio>
#include <utility>

namespace shardplan::serving {

namespace {

// "0.12.0" -> {0, 12}; {-1, -1} when the version does not start with major.minor.
std::pair<int, int> major_minor(const std::string& v) {
  int major = -1, minor = -1;
  if (std::sscanf(v.c_str(), "%d.%d", &major, &minor) != 2) return {-1, -1};
  return {major, minor};
}

// RoPE on q and k (one kernel where the model uses rotary positions) and the write of the step's K/V into the
// paged cache (one kernel), as kernels of their own between the QKV GEMM and the attention kernel; none for MLA.
double rope_and_cache_write_kernels(const ModelDesc& m) {
  if (m.mla) return 0;
  return 1.0 + (m.position == PositionKind::rope ? 1.0 : 0.0);
}

}  // namespace

EngineStep engine_step(Engine engine, const std::string& version, const ModelDesc& m) {
  EngineStep s;
  switch (engine) {
    case Engine::trtllm:
      // The PyTorch backend's attention op applies RoPE and appends K/V to the cache inside its fused kernel
      // (tensorrt_llm/_torch/attention_backend/trtllm.py), which the measured decode attention times. Its
      // executor overlaps scheduling with the forward unless disable_overlap_scheduler is set
      // (tensorrt_llm/llmapi/llm_args.py, off by default).
      s.source = "trtllm: RoPE and KV append inside the attention op (_torch/attention_backend/trtllm.py)";
      break;
    case Engine::sglang:
      // RotaryEmbedding.forward_cuda runs sgl_kernel's rope kernel on q and k in place
      // (python/sglang/srt/layers/rotary_embedding.py); the attention backends then call
      // token_to_kv_pool.set_kv_buffer, which writes K and V by index (K and V on two streams inside a graph
      // capture, so one kernel on the critical path; python/sglang/srt/mem_cache/memory_pool.py). MLA layers
      // write the latent with their own fused kernel and run RoPE inside the absorbed path: not counted. The
      // overlap schedule runs unless --disable-overlap-schedule (python/sglang/srt/server_args.py).
      s.small_kernels_per_block += rope_and_cache_write_kernels(m);
      s.source = "sglang: RoPE kernel + set_kv_buffer per block (layers/rotary_embedding.py, mem_cache/memory_pool.py)";
      break;
    case Engine::vllm:
      // V1 attention writes the step's K/V with reshape_and_cache_flash before the attention kernel
      // (vllm/v1/attention/backends/flash_attn.py); RoPE sits between the QKV GEMM and the attention custom op,
      // which torch.compile cannot fuse across, so it is a kernel of its own whether it runs as the rotary
      // custom op or Inductor's code (vllm/model_executor/layers/rotary_embedding). Async scheduling (the
      // scheduler overlapping the forward, vllm PR #19970) is off by default in the rows' 0.12.0
      // (SchedulerConfig.async_scheduling = False, vllm/config/scheduler.py; turned on by default by PR #27614,
      // which the async-scheduling plan, vllm issue #27679, lists after PRs of late December 2025), so the rows'
      // engine schedules between steps; no measured per-step figure for V1 is at hand, so
      // host_per_step stays zero. Versions between 0.12 and the current release were not read: they count as
      // overlapping.
      s.small_kernels_per_block += rope_and_cache_write_kernels(m);
      if (const auto [major, minor] = major_minor(version); major == 0 && minor >= 0 && minor <= 12)
        s.overlaps_scheduler = false;
      s.source = "vllm: RoPE + reshape_and_cache_flash per block (v1/attention/backends/flash_attn.py)";
      break;
    case Engine::llamacpp:
    case Engine::other:
      break;
  }
  return s;
}

}  // namespace shardplan::serving
