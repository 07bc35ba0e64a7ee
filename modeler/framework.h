// The training software stack as a small profile of documented traits. The same plan runs at different speeds
// under Megatron-LM, torchtitan or llm-foundry because they run different kernels and overlap different things;
// each trait below names the framework documentation or code it comes from. Traits are never fitted to published
// rows: a trait is a fact about what the software does.
#pragma once

#include <string>
#include <vector>

#include "modeler/system.h"

namespace shardplan {

/// Bytes per parameter of each training state, before sharding.
struct StateBytes {
  double weights = 2;    // the copy the forward pass reads
  double gradients = 4;  // the gradient buffer gradients accumulate into
  double optimizer = 12; // fp32 master weights + Adam m and v (mixed-precision Adam, ZeRO paper Sec. 3.1)
};

struct Framework {
  std::string name;
  /// Attention kernel generation run on GPUs that have one of that generation (else flash2).
  AttentionKernel attention = AttentionKernel::flash2;
  /// Attention without a fused flash kernel: scores computed by a batched GEMM, written to HBM, softmax and
  /// dropout as memory-bound kernels over the full s x s square, then a second batched GEMM (Megatron-LM before
  /// FlashAttention, Narayanan et al. 2021 and Korthikanti et al. 2022). Saved activations include the scores.
  bool materialized_attention = false;
  /// "selective" recompute means op-level selective activation checkpointing (torchtitan): every other matmul
  /// output and the attention output are saved, everything else is recomputed. Otherwise Megatron's meaning:
  /// recompute the attention core only.
  bool selective_is_op_sac = false;
  /// Norms, bias+activation, RoPE, residual+dropout and cross-entropy run as fused kernels (one read and one write
  /// of the activation) rather than eager PyTorch sequences of elementwise kernels.
  bool fused_elementwise = true;
  /// Memory passes over a [tokens x hidden] activation per norm when not fused (eager RMSNorm: pow, mean, rsqrt,
  /// mul, mul; read+write each).
  double unfused_passes_per_norm = 1.0;
  /// Data-parallel gradient reduction overlapped with the backward pass (bucketed).
  bool overlap_grad_reduce = true;
  /// ZeRO/FSDP parameter all-gather prefetched and overlapped with compute.
  bool overlap_param_gather = true;
  /// Parameter all-gather of ZeRO-3/FSDP repeated in backward (reshard after forward).
  bool reshard_after_forward = true;
  StateBytes state;
  /// ZeRO stages the software offers (Megatron-LM: DDP, the distributed optimizer and Megatron-FSDP; FSDP stacks:
  /// replicate, SHARD_GRAD_OP / no reshard after forward, FULL_SHARD).
  std::vector<int> zero_stages = {0, 1, 2, 3};
  /// Overlap features the software offers: TP collectives with GEMMs (TE userbuffers, torchtitan async TP) and
  /// MoE all-to-all with another micro-batch's compute (Megatron-Core combined 1F1B).
  bool offers_tp_overlap = false;
  bool offers_ep_overlap = false;
  /// HBM bytes moved per logit by the loss, forward and backward, counted from the kernels the framework runs.
  double cross_entropy_bytes_per_logit = 12.0;
  /// Bytes per logit alive at the loss's peak: the 16-bit logits plus the fp32 tensors the loss keeps.
  double logits_bytes_per_logit = 6.0;
  /// fp8 GEMMs: extra memory passes per linear layer to cast inputs (quantize + amax), per the recipe.
  double fp8_cast_passes = 1.0;
  /// fp8 GEMMs: each linear layer keeps its input for the weight gradient as the fp8 cast (1 byte per element)
  /// instead of the 16-bit tensor.
  bool fp8_saves_linear_inputs = false;
  std::vector<std::string> sources;
};

/// The built-in profiles: megatron-lm, nemo, torchtitan, llm-foundry, megatron-deepspeed, other, and
/// megatron-lm-legacy (Megatron-LM before FlashAttention, 2021-2022).
const Framework* find_framework(const std::string& name);
std::vector<std::string> framework_names();

}  // namespace shardplan
