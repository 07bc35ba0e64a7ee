// Memory per GPU on the busiest pipeline stage: training states, activations, logits, buffers, reserve.
#pragma once

#include "modeler/estimate.h"
#include "modeler/strategies/strategy.h"

namespace shardplan {

/// Share of the layers whose forward is recomputed under full recompute: 1, or recompute_layers of each chunk's
/// layers (block method); 0 without full recompute.
double full_recompute_share(const Plan& p, const Sharding& sh);

/// Saved activations of one layer for one micro-batch, in bytes (Korthikanti et al. 2022, Sec. 4, generalised):
/// without recompute, 34 s b h + 5 a s^2 b for MHA with a 4h plain MLP, 16-bit activations, dropout, and
/// materialised attention scores. Here each saved tensor is counted from the local shape, so GQA (K/V of kv_heads),
/// gated MLPs (SwiGLU input 2f, output f), sequence and tensor parallelism (norm-region tensors on norm_tokens,
/// the rest on local heads/ffn) and context parallelism (tokens / cp) follow. `flash` replaces the 5 a s^2 b score
/// tensors by FlashAttention's fp32 log-sum-exp (4 bytes per token and head).
/// Selective recompute drops the score tensors; full recompute keeps only the layer input. `linear_input_bytes`
/// is what each linear layer keeps of its input per element: 2, or 1 where fp8 linears save the fp8 cast
/// (Transformer Engine); the attention output is then held twice, 16-bit for the attention backward and fp8 for
/// the output projection's.
/// `moe_saves_fc2_output`: an MoE layer keeps every token-expert pair's fc2 output for the probability-weighted
/// combine's gradient (false where the probabilities scale the activation instead, Framework::moe_probs_in_activation).
double activation_bytes_per_layer(const ModelDesc& m, const Sharding& sh, Recompute recompute, bool dropout, bool flash,
                                  double linear_input_bytes = 2.0, unsigned recompute_modules = kRecomputeCoreAttn,
                                  bool moe_saves_fc2_output = true);

/// Bytes per layer (over the rank's dense and MoE layers, stage_params.h stage_moe_share) that selective recompute
/// of `modules` drops beyond the attention core: the norms' outputs (layernorm), the dense MLP's tensors (mlp), the
/// MoE layer's (moe) or its experts' activation outputs (moe_act) and shared experts' tensors (shared_experts),
/// MLA's up-projected queries, keys and values (mla_up_proj). Each module keeps its input, which the layer saves
/// anyway.
double recompute_module_bytes(const ModelDesc& m, const Sharding& sh, unsigned modules,
                              double linear_input_bytes = 2.0, bool moe_saves_fc2_output = true);

/// Saved activations of one layer under torchtitan's op-level selective checkpointing (see layer_cost.cc).
double op_sac_activation_bytes_per_layer(const ModelDesc& m, const Sharding& sh);

/// Dropout is on in GPT-style training recipes (Megatron defaults hidden/attention dropout 0.1) and off for
/// Llama-family models (no dropout in their configs); a gated MLP marks the latter.
bool trains_with_dropout(const ModelDesc& m);

MemoryBreakdown memory_breakdown(const Context& ctx, const Sharding& sh, const Schedule& sched);

}  // namespace shardplan
