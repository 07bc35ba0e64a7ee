// Fine-tuning: what is trained (plan.h Finetune). Full fine-tuning trains every weight and is a plan like
// pre-training. LoRA (Hu et al. 2021) freezes the base weights and trains, on each target linear W (in x out), a
// pair A (r x in), B (out x r) whose product is added to W's output; DoRA (Liu et al. 2024) adds a trained
// magnitude vector (out) and rescales by the column norms of W + BA; QLoRA (Dettmers et al. 2023) stores the frozen
// base linears as 4-bit NF4 with double quantisation and dequantises each to bf16 for its GEMM.
// Frozen weights have no gradients and no optimizer states; their input-gradient GEMMs still run (the adapters'
// gradients flow through them), their weight-gradient GEMMs do not, and a frozen linear's input is not kept for
// backward unless an adapter on it reads the same tensor (PyTorch autograd saves mm's input only when the weight
// requires grad).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "modeler/optimizer.h"
#include "modeler/stage_params.h"
#include "modeler/strategies/strategy.h"
#include "modeler/units.h"

namespace shardplan {

struct LoraTargetName {
  LoraTarget bit;
  const char* name;  // q, k, v, o, gate, up, down (PEFT's q_proj ... down_proj)
};
inline constexpr LoraTargetName kLoraTargetNames[] = {{kLoraQ, "q"},       {kLoraK, "k"},   {kLoraV, "v"},
                                                      {kLoraO, "o"},       {kLoraGate, "gate"}, {kLoraUp, "up"},
                                                      {kLoraDown, "down"}};

/// Bytes per parameter of an NF4 weight with double quantisation (QLoRA, Dettmers et al. 2023, Sec. 3): 4 bits per
/// weight, an 8-bit absmax constant per block of 64 weights and an fp32 constant per block of 256 of those
/// (8/64 + 32/(64*256) = 0.127 bits per weight, the paper's figure): 4.127 bits.
inline constexpr double kNf4BytesPerParam = (4.0 + 8.0 / 64.0 + 32.0 / (64.0 * 256.0)) / 8.0;
/// Of which the packed 4-bit codes, the Params4bit tensor (bnb_4bit_quant_storage: bf16 packs 4 codes per element),
/// and the quantisation statistics (bitsandbytes functional.py quantize_4bit, blocksize 64, with
/// compress_statistics the absmax re-quantised to uint8 in blocks of 256 plus their fp32 absmax): the statistics
/// live in the weight's QuantState, not in a parameter, so ZeRO-3 and FSDP shard the codes and every rank keeps
/// all the statistics.
inline constexpr double kNf4PackedBytesPerParam = 0.5;
inline constexpr double kNf4StatsBytesPerParam = kNf4BytesPerParam - kNf4PackedBytesPerParam;

const char* to_string(Peft p);
std::optional<Peft> parse_peft(const std::string& text);
/// "q+v": the targets in kLoraTargetNames order, joined by '+' ("" for none).
std::string lora_targets_string(unsigned targets);
/// Parses names separated by ',' or '+', or "all"; nullopt when a name is unknown (`*unknown` gets it) or none given.
std::optional<unsigned> parse_lora_targets(const std::string& text, std::string* unknown);

/// Whether the base weights are frozen (any adapter method).
inline bool base_frozen(const Plan& p) { return p.finetune.peft != Peft::none; }

/// The full (unsharded) shape of one target's base linear in a layer: in and out features.
struct LinearShape {
  double in = 0, out = 0;
};
LinearShape target_shape(const ModelDesc& m, LoraTarget t);
/// Trainable adapter parameters of one layer: r (in + out) per target, plus out for DoRA's magnitude.
double adapter_params_per_layer(const ModelDesc& m, const Finetune& f);
/// Adapter parameters of the whole model (layers x per layer); 0 without peft.
double adapter_params(const ModelDesc& m, const Finetune& f);
/// Parameters that get gradients and optimizer states: every parameter, or the adapters.
double trainable_params(const ModelDesc& m, const Plan& p);
/// trainable_params / total_params: the share of each rank's parameters with gradients and states (adapters are
/// spread over the stages as the layers are).
double trainable_share(const ModelDesc& m, const Plan& p);
/// The trainable tensors by shape, for the optimizer's state bytes and step cost (optimizer.h).
std::vector<ParamGroup> trainable_groups(const ModelDesc& m, const Plan& p);

/// Problems of the plan's fine-tuning and optimizer: a rank or targets without an adapter method (or the reverse),
/// targets the model lacks (separate q/k/v of MLA attention, MLPs of routed experts), a narrow-precision recipe with
/// QLoRA, and what the framework cannot run (each with its source).
void validate_finetune(const Context& ctx, Problems* problems);

/// Memory of frozen base weights plus adapters on one rank of the busiest stage (replaces the full-training
/// weights): base weights in bf16 (QLoRA: NF4 for the layers' linears, bf16 for norms, embedding and LM head, as
/// bitsandbytes quantises only nn.Linear and transformers keeps lm_head unquantised), sharded as ZeRO-3/FSDP
/// shards weights; adapters at the framework's stored weight bytes.
Bytes finetune_weights(const Context& ctx, const Sharding& sh, const StageParams& params);
/// Change of one layer's saved activations under a frozen base: minus the inputs saved only for frozen weights'
/// gradients (the QKV input when none of q, k, v is adapted; the MLP input without gate or up; the down
/// projection's input without down), plus each adapter's rank-r intermediate (A's output, kept for B's gradient)
/// and, for DoRA, the base output its magnitude gradient reads; with lora_dropout each adapter's dropped-out input
/// and mask instead of the shared input. The framework's traits: one adapter on a fused QKV linear
/// (Framework::lora_fused_qkv: one dropped-out copy, and B's output kept by zero_pad when only some of q, k, v are
/// adapted), and 4-bit linears that keep their inputs (Framework::qlora_keeps_linear_inputs). `lin`: bytes per
/// saved linear input element.
double finetune_activation_delta(const ModelDesc& m, const Sharding& sh, const Plan& p, double lin,
                                 const Framework& fw);
/// Bytes per parameter ZeRO-3/FSDP gathers for a layer's compute: 2 (16-bit), or the packed NF4 codes under QLoRA
/// (the 4-bit storage is what is sharded, bnb_4bit_quant_storage; the statistics are on every rank already).
double gathered_param_bytes(const Plan& p);
/// QLoRA's transient bf16 copy of the largest dequantised base weight (freed after its GEMM); 0 otherwise.
Bytes finetune_buffers(const Context& ctx, const Sharding& sh);

/// One layer's adapter work on one rank, for one micro-batch: the LoRA GEMMs (forward x A, then B; backward the
/// input and weight gradients of both), DoRA's per-step B A product and column norms, and QLoRA's dequantisation
/// of every base linear before its forward GEMM and again before its input-gradient GEMM (bitsandbytes
/// MatMul4Bit): reads kNf4BytesPerParam and writes 2 bytes per weight.
struct AdapterCost {
  Seconds fwd, bwd;
  double flops_fwd = 0, flops_bwd = 0;
};
AdapterCost adapter_cost(const Context& ctx, const Sharding& sh);

/// Model FLOPs per token of a fine-tuning step: `full` (model_flops_per_token) without the frozen weights'
/// weight-gradient GEMMs (2 FLOPs per activated matmul parameter and token) plus the adapters' 6 per parameter.
double finetune_flops_per_token(const ModelDesc& m, const Plan& p, double full);

}  // namespace shardplan
