#include "modeler/memory_model.h"

#include "modeler/finetune.h"
#include "modeler/optimizer.h"
#include "modeler/precision_recipe.h"
#include "modeler/stage_params.h"
#include "modeler/zero3_working_set.h"

#include <algorithm>

namespace shardplan {

namespace {
constexpr double kAct = 2.0;  // 16-bit activations
// CUDA context + cuBLAS/cuDNN workspaces + NCCL channel buffers of a PyTorch training process: ~0.5-0.8 GiB of
// context on Hopper (nvidia-smi of an idle CUDA 12 PyTorch process) plus a 32 MiB cuBLAS workspace and NCCL's
// 4 MiB buffer per channel and peer; taken as 1 GiB.
constexpr double kContextGiB = 1.0;
// Caching-allocator fragmentation reserved but not allocated (PyTorch memory_reserved - memory_allocated is
// typically a few percent of the allocated peak); 5% of the allocated total.
constexpr double kFragmentation = 0.05;
}  // namespace

bool trains_with_dropout(const ModelDesc& m) { return !m.gated_mlp; }

double full_recompute_share(const Plan& p, const Sharding& sh) {
  if (p.recompute != Recompute::full) return 0.0;
  if (p.recompute_layers <= 0) return 1.0;
  const double per_chunk = sh.layers / std::max(1, sh.chunks);
  return per_chunk > 0 ? std::min(1.0, p.recompute_layers / per_chunk) : 1.0;
}

namespace {

// Attention-region tensors saved for backward, per layer, beyond the norm region: Q, K, V and the attention output
// (the output projection's input), and QK-norm's inputs where the model has it. MLA (DeepSeek-V2 Sec. 2.1) saves
// queries and keys at the qk head dim (nope + rope), values and output at v_head_dim, and the two latents its
// up-projections read.
// QK-norm's saved tensors (model_desc.h QkNorm): Transformer Engine's RMSNorm saves its 16-bit input and the fp32
// reciprocal RMS of each normalised row for the backward (NVIDIA/TransformerEngine@fedd9ddc (v2.7)
// transformer_engine/pytorch/ops/basic/rmsnorm.py op_forward: ctx.save_for_backward(x, rstdevs)), and Megatron-Core
// core_v0.14.0 attention.py normalises the query and key before RoPE, whose fused kernel saves nothing: the pre-norm
// q and k are kept beside the post-RoPE ones the attention kernel saves. Rows: one per head, or one per token (full).
double qk_norm_bytes(const ModelDesc& m, const Sharding& sh) {
  if (m.qk_norm == QkNorm::none || m.mla) return 0.0;
  const double T = sh.tokens, heads = sh.heads + sh.kv_heads;
  const double rows = m.qk_norm == QkNorm::per_head ? T * heads : 2.0 * T;
  return T * heads * m.head_dim * kAct + 4.0 * rows;
}

double attention_bytes(const ModelDesc& m, const Sharding& sh) {
  const double T = sh.tokens;
  if (!m.mla) return T * (2.0 * sh.heads + 2.0 * sh.kv_heads) * m.head_dim * kAct + qk_norm_bytes(m, sh);
  const MlaDesc& a = *m.mla;
  const double qk = a.qk_nope_head_dim + a.qk_rope_head_dim;
  const double latents = 1.0 * a.q_lora_rank + a.kv_lora_rank + a.qk_rope_head_dim;
  return T * (sh.heads * (2.0 * qk + 2.0 * a.v_head_dim) + latents) * kAct;
}

// MLP tensors of an MoE layer: router probabilities (fp32, T x experts), and per routed token-expert pair the
// permuted input (grouped fc1's input), fc1's output (2f gated), the activation output (fc2's input) and fc2's
// output (kept for the probability-weighted combine's gradient, unless the probabilities scale the activation:
// Megatron-Core's TEGroupedMLP, which keeps one fp32 probability per pair instead); shared experts as a dense MLP
// on all tokens. The two linear inputs take `lin` bytes per element.
double moe_mlp_bytes(const ModelDesc& m, const Sharding& sh, double lin, bool saves_fc2_output) {
  const double pairs = sh.expert_tokens, up = m.gated_mlp ? 2.0 : 1.0;
  const double combine = saves_fc2_output ? m.hidden * kAct : 4.0;
  return sh.moe_tokens * m.moe->experts * 4.0 +
         pairs * (m.hidden * lin + combine + sh.expert_ffn * (up * kAct + lin)) +
         sh.tokens * sh.shared_ffn * (up * kAct + lin);
}

// Bytes per layer beyond the count of activation_bytes_per_layer where the linears save gathered inputs
// (Framework::tp_saves_gathered_inputs): torchtitan's DTensor styles (9dec370 parallelize_llama.py apply_tp) gather
// each norm's output once, in the attention and feed_forward PrepareModuleInput(Shard(1) -> Replicate()), for the
// column-parallel wq/wk/wv and w1/w3, and each mm saves that gathered tensor: the full sequence (tokens) instead
// of the local shard (norm_tokens) for the QKV and MLP-up inputs. An fp8 plan gathers the fp8 cast (torchao
// Float8ColwiseParallel's PrepareFloat8ModuleInput casts before redistributing), 1 byte.
double gathered_linear_inputs_delta(const ModelDesc& m, const Sharding& sh, const Plan& p, const Framework& fw) {
  if (!fw.tp_saves_gathered_inputs || p.tp <= 1 || sh.tokens <= sh.norm_tokens) return 0.0;
  const double bytes = p.precision == Dtype::fp8 ? 1.0 : kAct;
  return 2.0 * (sh.tokens - sh.norm_tokens) * m.hidden * bytes;
}

// K/V gathered for one layer's attention by the all-gather exchange (CpKind::allgather), which no saved
// activation holds: PyTorch's _AllGatherRotater (torch/distributed/tensor/experimental/_attention.py, late 2024)
// all-gathers the rank's concatenated K and V (ft_c.all_gather_tensor, gather_dim 0) into a buffer of cp x the
// local K/V, 16-bit, at the query heads where the framework repeats the kv heads (torchtitan's repeat_kv), alive
// through that layer's ring loop; backward's kv_rotater gathers them again rather than saving them. Transformer
// Engine's AttnFuncWithCPAndKVAllGather gathers the same K/V (its kv heads) before the local chunks' attention.
// One layer's at a time, in forward and in backward: a transient on top of the saved activations.
double gathered_kv_bytes(const Context& ctx, const Sharding& sh) {
  const Plan& p = ctx.plan;
  if (p.cp <= 1 || p.cp_kind != CpKind::allgather) return 0.0;
  const double heads = ctx.framework.gqa_repeats_kv ? std::max(sh.heads, sh.kv_heads) : sh.kv_heads;
  return p.cp * 2.0 * sh.tokens * heads * ctx.model.head_dim * kAct;
}

}  // namespace

double op_sac_activation_bytes_per_layer(const ModelDesc& m, const Sharding& sh) {
  const double T = sh.tokens, h = m.hidden, d = m.head_dim;
  // Saved under torchtitan's op-level SAC: the checkpointed layer input, the outputs of the 1st, 3rd, 5th and 7th
  // matmuls (wq, wv, w1, w2 for a gated MLP; wq, wv, w1 for a plain one), SDPA's output and log-sum-exp.
  double bytes = T * h * kAct;                                  // layer input
  bytes += T * (sh.heads + sh.kv_heads) * d * kAct;             // wq and wv outputs
  bytes += T * sh.heads * d * kAct + 4.0 * T * sh.heads;        // SDPA output + fp32 log-sum-exp
  bytes += T * sh.ffn * kAct;                                   // w1 output
  if (m.gated_mlp) bytes += T * h * kAct;                       // w2 output
  return bytes;
}

double recompute_module_bytes(const ModelDesc& m, const Sharding& sh, unsigned modules, double linear_input_bytes,
                              bool moe_saves_fc2_output) {
  const double T = sh.tokens, lin = linear_input_bytes, up = m.gated_mlp ? 2.0 : 1.0;
  const double moe = stage_moe_share(m, sh);
  double bytes = 0;
  if (modules & kRecomputeLayernorm) bytes += 2.0 * sh.norm_tokens * m.hidden * lin;
  if (modules & kRecomputeMlp) bytes += (1.0 - moe) * T * sh.ffn * (up * kAct + lin);
  if (moe > 0 && (modules & kRecomputeMoe)) {
    bytes += moe * moe_mlp_bytes(m, sh, lin, moe_saves_fc2_output);
  } else if (moe > 0) {
    if (modules & kRecomputeMoeAct) bytes += moe * sh.expert_tokens * sh.expert_ffn * lin;
    if (modules & kRecomputeSharedExperts) bytes += moe * T * sh.shared_ffn * (up * kAct + lin);
  }
  if (m.mla && (modules & kRecomputeMlaUpProj)) {
    const MlaDesc& a = *m.mla;
    bytes += T * sh.heads * (2.0 * (a.qk_nope_head_dim + a.qk_rope_head_dim) + a.v_head_dim) * kAct;
  }
  return bytes;
}

double activation_bytes_per_layer(const ModelDesc& m, const Sharding& sh, Recompute recompute, bool dropout,
                                  bool flash, double linear_input_bytes, unsigned recompute_modules,
                                  bool moe_saves_fc2_output) {
  const double T = sh.tokens, Tn = sh.norm_tokens, h = m.hidden, lin = linear_input_bytes;
  if (recompute == Recompute::full) return Tn * h * kAct;  // the layer input only (Korthikanti Eq. 6: 2sbh/t)
  // Norm region (replicated over tp unless sequence parallel): inputs of both norms, and their outputs, the
  // inputs of QKV and MLP-up.
  double bytes = 2.0 * Tn * h * (kAct + lin);
  if (dropout) bytes += 2.0 * Tn * h;  // two 1-byte dropout masks (attention output, MLP output)
  // Tensor-parallel region: Q, K, V, attention output (input of the output projection).
  bytes += attention_bytes(m, sh);
  if (lin < kAct) bytes += T * sh.heads * (m.mla ? m.mla->v_head_dim : m.head_dim) * lin;  // the projection's copy
  // MLP: activation-function input (2f for gate+up) and output (input of the down projection); MoE layers (their
  // share of the rank's layers, stage_moe_share: its own under a custom layout) hold their experts' tensors instead.
  const double dense_mlp = T * sh.ffn * ((m.gated_mlp ? 2.0 : 1.0) * kAct + lin);
  const double moe = stage_moe_share(m, sh);
  bytes += moe > 0 ? (1.0 - moe) * dense_mlp + moe * moe_mlp_bytes(m, sh, lin, moe_saves_fc2_output) : dense_mlp;
  const bool selective = recompute == Recompute::selective;
  if (selective) bytes -= recompute_module_bytes(m, sh, recompute_modules, lin, moe_saves_fc2_output);
  if (flash) {
    bytes += 4.0 * T * sh.heads;  // fp32 log-sum-exp per query row and head
  } else if (!selective || !(recompute_modules & kRecomputeCoreAttn)) {
    // Scores after softmax (2 bytes), dropout mask (1) and dropout output (2): 5 a s^2 b, with local heads.
    const double per_head = sh.batch * sh.seq_q * sh.seq_kv;
    bytes += (dropout ? 5.0 : 2.0) * sh.heads * per_head;
  }
  return bytes;
}

MemoryBreakdown memory_breakdown(const Context& ctx, const Sharding& sh, const Schedule& sched) {
  const Plan& p = ctx.plan;
  const Framework& fw = ctx.framework;
  const StageParams params = busiest_stage_params(ctx, sh);
  MemoryBreakdown mem;
  mem.capacity = ctx.system.gpu.hbm_capacity;
  // Cached fp8 (transposed) weight copies, where the framework keeps them.
  const double fp8_copy = p.precision == Dtype::fp8 && fw.fp8_caches_weights ? 1.0 : 0.0;
  // FSDP without resharding after forward (ZeRO-2): the stored fp32 parameters are sharded like the gradients and
  // the unsharded compute copy stays gathered through forward and backward. Otherwise the stored weights (with
  // their fp8 copy) are the compute copy, sharded as ZeRO shards weights. Routed experts are sharded over the
  // expert-data-parallel group (Megatron-Core's expert distributed-optimizer buffers), everything else over dp x cp.
  const bool gathered = fw.fsdp_unsharded_param_bytes > 0 && p.zero == 2;
  // With fp8 all-gather (torchao enable_fsdp_float8_all_gather) the unsharded copy is the gathered fp8 data
  // (precision_recipe.h); the embedding, not a Float8Linear, is counted so too (a small share of any model).
  const double unsharded = std::min(fw.fsdp_unsharded_param_bytes, param_gather_bytes(p, fw));
  auto per_param = [&](double weight_shard, double gradient_shard) {
    return gathered ? fw.state.weights / gradient_shard + unsharded + fp8_copy
                    : (fw.state.weights + fp8_copy) / weight_shard;
  };
  mem.weights = Bytes(params.dense() * per_param(sh.dp_shard_weights, sh.dp_shard_gradients) +
                      params.experts * per_param(sh.edp_shard_weights, sh.edp_shard_gradients));
  mem.gradients = Bytes(owned_state_params(ctx, sh, true) * fw.state.gradients);
  // Pipelined FSDP: gradients accumulate unsharded over the micro-batches before the one reduce-scatter.
  if (gathered && p.pp > 1)
    mem.gradients += Bytes(params.total() * trainable_share(ctx.model, p) * fw.pp_deferred_grad_bytes);
  mem.optimizer = Bytes(owned_state_params(ctx, sh, false) * optimizer_bytes_per_param(ctx));
  // Fine-tuning: frozen base weights (bf16 or NF4) plus the adapters replace the trained weights (finetune.h).
  if (base_frozen(p)) mem.weights = finetune_weights(ctx, sh, params);

  const bool dropout = trains_with_dropout(ctx.model);
  const bool flash = !fw.materialized_attention;
  const double lin = p.precision == Dtype::fp8 && fw.fp8_saves_linear_inputs ? 1.0 : kAct;
  // A frozen base keeps fewer linear inputs and adds the adapters' tensors (finetune.h); the layer input that full
  // recompute keeps is unchanged.
  // Norms that keep an fp32 copy of their input (Framework::norm_saved_input_bytes) add the difference for both.
  // Eager stacks' extra tensors (framework.h): the SiLU output of `silu(gate) * up`, and the pre-RoPE Q and K that
  // a V view keeps alive in the fused QKV output.
  // DTensor tensor parallelism saves the gathered linear inputs (gathered_linear_inputs_delta); op-level selective
  // checkpointing does not save them (the all-gather is not on its save list) and re-materialises them with the
  // layer, as full recompute does.
  const ModelDesc& md = ctx.model;
  double eager = 0;
  if (fw.eager_swiglu_saves_silu_output && md.gated_mlp && !md.moe) eager += sh.tokens * sh.ffn * kAct;
  if (fw.attention_keeps_fused_qkv && !md.mla) eager += sh.tokens * (sh.heads + sh.kv_heads) * md.head_dim * kAct;
  const double delta = finetune_activation_delta(md, sh, p, lin, fw) +
                       2.0 * sh.norm_tokens * md.hidden * (fw.norm_saved_input_bytes - kAct) + eager +
                       gathered_linear_inputs_delta(md, sh, p, fw);
  const double per_layer = (p.recompute == Recompute::selective && fw.selective_is_op_sac)
                               ? op_sac_activation_bytes_per_layer(ctx.model, sh)
                               : activation_bytes_per_layer(ctx.model, sh, p.recompute, dropout, flash, lin,
                                                            p.recompute_modules, !fw.moe_probs_in_activation) +
                                      (p.recompute == Recompute::full ? 0.0 : delta);
  // A layer's every tensor, as without recompute: what recompute re-materialises for one layer's backward.
  const double whole = p.recompute == Recompute::none
                           ? per_layer
                           : activation_bytes_per_layer(ctx.model, sh, Recompute::none, dropout, flash, lin,
                                                        kRecomputeCoreAttn, !fw.moe_probs_in_activation) +
                                 delta;
  double act = per_layer * sh.layers * sched.in_flight;
  if (p.recompute == Recompute::selective) {
    // Megatron's modules re-materialise what they dropped; op-level selective checkpointing re-runs the ops it
    // did not save when the layer's backward starts (torch.utils.checkpoint recomputes the region's forward under
    // the policy), so that layer holds all its tensors until its backward is done.
    act += fw.selective_is_op_sac ? std::max(0.0, whole - per_layer)
                                  : recompute_module_bytes(ctx.model, sh, p.recompute_modules, lin,
                                                           !fw.moe_probs_in_activation);
  } else if (p.recompute == Recompute::full) {
    // Under the block method the layers beyond recompute_layers of each chunk keep all their activations; one
    // layer's activations are re-materialised during its backward.
    const double share = full_recompute_share(p, sh);
    act = (per_layer * share + whole * (1.0 - share)) * sh.layers * sched.in_flight + whole;
  }
  act += gathered_kv_bytes(ctx, sh);  // one layer's gathered K/V, during its attention forward or backward
  mem.activations = Bytes(act);

  // Last stage: the logits and the loss's fp32 tensors at its peak, for one micro-batch (a framework trait).
  const bool has_head = p.pp == 1 || params.head > 0;
  if (has_head) {
    mem.logits = Bytes(sh.tokens * sh.vocab * fw.loss_peak_per_logit(p.tp));
    // The head region's saved tensors, alive from forward to the head's backward (counted here, not with the
    // layers' activations): the final norm's saved input and the LM head's input, which its mm keeps for the weight
    // gradient (16-bit: the head is not an fp8 linear; none for a frozen head), on the local sequence shard, or on
    // the gathered sequence where the TP style saves that (Framework::tp_saves_gathered_inputs: torchtitan's LM head
    // ColwiseParallel(input_layouts=Shard(1)) gathers the final norm's output).
    const double head_input_tokens = base_frozen(p) ? 0.0 : fw.tp_saves_gathered_inputs ? sh.tokens : sh.norm_tokens;
    mem.logits += Bytes((sh.norm_tokens * fw.norm_saved_input_bytes + head_input_tokens * kAct) * ctx.model.hidden);
  }

  if (p.zero >= 3 && fw.zero3_gather == Zero3Gather::deepspeed_modules) {
    mem.buffers = deepspeed_zero3_working_set(ctx, sh).total();  // DeepSpeed's per-module coordinator
  } else if (p.zero >= 3) {
    // Gathered 16-bit parameters of the current and the prefetched layer, and one layer's unsharded
    // gradients before their reduce-scatter.
    const double layer = params_per_layer(ctx.model) / sh.weight_shard;
    // Fine-tuning gathers the frozen base as stored (NF4 under QLoRA) and reduces only the trainable share.
    mem.buffers = Bytes(layer * (2.0 * gathered_param_bytes(p) + fw.state.gradients * trainable_share(ctx.model, p)));
    // PyTorch FSDP does not reshard the root module's parameters after forward (FSDP2 _fsdp_state.py _lazy_init:
    // the root group's post_forward_mesh_info = None; FSDP1 _runtime_utils.py _post_forward_reshard skips the
    // root): what no wrapped layer holds, the embedding, the final norm and the LM head, stays gathered in the
    // compute dtype from forward through backward.
    if (fw.fsdp_unsharded_param_bytes > 0)
      mem.buffers += Bytes((params.embedding + params.head + params.final_norm + params.mtp) * gathered_param_bytes(p));
  }
  if (p.pp > 1) mem.buffers += Bytes(2.0 * sh.tokens * ctx.model.hidden * kAct);  // send + receive buffers
  mem.buffers += Bytes(sh.transient_bytes);
  mem.buffers += finetune_buffers(ctx, sh);  // QLoRA's dequantised weight

  const Bytes allocated = mem.weights + mem.gradients + mem.optimizer + mem.activations + mem.logits + mem.buffers;
  mem.context = GiB(kContextGiB);
  mem.fragmentation = allocated * kFragmentation;
  // A fitted reserve (system.h; 0 unless `calibrate fit-runs` measured one) is allocator memory the accounting
  // above does not see; a negative one takes back some of the fragmentation allowance, never more.
  mem.fragmentation += ctx.system.memory_reserve;
  if (mem.fragmentation.v < 0) mem.fragmentation = Bytes(0);
  return mem;
}

}  // namespace shardplan
