// Plan: how the job is parallelised and batched. Independent of model and hardware files.
#pragma once

#include <optional>
#include <string>

#include "modeler/moe_dispatch.h"
#include "modeler/system.h"

namespace shardplan {

enum class Recompute { none, selective, full };
/// Megatron-Core's selective-recompute modules (TransformerConfig.recompute_modules, --recompute-modules), a bit
/// each. Under Recompute::selective each drops its module's saved tensors and re-runs the module's forward in
/// backward; "layernorm", "moe_act" and "mla_up_proj" discard only their outputs, the others checkpoint the whole
/// module. The default, core_attn alone, is Korthikanti et al.'s selective recompute.
enum RecomputeModule : unsigned {
  kRecomputeCoreAttn = 1u << 0,
  kRecomputeLayernorm = 1u << 1,
  kRecomputeMlp = 1u << 2,
  kRecomputeMoe = 1u << 3,
  kRecomputeMoeAct = 1u << 4,
  kRecomputeSharedExperts = 1u << 5,
  kRecomputeMlaUpProj = 1u << 6,
};
struct RecomputeModuleName {
  RecomputeModule bit;
  const char* name;  // Megatron-Core's spelling
};
inline constexpr RecomputeModuleName kRecomputeModuleNames[] = {
    {kRecomputeCoreAttn, "core_attn"}, {kRecomputeLayernorm, "layernorm"}, {kRecomputeMlp, "mlp"},
    {kRecomputeMoe, "moe"},           {kRecomputeMoeAct, "moe_act"},     {kRecomputeSharedExperts, "shared_experts"},
    {kRecomputeMlaUpProj, "mla_up_proj"},
};
/// Context-parallel attention: Megatron's ring with K/V passing (overlapped with attention compute), or
/// all-gathering K/V once per layer (Llama 3 paper, Section 3.3.2).
enum class CpKind { ring, allgather };
/// Subnetwork data parallelism (techniques.md section 2): which passes drop the parameters a worker does not hold,
/// and whether whole blocks (layers) or neurons (heads, MLP columns) are dropped.
enum class SdpMask { forward, backward };
enum class SdpGranularity { block, neuron };
/// Low-precision GEMM recipes, by Transformer Engine's names (transformer_engine/common/recipe/__init__.py):
/// delayed (DelayedScaling: per-tensor scale from an amax history), tensorwise (Float8CurrentScaling, torchao's
/// dynamic tensorwise scaling: the scale from the tensor's own amax), blockwise (Float8BlockScaling: 1x128
/// activation and 128x128 weight blocks, DeepSeek-V3's), mxfp8 (MXFP8BlockScaling: 1x32 blocks, E8M0 scales),
/// nvfp4 (NVFP4BlockScaling: fp4 with 1x16 blocks of E4M3 scales and a per-tensor scale).
enum class Fp8Recipe { delayed, tensorwise, blockwise, mxfp8, nvfp4 };
/// Where offloaded model states live (DeepSpeed offload_optimizer / offload_param `device`: cpu or nvme).
enum class OffloadDevice { cpu, nvme };
/// DeepSpeed ZeRO++ (Wang et al. 2023, modeler/zeropp.h), with DeepSpeed ZeRO-3 only; DeepSpeed's config names.
struct ZeroPP {
  bool quantized_weights = false;    // qwZ: zero_quantized_weights (int8 parameter all-gather)
  int hpz_partition = 1;             // hpZ: zero_hpz_partition_size (secondary weight shard; 1 = off)
  bool quantized_gradients = false;  // qgZ: zero_quantized_gradients (int4 all-to-all gradient reduction)
  bool any() const { return quantized_weights || hpz_partition > 1 || quantized_gradients; }
};

/// The optimizer that steps the trainable parameters (modeler/optimizer.h): the user's choice, never a search axis.
enum class Optimizer { adamw, adamw8bit, adafactor, sgd, sgd_momentum, muon, lion };
/// Parameter-efficient fine-tuning (modeler/finetune.h): none trains every weight (pre-training, full fine-tuning);
/// lora, dora and qlora freeze the base weights and train low-rank adapters on the target modules (qlora with the
/// base linears stored as 4-bit NF4).
enum class Peft { none, lora, dora, qlora };
/// The linear layers of a transformer layer that adapters can target, a bit each (PEFT's q_proj ... down_proj).
enum LoraTarget : unsigned {
  kLoraQ = 1u << 0,
  kLoraK = 1u << 1,
  kLoraV = 1u << 2,
  kLoraO = 1u << 3,
  kLoraGate = 1u << 4,
  kLoraUp = 1u << 5,
  kLoraDown = 1u << 6,
};
/// What is trained and how it is stepped: the adapters (rank, targets) and the optimizer.
struct Finetune {
  Peft peft = Peft::none;
  int lora_rank = 0;           // r of the adapters; 0 without peft
  unsigned lora_targets = 0;   // LoraTarget bits; 0 without peft
  double lora_dropout = 0;     // PEFT LoraConfig.lora_dropout (default 0.0: no dropout module, nn.Identity)
  Optimizer optimizer = Optimizer::adamw;
};

struct Plan {
  int tp = 1;    // tensor parallel
  int pp = 1;    // pipeline stages
  int vpp = 1;   // virtual stages (model chunks) per pipeline rank; >1 selects the interleaved 1F1B schedule
  int dp = 1;    // data parallel (replicas, or shards under ZeRO/FSDP)
  int cp = 1;    // context parallel
  int ep = 1;    // expert parallel (folded with dp x cp, Megatron-Core style)
  int etp = 1;   // expert tensor parallel
  int tsp = 1;   // folded tensor + sequence parallel ("row sharding", techniques.md section 1); replaces tp and cp
  int zero = 0;  // 0 none, 1 optimizer states, 2 + gradients, 3 + parameters (FSDP FULL_SHARD)
  bool sequence_parallel = false;  // Megatron SP: norms/dropout sharded over tp, AG/RS instead of all-reduce
  bool tp_comm_overlap = false;    // TP collectives overlapped with GEMMs (Megatron/TE userbuffers)
  /// MoE dispatch/combine all-to-all of one micro-batch hidden behind another micro-batch's compute (Megatron-Core
  /// overlap_moe_expert_parallel_comm, the combined 1F1B schedule).
  bool ep_comm_overlap = false;
  CpKind cp_kind = CpKind::ring;
  /// Allow pp x vpp not dividing the layers: the busiest stage then holds ceil(layers / (pp x vpp)) layers per
  /// chunk (Megatron-Core --decoder-first/last-pipeline-num-layers, torchtitan's per-module stage split).
  bool uneven_pipeline = false;
  /// Megatron-Core's custom layout of the embedding, layers, MTP modules and loss over the pp x vpp virtual stages
  /// (--pipeline-model-parallel-layout, modeler/pipeline_layout.h); "": the even (or uneven, ceil) split.
  std::string pipeline_layout;
  /// Multi-token-prediction modules trained after the last layer (Megatron-Core --mtp-num-layers, DeepSeek-V3
  /// Sec. 2.2), at most the model's (ModelDesc::mtp_layers); 0: none, whatever the model defines.
  int mtp_layers = 0;
  /// MoE routing: dropless routing runs the busiest expert at `moe_imbalance` x the mean tokens per expert (1 for
  /// the force-balanced routing of published benchmarks); token-drop routing (capacity_factor > 0) caps it there.
  double moe_imbalance = 1.0;
  double capacity_factor = 0;  // 0: dropless
  /// MoE token dispatcher (modeler/moe_dispatch.h); unset: the framework's default (Framework::moe_dispatchers).
  std::optional<MoeDispatcher> moe_dispatcher;
  /// Node-limited routing: the most scale-up domains one token's experts may span (DeepSeek-V3 M = 4, Megatron-Core
  /// --moe-router-group-topk with --moe-router-num-groups = the EP group's domains); 0: no limit.
  int moe_max_nodes = 0;
  /// Dispatch rows in fp8 with 1x128 scales (DeepSeek-V3's recipe, DeepEP's fp8 dispatch); combine stays bf16.
  bool moe_fp8_dispatch = false;
  /// Subnetwork data parallelism: each data-parallel worker keeps a fraction sdp_keep of the layer parameters
  /// (1: plain data parallelism). Changes what is trained, so plans with it are marked.
  double sdp_keep = 1.0;
  SdpMask sdp_mask = SdpMask::forward;
  SdpGranularity sdp_granularity = SdpGranularity::block;
  int micro_batch = 1;   // sequences per micro-batch per data-parallel rank
  int global_batch = 1;  // sequences per optimizer step
  int seq_len = 2048;
  Recompute recompute = Recompute::none;
  /// With full recompute: layers of each pipeline chunk recomputed, the rest keep their activations (Megatron
  /// --recompute-method block --recompute-num-layers N, NeMo activations_checkpoint_method block); 0 = every layer.
  int recompute_layers = 0;
  /// With selective recompute (Megatron's meaning): the modules recomputed, RecomputeModule bits.
  unsigned recompute_modules = kRecomputeCoreAttn;
  Dtype precision = Dtype::bf16;  // GEMM precision; fp8 keeps bf16 master weights and fp32 optimizer states
  /// Fraction of this rank's optimizer states and fp32 master weights held in host memory and stepped by a CPU
  /// optimizer (Megatron-Core --optimizer-cpu-offload --optimizer-offload-fraction; DeepSpeed ZeRO-Offload is 1).
  /// How gradients move and what overlaps is the framework's (modeler/offload.h).
  double optimizer_offload = 0;
  /// The scaling recipe of fp8/fp4 GEMMs; unset: the framework's (Framework::fp8_recipe; nvfp4 for fp4 GEMMs).
  std::optional<Fp8Recipe> fp8_recipe;
  /// ZeRO/FSDP parameters gathered in the recipe's dtype (Megatron fp8_param_gather, torchao
  /// enable_fsdp_float8_all_gather); unset: the framework's default (Framework::fp8_param_gather).
  std::optional<bool> fp8_param_gather;
  /// Hybrid sharding (HSDP, modeler/hsdp.h): data-parallel ranks of one shard group (x cp), states sharded inside
  /// it and replicated over dp / dp_shard groups; 0 = the whole data-parallel group (plain ZeRO/FSDP).
  int dp_shard = 0;
  ZeroPP zeropp;
  /// Parameters on the host too (DeepSpeed offload_param, FSDP CPUOffload(offload_params=True);
  /// modeler/param_offload.h).
  bool param_offload = false;
  OffloadDevice offload_device = OffloadDevice::cpu;  // where offloaded optimizer states and parameters live
  /// Activations of this many layers offloaded to the host in forward and fetched back for backward (Megatron-Core
  /// / Transformer Engine --cpu-offloading-num-layers); 0 = none.
  int activation_offload_layers = 0;
  /// Fine-tuning method and optimizer (modeler/finetune.h, modeler/optimizer.h); default: AdamW on every weight.
  Finetune finetune;

  int gpus() const { return tp * tsp * pp * cp * dp; }
  /// Ranks that split one micro-batch's layer inside a pipeline stage (tp or tsp innermost, then cp): the stride
  /// of the data-parallel group in Megatron's rank order.
  int inner() const { return tp * tsp * cp; }
  /// Whether the plan trains something other than the model as given (SDP trains subnetworks).
  bool changes_training_semantics() const { return sdp_keep < 1.0; }
  /// Micro-batches per step per pipeline: global / (micro x dp) (gradient accumulation steps). 64-bit, so that
  /// degrees within kMaxPlanGpus and batches within kMaxBatch cannot overflow.
  int num_microbatches() const { return static_cast<int>(global_batch / (1LL * micro_batch * dp)); }
};

/// Limits on the user's numbers, so that every product of degrees and every batch count fits in an int with room:
/// 2^24 GPUs (16.7 million, 100x the largest cluster built) and 2^24 sequences per batch; 2^26 tokens per sequence.
inline constexpr long long kMaxPlanGpus = 1LL << 24;
inline constexpr long long kMaxBatch = 1LL << 24;
inline constexpr long long kMaxSeqLen = 1LL << 26;
/// The first limit the plan breaks, as a message ("tp x pp x cp x dp (...) must be at most 2^24"), or "" when
/// none: checked before any other arithmetic on the plan.
std::string plan_limit_violation(const Plan& p);

const char* to_string(Recompute r);
const char* to_string(CpKind k);
const char* to_string(Dtype d);
const char* to_string(SdpMask m);
const char* to_string(SdpGranularity g);
const char* to_string(Fp8Recipe r);
const char* to_string(OffloadDevice d);
/// The --precision spelling of a plan's GEMM precision: bf16, fp16, fp8, fp8-delayed, fp8-tensorwise,
/// fp8-blockwise, mxfp8 or nvfp4.
std::string precision_name(const Plan& p);
/// Parses a recipe name as to_string spells it; nullopt when unknown.
std::optional<Fp8Recipe> parse_fp8_recipe(const std::string& text);
/// "core_attn+mlp": the modules in kRecomputeModuleNames order, joined by '+'.
std::string recompute_modules_string(unsigned modules);
/// Parses module names separated by '+' or ','; nullopt when a name is unknown (`*unknown` gets it) or none given.
std::optional<unsigned> parse_recompute_modules(const std::string& text, std::string* unknown);

}  // namespace shardplan
