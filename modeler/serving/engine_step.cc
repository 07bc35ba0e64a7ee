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

// QK-norm's kernels on the step's critical path (model_desc.h QkNorm), per engine, where it runs them outside the
// measured GEMM and attention ops; none without QK-norm or for MLA.
//   trtllm: Qwen3Attention (tensorrt_llm/_torch/models/modeling_qwen3.py, fuse_qk_norm_rope default True, read at
//     NVIDIA/TensorRT-LLM@5dedf53b) normalises q and k and applies RoPE in one fused_qk_norm_rope kernel and turns
//     the attention op's own RoPE fusion off (_torch/modules/qk_norm_attention.py QKNormRoPEAttention): one kernel.
//   sglang: apply_qk_norm (python/sglang/srt/models/utils.py, read at sgl-project/sglang@01b5f572) runs q_norm and
//     k_norm as one fused in-place kernel where it can, else k_norm on an alternate stream beside q_norm: one kernel
//     on the critical path. Not read at the rows' 0.5.1-0.5.8 tags.
//   vllm: Qwen3Attention.forward (vllm/model_executor/models/qwen3.py, read at vllm-project/vllm@002456df) calls
//     q_norm and k_norm one after the other; the Q/K-norm + RoPE fusion pass is off by default
//     (PassConfig.enable_qk_norm_rope_fusion = False, vllm/config/compilation.py@002284db): two kernels.
// A full-width norm (OLMo-2) runs as two norm calls everywhere (vllm/model_executor/models/olmo2.py _apply_qk_norm,
// which also all-gathers q and k under tp > 1: not counted).
double qk_norm_kernels(Engine engine, const ModelDesc& m) {
  if (m.qk_norm == QkNorm::none || m.mla) return 0;
  const bool counted = engine == Engine::trtllm || engine == Engine::sglang || engine == Engine::vllm;
  if (m.qk_norm == QkNorm::full) return counted ? 2.0 : 0.0;
  switch (engine) {
    case Engine::trtllm: return 1;
    case Engine::sglang: return 1;
    case Engine::vllm: return 2;
    case Engine::llamacpp:
    case Engine::other: return 0;
  }
  return 0;
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
  s.small_kernels_per_block += qk_norm_kernels(engine, m);
  return s;
}

}  // namespace shardplan::serving
