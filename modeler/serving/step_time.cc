#include "modeler/serving/step_time.h"

#include <algorithm>

#include "modeler/collectives.h"
#include "modeler/serving/layer_kernels.h"

namespace shardplan::serving {

// The small kernels of a step besides the GEMMs, attention, MoE layer and all-reduces, which the measured tables
// already time with their fixed costs, are the engine's (engine_step.h). The three per block every engine
// launches on its own: the residual add + RMSNorm before attention and before the MLP (one kernel each: vLLM's
// RMSNorm.forward_cuda calls ops.fused_add_rms_norm, vllm/model_executor/layers/layernorm.py, and SGLang's
// fused_add_rmsnorm, python/sglang/srt/layers/layernorm.py, read in the indexed snapshots, versions not pinned
// to the rows'; TRT-LLM's RMSNorm at tp 1, fused into its all-reduce as RESIDUAL_RMS_NORM at tp > 1,
// tensorrt_llm/_torch/models/modeling_llama.py, whose fused kernel does the norm's work on top of the
// all-reduce the table times) and the gated activation (SiluAndMul / silu_and_mul / swiglu); the engines that
// run RoPE and the KV-cache write as kernels of their own add them (engine_step.cc), and QK-norm's kernels
// (Qwen3), whose bytes (a read and a write of the rank's q and k) join the elementwise passes. Per step: the
// embedding gather, the final norm and the sampler.

StepTime step_time(const ServingModel& sm, const System& sys, const WorkerPlan& w, const StepLoad& l) {
  const KernelCtx c{sm, sys, w, sys.gpu};
  const ModelDesc& m = sm.model;
  const double decode_tokens = l.decode_seqs * l.decode_tokens_per_seq;  // k + 1 each in a speculative step
  const double tokens = decode_tokens + l.prefill_tokens;
  StepTime st;
  if (tokens <= 0) return st;
  const double h = m.hidden;
  const Bytes act(tokens * h * 2.0);
  // Per block: input norm, residual adds, activation function, RoPE: about six passes over the hidden state.
  Bytes elementwise = act * 6.0;
  if (m.qk_norm != QkNorm::none && !m.mla)
    elementwise += Bytes(tokens * (1.0 * m.heads / w.tp + std::max(1.0, 1.0 * m.kv_heads / w.tp)) * m.head_dim * 4.0);
  // Those passes run as the engine's small kernels per block, each at least a small kernel's fixed cost.
  const Seconds kernel = small_kernel_time(c.g);
  const int group = w.tp * w.attention_dp;
  for (const LayerClass& cls : sm.classes) {
    Seconds lin, moe, cm, other;
    for (const LinearSpec& s : cls.linears) {
      if (s.router) {
        moe += linear_time(c, s, tokens);  // router
        continue;
      }
      lin += linear_time(c, s, tokens);
    }
    if (cls.moe) {
      const double pairs = tokens * w.attention_dp * m.moe->top_k;
      moe += moe_layer_time(c, cls.experts, pairs);
      if (w.attention_dp > 1) {
        // Dispatch and combine: each rank sends its tokens' top-k rows to the experts' ranks and back.
        const Bytes a2a(tokens * m.moe->top_k * h * 2.0);
        cm += step_collective_time(c, Collective::all_to_all, CommKind::ep, a2a, group) * 2.0;
      } else {
        cm += step_collective_time(c, Collective::all_reduce, CommKind::tp, act, w.tp);
      }
    } else {
      cm += step_collective_time(c, Collective::all_reduce, CommKind::tp, act, w.tp);
    }
    cm += step_collective_time(c, Collective::all_reduce, CommKind::tp, act, w.tp);  // after attention
    other = kernel * sm.engine.small_kernels_per_block + elementwise_time(c.g, elementwise + cls.norm_bytes);
    const Seconds attn = attention_time(c, cls, l);
    st.linear += lin * cls.count;
    st.moe += moe * cls.count;
    st.comm += cm * cls.count;
    st.other += other * cls.count;
    st.attention += attn * cls.count;
  }
  // LM head for the sequences that sample a token (a speculative verification samples at each of its k + 1
  // positions); pipeline hand-offs between stages; the step's own small
  // kernels (embedding gather, final norm, sampling).
  st.linear += linear_time(c, sm.lm_head, decode_tokens + l.prefill_seqs);
  st.other += kernel * sm.engine.small_kernels_per_step;
  st.host = sm.engine.host_per_step;
  if (w.pp > 1) {
    CommOp op{CommKind::pp, Collective::send_recv, act, 2, w.tp * w.attention_dp, 1, Window::exposed};
    st.comm += collective_time(sys, op) * (w.pp - 1.0);
  }
  st.total = st.linear + st.moe + st.comm + st.other + st.attention + st.host;
  return st;
}

}  // namespace shardplan::serving
