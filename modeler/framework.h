// The training software stack as a small profile of documented traits. The same plan runs at different speeds
// under Megatron-LM, torchtitan or llm-foundry because they run different kernels and overlap different things;
// each trait below names the framework documentation or code it comes from. Traits are never fitted to published
// rows: a trait is a fact about what the software does.
#pragma once

#include <string>
#include <vector>

#include "modeler/plan.h"
#include "modeler/system.h"

namespace shardplan {

/// Bytes per parameter of each training state, before sharding.
struct StateBytes {
  double weights = 2;    // the copy the forward pass reads
  double gradients = 4;  // the gradient buffer gradients accumulate into
  double optimizer = 12; // fp32 master weights + Adam m and v (mixed-precision Adam, ZeRO paper Sec. 3.1)
};

/// Context parallelism's ring attention (Transformer Engine AttnFuncWithCPAndKVP2P, PyTorch
/// _templated_ring_attention) runs one attention kernel per ring step and merges the partial outputs by their
/// log-sum-exp; its backward accumulates each step's dQ, dK and dV. HBM bytes per output (forward) or gradient
/// (backward) element moved by those merges: the first step's, and each later step's.
struct CpMergeBytes {
  // Transformer Engine (attention/dot_product_attention/context_parallel.py): the first step's output rescaled
  // into a bf16 buffer (read 2, write 2); each later step out.add_(out_step * exp(lse_step - lse)), one jit-fused
  // pass (read 2 + 2, write 2). Backward: dq.copy_ then dq.add_(dq_) per step in bf16, and the same for the dK/dV
  // buffer passed around the ring.
  double forward_first = 4, forward_step = 6;
  double backward_first = 4, backward_step = 6;
  // The dK/dV accumulation alone, per dK/dV element (the backward pair above then counts dQ): TE's are dQ's.
  double grad_kv_first = 4, grad_kv_step = 6;
  // Copies of the K/V buffer in each pass (forward, its re-run, backward), per K/V element: once per pass, and
  // once for each of the ring's cp - 1 sends; none where the kernel's K/V are sent as they are (TE).
  double kv_pass = 0, kv_send = 0;
};

/// Optimizer offload to host memory as a framework implements it (modeler/offload.h).
/// megatron_hybrid: Megatron-Core's HybridDeviceOptimizer (--optimizer-cpu-offload, --optimizer-offload-fraction,
///   --overlap-cpu-optimizer-d2h-h2d; with the distributed optimizer): gradients stay in the GPU's main-grad buffer,
///   each offloaded parameter's gradient is copied to the host, stepped by a CPU Adam, and copied back, the copies
///   pipelined with the CPU step.
/// zero_offload: DeepSpeed ZeRO-Offload (zero_optimization.offload_optimizer.device cpu, stages 1-3): all of the
///   rank's fp32 master weights, gradients and Adam states live in pinned host memory; gradients stream to the host
///   during backward, DeepSpeedCPUAdam steps, and the 16-bit parameters are copied back.
enum class OptimizerOffloadKind { none, megatron_hybrid, zero_offload };
/// Parameter offload (modeler/param_offload.h) as a framework implements it.
/// zero_infinity: DeepSpeed ZeRO-3 offload_param (device cpu or nvme; with offload_optimizer): the 16-bit
///   parameter partition lives on the host and is copied to the GPU before each all-gather.
/// fsdp_cpu: FSDP2 CPUOffloadPolicy (torchtitan training.enable_cpu_offload): the sharded fp32 parameters, their
///   gradients and the optimizer states live on the host, the optimizer steps there.
enum class ParamOffloadKind { none, zero_infinity, fsdp_cpu };
/// How ZeRO-3 holds gathered parameters. fsdp_units: FSDP gathers a transformer layer (its wrapping unit) whole and
/// prefetches the next. deepspeed_modules: DeepSpeed's coordinator gathers per module, keeps what the trace reuses
/// soon and adds its reduce bucket (modeler/zero3_working_set.h).
enum class Zero3Gather { fsdp_units, deepspeed_modules };
/// Whose launcher runs the plan: which framework rules apply (framework_rules.h) and which --emit formats
/// write it. none: no launcher rules are encoded and only the shardplan plan JSON is emitted.
enum class Launcher { none, megatron, nemo, torchtitan, megatron_deepspeed };
/// The library whose kernels quantize fp8 GEMM operands (precision_recipe.h).
/// transformer_engine_v1: Transformer Engine 1.x (v1.7-v1.9, the NeMo 24.x containers' generation), whose
/// delayed-scaling linears quantize where precision_recipe.h te_v1_layer_quantize says.
enum class Fp8Library { transformer_engine, transformer_engine_v1, torchao };

struct Framework {
  std::string name;
  std::string description;  // one line: what software, which version the traits describe
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
  /// FSDP mixed precision: the stored (sharded) parameter is the fp32 master in `state.weights` and the layers
  /// compute with an unsharded copy of this many bytes per parameter (param_dtype); 0 where the weights in `state`
  /// are the compute copy themselves (Megatron). Without resharding after forward (ZeRO-2 / SHARD_GRAD_OP /
  /// reshard_after_forward=False) the unsharded copy stays gathered from forward to backward.
  double fsdp_unsharded_param_bytes = 0;
  /// Pipeline schedules that defer FSDP's gradient reduce-scatter to the last micro-batch hold unsharded
  /// gradients of this many bytes per parameter meanwhile; 0 where every micro-batch reduce-scatters.
  /// torch.distributed.pipelining (stage backward_maybe_with_nosync) turns gradient sync and reshard after
  /// backward off until the last backward, and FSDP2 then accumulates in the reduce dtype
  /// (FSDPParam.to_accumulated_grad_if_needed upcasts the unsharded bf16 gradient to reduce_dtype).
  double pp_deferred_grad_bytes = 0;
  /// ZeRO stages the software offers (Megatron-LM: DDP, the distributed optimizer and Megatron-FSDP; FSDP stacks:
  /// replicate, SHARD_GRAD_OP / no reshard after forward, FULL_SHARD).
  std::vector<int> zero_stages = {0, 1, 2, 3};
  /// Overlap features the software offers: TP collectives with GEMMs (TE userbuffers, torchtitan async TP) and
  /// MoE all-to-all with another micro-batch's compute (Megatron-Core combined 1F1B).
  bool offers_tp_overlap = false;
  bool offers_ep_overlap = false;
  /// How its TP comm-GEMM overlap runs (strategies/tensor_parallel.cc pairs each collective with one GEMM).
  /// Reduce-scatters after the row-parallel GEMMs: the GEMM's chunks (0: tp chunks) and the SMs the reduction
  /// kernels take from it; the backward's bulk overlaps (input re-gather with dgrad, dX reduce-scatter with wgrad):
  /// their SMs. All-gathers before column-parallel GEMMs run as a ring of copy-engine transfers, tp GEMM chunks.
  double tp_overlap_rs_splits = 4;
  double tp_overlap_rs_sms = 16;
  double tp_overlap_bulk_sms = 16;
  /// The overlapped reduce-scatter sums the tp partial chunks in a separate kernel once they have all arrived
  /// (AsyncTP), rather than inside its communication kernels (userbuffers).
  bool tp_overlap_rs_reduce_kernel = false;
  /// The overlap pairs the backward's dX reduce-scatters (after the QKV and MLP-up dgrads) with a GEMM; false
  /// where they run as plain, exposed reduce-scatters (AsyncTP: see framework_profiles_pytorch.cc).
  bool tp_overlap_pairs_dx_reduce_scatter = true;
  /// Full recompute of only the first N layers of each pipeline chunk (Megatron --recompute-method block).
  bool offers_block_recompute = false;
  /// Selective recompute of chosen modules (Megatron-Core --recompute-modules, plan.h RecomputeModule).
  bool offers_recompute_modules = false;
  /// Multi-token prediction and custom pipeline layouts (Megatron-Core --mtp-num-layers,
  /// --pipeline-model-parallel-layout; plan.h Plan::mtp_layers, pipeline_layout).
  bool offers_mtp_and_layout = false;
  /// When the micro-batch is not set under pipeline parallelism, the software splits each data-parallel rank's
  /// batch into as many micro-batches as pipeline ranks (so the micro-batch is a run's default, not a free choice).
  bool pp_microbatches_default_to_pp = false;
  /// HBM bytes moved per logit by the loss, forward and backward, counted from the kernels the framework runs.
  double cross_entropy_bytes_per_logit = 12.0;
  /// Bytes per logit alive at the loss's peak: the 16-bit logits plus the fp32 tensors the loss keeps.
  double logits_bytes_per_logit = 6.0;
  /// The same two under tensor parallelism where the framework then runs a different, vocabulary-sharded loss
  /// (torchtitan's loss_parallel: DTensor's own log-softmax and fused nll/log-softmax backward); 0 where its
  /// tensor-parallel loss is the one above (Megatron's vocab-parallel cross entropy is its only loss).
  double loss_parallel_cross_entropy_bytes_per_logit = 0;
  double loss_parallel_logits_bytes_per_logit = 0;
  /// The loss's traffic and peak per logit at tensor-parallel degree `tp`.
  double loss_traffic_per_logit(int tp) const {
    return tp > 1 && loss_parallel_cross_entropy_bytes_per_logit > 0 ? loss_parallel_cross_entropy_bytes_per_logit
                                                                       : cross_entropy_bytes_per_logit;
  }
  double loss_peak_per_logit(int tp) const {
    return tp > 1 && loss_parallel_logits_bytes_per_logit > 0 ? loss_parallel_logits_bytes_per_logit
                                                               : logits_bytes_per_logit;
  }
  /// MoE token permutation as Transformer Engine's fused kernels (Megatron-Core --moe-permute-fusion): one pass per
  /// source token reads it once and writes its top-k copies, the un-permutation reads the k rows and writes their
  /// weighted sum. Otherwise PyTorch index_select / scatter_add read and write every token-expert pair's row.
  bool fused_moe_permutation = false;
  /// MoE token dispatchers the software offers (modeler/moe_dispatch.h), its default first.
  std::vector<MoeDispatcher> moe_dispatchers = {MoeDispatcher::alltoall};
  /// The MoE router's top-k, softmax and aux loss run as fused kernels (Megatron-Core --moe-router-fusion).
  bool fused_moe_router = false;
  /// The experts' grouped linear runs one GEMM per local expert, each with its own launch (Transformer Engine
  /// v2.7 GroupedLinear: a cuBLAS GEMM per expert over 4 streams, cublaslt_gemm.cu); false: one grouped kernel.
  bool moe_gemm_per_expert = false;
  /// Weight gradients accumulate into the fp32 main_grad inside the wgrad GEMM (Megatron's
  /// gradient_accumulation_fusion, TE fuse_wgrad_accumulation): C is fp32 and, on every micro-batch but the step's
  /// first, read before it is written (TE v2.7 linear.py / grouped_linear.py: accumulate = not is_first_microbatch).
  bool wgrad_into_fp32_main_grad = false;
  /// Node-limited routing (Plan::moe_max_nodes): Megatron-Core --moe-router-num-groups / --moe-router-group-topk.
  bool offers_moe_max_nodes = false;
  /// The router probabilities scale the experts' activation (Megatron-Core TEGroupedMLP "scaled activation",
  /// experts.py bias_act_func(..., permuted_probs)), so the combine is a plain sum and the experts' fc2 output is
  /// not saved for the probabilities' gradient; otherwise the weighted combine keeps every pair's fc2 output.
  bool moe_probs_in_activation = false;
  /// fp8 GEMMs: every linear keeps an fp8 copy of its weight for the whole step (Transformer Engine's per-module
  /// fp8 weight workspaces, reused across micro-batches), 1 byte per parameter; otherwise the weight is cast
  /// inside each forward call and lives only as that layer's saved tensor.
  bool fp8_caches_weights = true;
  /// fp8 GEMMs: each linear layer keeps its input for the weight gradient as the fp8 cast (1 byte per element)
  /// instead of the 16-bit tensor.
  bool fp8_saves_linear_inputs = false;
  /// Tensor parallelism with sequence parallelism saves the all-gathered, full-sequence inputs of the
  /// column-parallel linears (QKV, MLP up) and of the LM head for their weight gradients (torchtitan 9dec370
  /// parallelize_llama.py apply_tp: DTensor PrepareModuleInput and ColwiseParallel gather each norm's output once
  /// and each mm saves the gathered tensor); otherwise they save the local sequence shard and gather it again in
  /// backward (Megatron-Core's linears). See memory_model.cc gathered_linear_inputs_delta.
  bool tp_saves_gathered_inputs = false;
  /// Context parallelism: HBM traffic of the ring's partial-result merges.
  CpMergeBytes cp_merge;
  /// The per-step ring loop (kernels and merges) runs even with the all-gather K/V exchange: PyTorch's
  /// _AllGatherRotater only replaces the ring's K/V send/recv by one all-gather per pass, issued before the first
  /// step's kernel and waited at the second, and dK/dV still go round the ring in backward
  /// (strategies/context_parallel.cc). Transformer Engine's all-gather variant computes each local chunk's
  /// attention whole, without merges, and reduce-scatters dK/dV.
  bool cp_allgather_runs_ring_loop = false;
  /// Bytes per element of the dK/dV partial sums passed around the ring in backward (TE: bf16; PyTorch: fp32).
  double cp_grad_kv_bytes = 2.0;
  /// The ring's last dK/dV transfer is waited after the loop, with no attention kernel left to hide it.
  bool cp_last_grad_kv_exposed = false;
  /// Every context-parallel collective is waited where it is issued, so none overlaps a ring step's kernel: the
  /// framework's CP attention is traced by torch.compile (compiled(): PyTorch's CP SDPA is a Python override, so
  /// a fullgraph block traces its ring loop), tracing waits each functional collective at once, and Inductor
  /// leaves the waits in place unless reorder_for_compute_comm_overlap is set.
  bool cp_comm_waited_at_issue = false;
  OptimizerOffloadKind optimizer_offload = OptimizerOffloadKind::none;
  /// ZeRO stages at which the software shards inside a group of data-parallel ranks and replicates across groups
  /// (modeler/hsdp.h); empty: no hybrid sharding.
  std::vector<int> hsdp_zero_stages;
  bool offers_zeropp = false;  // DeepSpeed ZeRO++ at ZeRO-3 (modeler/zeropp.h)
  ParamOffloadKind param_offload = ParamOffloadKind::none;
  bool offers_nvme_offload = false;        // offload_optimizer / offload_param device nvme (ZeRO-Infinity)
  bool offers_activation_offload = false;  // Megatron-Core / TE --cpu-offloading-num-layers
  Zero3Gather zero3_gather = Zero3Gather::fsdp_units;
  /// A layer's projections are fused modules (Megatron's query_key_value and the gate+up dense_h_to_4h), rather than
  /// separate q, k, v, gate and up linears (Hugging Face models); what DeepSpeed gathers as one module.
  bool fused_projections = true;
  /// HBM bytes per query/key element of its own eager RoPE, forward (the backward moves as many: the gradient
  /// runs the same casts and a complex multiply by the conjugate frequencies, with no saved activation); 0 where
  /// RoPE is one kernel reading and writing 16-bit elements (fused or compiled).
  double eager_rope_bytes_per_element = 0;
  /// Grouped-query attention materialises K and V at the query heads before the attention kernel (an
  /// expand + reshape copy: reads the kv heads, writes the query heads; its backward sums the copies back).
  bool gqa_repeats_kv = false;
  /// Bytes per element of each norm's input kept for backward: 2, or 4 where the norm upcasts its input and its
  /// pow/mul keep the fp32 copy (transformers LlamaRMSNorm: hidden_states.to(torch.float32)).
  double norm_saved_input_bytes = 2.0;
  /// The gated MLP runs as eager `silu(gate) * up` (no fused SwiGLU kernel): SiLU keeps its input and the product's
  /// mul keeps both factors, so the SiLU output (ffn wide, 16-bit) is a third saved tensor besides gate's and up's
  /// outputs (PyTorch derivatives.yaml: silu saves self, mul saves self and other when both need gradients).
  bool eager_swiglu_saves_silu_output = false;
  /// Attention reads Q, K and V as views of one fused QKV projection output, RoPE writes new Q and K, and the
  /// attention kernel saves the V view (SDPA/flash-attn save their inputs as passed), which keeps the whole QKV
  /// output alive: the pre-RoPE Q and K stay in memory beside the roped copies (LitGPT model.py).
  bool attention_keeps_fused_qkv = false;
  /// LoRA on q, k and v is one adapter on the fused QKV linear (LitGPT LoRAQKVLinear): one dropout and one A of
  /// r x (number of adapted parts) read the shared input once; with only some of q, k, v adapted, zero_pad's
  /// out-of-place index_copy keeps B's output (its source) for backward.
  bool lora_fused_qkv = false;
  /// bitsandbytes MatMul4Bit keeps its input A for backward (ctx.tensors = (A, B)) although only A's gradient is
  /// computed: every 4-bit base linear keeps its input under QLoRA (bitsandbytes before 0.43.2, commit 9e753741
  /// "fix QLoRA mem bug: delete useless buffered activation" made it (None, B)).
  bool qlora_keeps_linear_inputs = false;
  /// QLoRA quantises the LM head too (Lightning's BitsandbytesPrecision replaces every nn.Linear unless
  /// ignore_modules names it); transformers keeps lm_head in 16 bits.
  bool qlora_quantizes_lm_head = false;
  /// 16-bit copies of a dequantised 4-bit weight alive at once in MatMul4Bit: 1 where dequantize_4bit returns the
  /// compute dtype; 2 where the weight was quantised from fp16 and `.to(A.dtype)` casts the fp16 copy to bf16.
  double qlora_dequant_copies = 1.0;
  /// The tensor, pipeline and context parallelism it offers (false: data parallelism and ZeRO only).
  bool offers_model_parallel = true;
  // Recipe traits: what the framework's published (performance) recipes turn on by default. `validate` takes them
  // for the settings a published run leaves null; a plan given to predict or search states its own.
  /// fp8 linears' quantization kernels: Transformer Engine's fused cast-transpose or torchao's Float8Linear.
  Fp8Library fp8_library = Fp8Library::transformer_engine;
  /// The scaling recipe of its fp8 recipes, and whether they gather ZeRO/FSDP parameters in fp8.
  Fp8Recipe fp8_recipe = Fp8Recipe::delayed;
  bool fp8_param_gather = false;
  /// The MoE dispatcher its performance recipes run with dropless routing, when that is not the default.
  std::optional<MoeDispatcher> recipe_dropless_dispatcher;
  /// Its performance recipes overlap TP communication with the GEMMs whenever tp > 1.
  bool recipe_tp_comm_overlap = false;
  /// The K/V exchange context parallelism runs when a run does not say (Megatron-Core --cp-comm-type p2p;
  /// torchtitan experimental.context_parallel_rotate_method "allgather").
  CpKind recipe_cp_kind = CpKind::ring;
  /// torch.compile is offered (it then fuses the eager elementwise kernels: fused_elementwise), and whether a
  /// run compiles when its configuration does not say.
  bool offers_compile = false;
  bool compiled_by_default = false;
  std::vector<std::string> sources;
  /// The launcher whose argument checks a plan must pass (framework_rules.h).
  Launcher launcher = Launcher::none;
  /// What a plan gets when the user leaves a setting unset (predict; search varies them): the ZeRO stage without
  /// and with pipeline parallelism, sequence parallelism when tp > 1 and recompute (the fp8 recipe: fp8_recipe).
  int default_zero = 1;
  int default_zero_pp = 1;
  bool default_sp = true;
  Recompute default_recompute = Recompute::none;
  std::vector<std::string> default_sources;
  /// The ZeRO stage a plan of `pp` pipeline stages gets by default.
  int zero_default(int pp) const { return pp > 1 ? default_zero_pp : default_zero; }
};

/// "megatron-lm", "nemo", "torchtitan", "megatron-deepspeed" or "none".
const char* to_string(Launcher l);
/// The defaults as --help states them: "zero 1, sp on when tp > 1, recompute none, fp8 recipe delayed".
std::string framework_defaults_text(const Framework& f);

/// The built-in profiles: megatron-lm, nemo, torchtitan, llm-foundry, megatron-deepspeed, other,
/// megatron-lm-legacy (Megatron-LM before FlashAttention, 2021-2022), nemo-2024, and the Hugging Face Trainer + PEFT
/// stacks hf-deepspeed and hf-fsdp, and litgpt-2023 (Lit-GPT's single-GPU fine-tuning scripts of October 2023).
const Framework* find_framework(const std::string& name);

/// The profile of framework `name` at `version` (as the framework spells its releases, "" if unknown) or, without
/// one, at `date` ("YYYY" or "YYYY-MM", "" if unknown): behaviour that changed between releases lives in separate
/// profiles (megatron-lm-legacy before Megatron-Core and FlashAttention; nemo-2024 for NeMo 24.x with delayed
/// scaling). Without version and date the current profile. Null for an unknown name.
const Framework* select_framework(const std::string& name, const std::string& version, const std::string& date);

/// `f` as torch.compile runs it: Inductor fuses the elementwise chains of each block (norms, activations, RoPE,
/// residual adds) into single kernels, one read and one write per tensor. `f` itself when it offers no compile.
Framework compiled(const Framework& f);
std::vector<std::string> framework_names();

/// One trait as `shardplan profile framework` shows it: the field's name and its value as text.
struct FrameworkTrait {
  std::string name;
  std::string value;
};
/// Every trait of a profile except its name and sources, in declaration order.
std::vector<FrameworkTrait> framework_traits(const Framework& f);

}  // namespace shardplan
