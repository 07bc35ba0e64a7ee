#include "modeler/framework.h"

#include <algorithm>
#include <cstdio>

namespace shardplan {

namespace {

Framework megatron() {
  Framework f;
  f.name = "megatron-lm";
  f.description = "Megatron-LM / Megatron-Core with Transformer Engine (2024-2025): fused kernels, dist. optimizer";
  // Transformer Engine's fused attention (cuDNN) on Hopper; FlashAttention-2 on Ampere.
  f.attention = AttentionKernel::flash3;
  f.fused_elementwise = true;  // TE fused LayerNorm/RMSNorm+GEMM, bias-GeLU/SwiGLU fusion, fused RoPE, fused CE
  f.overlap_grad_reduce = true;   // --overlap-grad-reduce (Megatron-Core DDP buckets)
  f.overlap_param_gather = true;  // --overlap-param-gather (distributed optimizer)
  f.reshard_after_forward = true;
  // Megatron keeps bf16/fp16 model params, accumulates gradients in an fp32 main-grad buffer
  // (--accumulate-allreduce-grads-in-fp32, forced on for bf16 in arguments.py) and holds fp32 master
  // params + Adam m, v in the (distributed) optimizer: 2 + 4 + 12 bytes per parameter.
  f.state = {2, 4, 12};
  // DDP (0), --use-distributed-optimizer (1), Megatron-FSDP --use-megatron-fsdp with optim_grads_params (3); no
  // gradient-only sharding stage.
  f.zero_stages = {0, 1, 3};
  f.offers_tp_overlap = true;  // --tp-comm-overlap (Transformer Engine userbuffers)
  f.offers_ep_overlap = true;  // --overlap-moe-expert-parallel-comm (Megatron-Core combined 1F1B schedule)
  f.offers_block_recompute = true;  // --recompute-method block --recompute-num-layers N
  // Megatron-Core OptimizerConfig.optimizer_cpu_offload / optimizer_offload_fraction (HybridDeviceOptimizer).
  f.optimizer_offload = OptimizerOffloadKind::megatron_hybrid;
  // --num-distributed-optimizer-instances N: the distributed optimizer shards over (dp x cp) / N contiguous ranks,
  // reduce-scatters there and all-reduces across the N instances (megatron/core/parallel_state.py
  // intra_partial_data_parallel_size, distributed/param_and_grad_buffer.py: RS then AR on a communication stream).
  f.hsdp_zero_stages = {1};
  // TransformerConfig.cpu_offloading / cpu_offloading_num_layers (Transformer Engine CPU offload of activations;
  // refused with pipeline parallelism and with recompute, transformer_config.py __post_init__).
  f.offers_activation_offload = true;
  // --recompute-granularity selective --recompute-modules (Megatron-Core TransformerConfig.recompute_modules)
  f.offers_recompute_modules = true;
  // TE Linear/LayerNormLinear save the quantized input (column-wise fp8 data only) for the wgrad GEMM
  // (transformer_engine/pytorch/module/linear.py forward: "saved_inputmat = inputmat" after
  // update_usage(rowwise_usage=False, columnwise_usage=True)).
  f.fp8_saves_linear_inputs = true;
  // Unfused vocab-parallel cross-entropy (--cross-entropy-loss-fusion is off by default,
  // megatron/core/tensor_parallel/cross_entropy.py): forward casts bf16 logits to fp32 (2 read + 4 write), max
  // (4), subtract (4+4), exp (4+4), sum (4), divide (4+4) = 38 bytes; backward scales the saved softmax by the
  // incoming gradient (4+4) and casts to bf16 (4+2) = 14 bytes.
  f.cross_entropy_bytes_per_logit = 52.0;
  // bf16 logits and the fp32 copy the vocab-parallel loss works in place on (exp, divide): 6 bytes per logit.
  f.logits_bytes_per_logit = 6.0;
  // Megatron-Core TransformerConfig.fp8_recipe defaults to "delayed" (megatron/core/transformer/transformer_config.py);
  // --fp8-param-gather and --tp-comm-overlap are off unless asked for.
  f.fp8_recipe = Fp8Recipe::delayed;
  f.sources = {"Megatron-LM arguments.py (--overlap-grad-reduce, --overlap-param-gather, accumulate fp32 grads)",
               "Megatron-Core transformer_config.py (fp8_recipe default delayed)",
               "Transformer Engine docs: fused attention (cuDNN), LayerNormLinear, fp8 cast-transpose"};
  f.launcher = Launcher::megatron;
  // Megatron-Core offers moe_token_dispatcher_type allgather | alltoall | flex, flex with
  // moe_flex_dispatcher_backend deepep | hybridep (transformer_config.py); the MoE examples and every
  // Megatron-Bridge MoE provider run alltoall unless DeepEP is asked for, so alltoall is the default here.
  f.moe_dispatchers = {MoeDispatcher::alltoall, MoeDispatcher::allgather, MoeDispatcher::deepep,
                       MoeDispatcher::hybridep};
  // megatron/core/transformer/moe/experts.py (TEGroupedMLP.forward: permuted_probs into the activation).
  f.moe_probs_in_activation = true;
  // TEGroupedMLP (experts.py) over TE GroupedLinear: one cuBLAS GEMM per local expert (TE v2.7
  // nvte_multi_stream_cublas_gemm; CUTLASS grouped GEMM only behind NVTE_USE_CUTLASS_GROUPED_GEMM from v2.8).
  f.moe_gemm_per_expert = true;
  // Group-limited routing (moe_utils.py group_limited_topk, transformer_config.py moe_router_num_groups and
  // moe_router_group_topk): the experts in node groups, each token's experts from its top groups.
  f.offers_moe_max_nodes = true;
  // Megatron-LM's argparse leaves the distributed optimizer and sequence parallelism off, but its example
  // scripts and every NeMo/Megatron-Bridge recipe turn both on (examples/llama/train_llama3_8b_h100_fp8.sh:
  // --use-distributed-optimizer --sequence-parallel); shardplan defaults to the recipes'. fp8_recipe defaults to
  // "delayed" (megatron/core/transformer/transformer_config.py); recompute is off unless
  // --recompute-granularity is given.
  f.default_zero = f.default_zero_pp = 1;
  f.default_sp = true;
  f.default_recompute = Recompute::none;
  f.default_sources = {"Megatron-LM megatron/core/transformer/transformer_config.py (fp8_recipe = delayed)",
                       "Megatron-LM examples/llama/*.sh (--use-distributed-optimizer --sequence-parallel)"};
  return f;
}

Framework nemo() {
  Framework f = megatron();
  f.name = "nemo";
  f.description = "NeMo / Megatron-Bridge performance recipes: Megatron-Core with bf16 gradients";
  // NeMo 2 / Megatron-Bridge performance recipes enable cross_entropy_loss_fusion (TE fused kernel): read bf16
  // logits, write fp32 softmax statistics in one pass, read them back in backward and write bf16 gradients.
  f.cross_entropy_bytes_per_logit = 12.0;
  // The performance recipes reduce (and so keep) gradients in bf16: NeMo's scripts/performance set
  // recipe.trainer.plugins.grad_reduce_in_fp32 = False, Megatron-Bridge's set_basic_perf_overrides sets
  // mixed_precision.grad_reduce_in_fp32 = ddp.grad_reduce_in_fp32 = False. 2 + 2 + 12 bytes per parameter.
  f.state = {2, 2, 12};
  // Megatron-Bridge's MoE model providers (DeepSeek, Qwen3 MoE, ...) set moe_permute_fusion = True.
  f.fused_moe_permutation = true;
  // Megatron-Bridge's DeepSeek-V3 and Qwen3 MoE perf recipes set moe_router_fusion = True
  // (scripts/performance/configs/deepseek/deepseek_v3_llm_pretrain.{py,yaml}).
  f.fused_moe_router = true;
  // Dropless MoE perf configs run DeepEP (enable_deepep=True; token drop turns it off: "Using token drop, disabling
  // DeepEP", scripts/performance/configs/deepseek/deepseek_v3_llm_pretrain.py).
  f.recipe_dropless_dispatcher = MoeDispatcher::deepep;
  f.sources.push_back("NeMo performance recipes: Megatron-Core with TE, distributed optimizer, overlap on");
  f.sources.push_back("NeMo scripts/performance and Megatron-Bridge scripts/performance: grad_reduce_in_fp32 = False");
  f.launcher = Launcher::nemo;
  // Megatron-Bridge performance recipes (25.x): fp8 means current (tensorwise) scaling with parameters gathered in
  // fp8 (scripts/performance/utils/precision.py maps fp8_cs to training/mixed_precision.py
  // bf16_with_fp8_current_scaling_mixed: fp8_recipe tensorwise, fp8_param_gather True); the dense Llama recipes
  // overlap TP communication (recipes/llama/h100/llama3.py CommOverlapConfig(tp_comm_overlap=True) with
  // userbuffers configs) and scripts/performance/utils/overrides.py turns it on whenever tp > 1.
  f.fp8_recipe = Fp8Recipe::tensorwise;
  f.fp8_param_gather = true;
  f.recipe_tp_comm_overlap = true;
  f.description = "Megatron-Bridge performance recipes (NeMo 25.x): Megatron-Core, bf16 grads, fp8 current scaling";
  f.sources.push_back(
      "Megatron-Bridge training/mixed_precision.py, scripts/performance/utils/{precision,overrides}.py");
  return f;
}

Framework nemo_2024() {
  Framework f = nemo();
  f.name = "nemo-2024";
  f.description = "NeMo 24.x performance recipes: Megatron-Core, bf16 grads, fp8 delayed scaling, TP overlap";
  // NeMo 24.07 (commit 8e3d65dcfe): fp8 through Transformer Engine's DelayedScaling (examples/nlp/
  // language_modeling/conf/megatron_gpt_config.yaml: fp8_amax_history_len 1024, amax_compute_algo max,
  // reduce_amax), weights gathered in bf16; its performance recipes overlap TP communication
  // (nemo/collections/llm/recipes/llama3_70b.py performance mode: tp_comm_overlap=True).
  f.fp8_recipe = Fp8Recipe::delayed;
  f.fp8_param_gather = false;
  f.recipe_tp_comm_overlap = true;
  f.sources.push_back(
      "NVIDIA/NeMo 8e3d65dcfe megatron_gpt_config.yaml (fp8 delayed scaling), llm/recipes/llama3_70b.py");
  return f;
}

Framework megatron_legacy() {
  Framework f = megatron();
  f.name = "megatron-lm-legacy";
  f.description = "Megatron-LM 2021-2022 (Narayanan, Korthikanti): materialised attention, fp32 main grads";
  // Megatron-LM as in Narayanan et al. 2021 and Korthikanti et al. 2022: core attention as baddbmm +
  // fused scale-mask-softmax + dropout + bmm (megatron/model/transformer.py CoreAttention, fused_softmax.py);
  // FlashAttention was integrated in 2023. Apex fused LayerNorm and bias-GeLU; fp32 main grads; no distributed
  // optimizer overlap of parameter gathers.
  f.materialized_attention = true;
  f.overlap_param_gather = false;
  f.zero_stages = {0, 1};  // DDP and the distributed optimizer (2021-2022)
  f.offers_tp_overlap = false;  // userbuffers overlap came with Transformer Engine (2023)
  f.offers_ep_overlap = false;
  f.moe_dispatchers = {MoeDispatcher::alltoall};  // DeepEP/HybridEP came with Megatron-Core 0.11+ (2025)
  f.offers_moe_max_nodes = false;                 // group-limited routing came with Megatron-Core (2025)
  f.moe_probs_in_activation = false;  // the probability-weighted un-permute of 2021-2024
  f.offers_recompute_modules = false;  // --recompute-modules came with Megatron-Core (2025)
  f.optimizer_offload = OptimizerOffloadKind::none;  // the CPU optimizer came with Megatron-Core (2025)
  f.hsdp_zero_stages = {};
  f.offers_activation_offload = false;
  f.sources = {"NVIDIA/Megatron-LM v2.x-v3.0 megatron/model/transformer.py (CoreAttention), fused_softmax.py",
               "Korthikanti et al. 2022 Sec. 5 (selective recompute of the attention core)"};
  f.launcher = Launcher::none;  // a historical profile: today's Megatron-LM flags would not run its kernels
  return f;
}

Framework megatron_deepspeed() {
  Framework f = megatron();
  f.name = "megatron-deepspeed";
  f.description = "Megatron-DeepSpeed fork: FlashAttention-2, DeepSpeed ZeRO, no Transformer Engine";
  f.offers_tp_overlap = false;
  f.offers_ep_overlap = false;
  f.offers_recompute_modules = false;  // a 2023 fork of Megatron-LM: selective means the attention core
  f.moe_dispatchers = {MoeDispatcher::alltoall};  // DeepSpeed-MoE: capacity-padded all-to-all (deepspeed/moe)
  f.offers_moe_max_nodes = false;                 // DeepSpeed-MoE's top-k gating has no node groups
  f.moe_probs_in_activation = false;  // DeepSpeed-MoE combines with a probability-weighted einsum
  f.attention = AttentionKernel::flash2;  // flash-attn 2 package, no TE fused attention
  f.fp8_saves_linear_inputs = false;      // no Transformer Engine linears
  f.overlap_param_gather = false;
  f.optimizer_offload = OptimizerOffloadKind::zero_offload;  // DeepSpeed offload_optimizer: {device: cpu}
  // DeepSpeed MiCS (zero_optimization.mics_shard_size, runtime/zero/config.py): ZeRO-3 sharded within groups of
  // that size, gradients all-reduced across them. ZeRO++ (zero_quantized_weights, zero_hpz_partition_size,
  // zero_quantized_gradients) at stage 3; ZeRO-Infinity offload_param / offload_optimizer to cpu or nvme
  // (runtime/zero/offload_config.py). Megatron-DeepSpeed's own --cpu-offloading is not Megatron-Core's.
  f.hsdp_zero_stages = {3};
  f.offers_zeropp = true;
  f.param_offload = ParamOffloadKind::zero_infinity;
  f.offers_nvme_offload = true;
  f.offers_activation_offload = false;
  // --zero-stage (megatron/arguments.py _add_zero_args, no choices) goes into the DeepSpeed config's
  // zero_optimization.stage, 0-3 (deepspeed/runtime/zero/config.py ZeroStageEnum); stages 2 and 3 only without
  // pipeline parallelism (rule deepspeed_zero_pp).
  f.zero_stages = {0, 1, 2, 3};
  f.zero3_gather = Zero3Gather::deepspeed_modules;  // DeepSpeed's PartitionedParameterCoordinator
  f.sources = {"microsoft/Megatron-DeepSpeed README: --use-flash-attn-v2, DeepSpeed ZeRO stages"};
  f.launcher = Launcher::megatron_deepspeed;
  // DeepSpeed's zero_optimization.stage defaults to 0 (deepspeed/runtime/zero/config.py), as the Megatron-DeepSpeed
  // example scripts run it (examples_deepspeed/pretrain_llama2_distributed.sh: ZERO_STAGE=0).
  f.default_zero = f.default_zero_pp = 0;
  f.default_sources = {"deepspeedai/DeepSpeed deepspeed/runtime/zero/config.py (stage 0 by default)",
                       "deepspeedai/Megatron-DeepSpeed examples_deepspeed/pretrain_llama2_distributed.sh "
                       "(ZERO_STAGE=0)"};
  return f;
}

Framework torchtitan() {
  Framework f;
  f.name = "torchtitan";
  f.description = "torchtitan (Dec 2024): FSDP2, eager PyTorch ops, torchao float8, torch pipelining";
  // PyTorch SDPA: the flash backend is FlashAttention-2 (torch 2.5/2.6, Dec 2024 benchmarks); no FA3.
  f.attention = AttentionKernel::flash2;
  // Eager nn.RMSNorm/F.silu etc. without torch.compile: each op is its own kernel.
  f.fused_elementwise = false;
  f.unfused_passes_per_norm = 4.0;  // x.pow(2).mean(), rsqrt, x * r, * weight: ~4 read+write passes
  // torchtitan 9dec370 models/norms.py RMSNorm: self._norm(x.float()).type_as(x) * weight; pow and mul keep the
  // fp32 upcast of the input for backward (compiled: 2, the bf16 input, see compiled()).
  f.norm_saved_input_bytes = 4.0;
  f.overlap_grad_reduce = true;   // FSDP2 reduce-scatter runs on a separate stream during backward
  f.overlap_param_gather = true;  // FSDP2 prefetches the next layer's all-gather
  f.reshard_after_forward = true; // fully_shard default (not with PP, where torchtitan keeps params)
  // FSDP2 mixed precision: sharded fp32 params (the master copy), fp32 sharded grads, Adam m, v in fp32;
  // the bf16 unsharded copy (MixedPrecisionPolicy param_dtype) exists only transiently per layer under
  // reshard_after_forward, and for the whole step without it.
  f.state = {4, 4, 8};
  f.fsdp_unsharded_param_bytes = 2.0;
  f.pp_deferred_grad_bytes = 4.0;  // torch.distributed.pipelining; mixed_precision_reduce default float32
  // torchtitan 9dec370 (the Dec 2024 benchmarks' commit), pipeline_parallel.py: n_microbatches =
  // experimental.pipeline_parallel_microbatches (default None) or the pipeline degree. Later releases replaced it
  // by parallelism.pipeline_parallel_microbatch_size (default 1); a plan with a micro-batch is unaffected.
  f.pp_microbatches_default_to_pp = true;
  // torchao casts input and weight to float8 inside each forward, before torch._scaled_mm (torchtitan
  // docs/float8.md), so no whole-model fp8 weight copy persists; under activation checkpointing the cast weight
  // is recomputed with the layer.
  f.fp8_caches_weights = false;
  // Eager F.cross_entropy: logits.float() (2+4), log_softmax (reads 4 twice for max and sum, writes 4),
  // nll_loss (small); backward: log_softmax backward (reads 4+4, writes 4), cast to bf16 (4+2) = 36 bytes.
  f.cross_entropy_bytes_per_logit = 36.0;
  // Peak of the eager loss (F.cross_entropy on logits.float()): in forward the bf16 logits (2), the fp32 upcast
  // (4) and log_softmax's fp32 output saved for backward (4) are alive together, 10 bytes; the backward starts
  // higher: torchtitan's train step deletes the logits (`del pred`) before loss.backward(), then nll_loss's
  // backward writes a dense fp32 gradient (4) that log_softmax's backward reads with its saved output (4) to
  // write its own fp32 gradient (4): 12 bytes per logit, while every layer's activations are still held.
  f.logits_bytes_per_logit = 12.0;
  // With tp > 1 torchtitan computes the loss under loss_parallel (parallelism.disable_loss_parallel = false), whose
  // ops are torch/distributed/tensor/parallel/loss.py's, on the local fp32 vocabulary shard of pred.float() (read
  // 2, write 4): _log_softmax reads it for the max (4), writes x - max (4 + 4), exp of it (4 + 4) read again by the
  // sum (4), and the result (4 + 4): 38 bytes. Backward, _nll_loss_and_log_softmax_backward: zeros_like (write 4),
  // exp(x) (4 + 4), grad_input + exp (8 + 4), times grad_output (4 + 4), then the cast to bf16 (4 + 2): 38. Its
  // peak is that backward's: the saved log-probabilities, grad_input, exp(x) and their sum, 16 bytes per logit
  // (the forward peaks at 14: bf16 pred, the fp32 copy, x - max and its exp).
  f.loss_parallel_cross_entropy_bytes_per_logit = 76.0;
  f.loss_parallel_logits_bytes_per_logit = 16.0;
  // PyTorch context parallelism (torch/distributed/tensor/experimental/_attention.py, convert_to_f32 on by
  // default): _SDPAMerger casts each step's output to fp32 (read 2, write 4) and merges it eagerly,
  // out - sigmoid(lse_b - lse) * (out - out_b): a subtract (4 + 4, 4), a multiply (4, 4) and a subtract
  // (4 + 4, 4), 38 bytes per later step; the first step's cast (6) and the final cast back to bf16 (read 4,
  // write 2) make 12. Backward accumulates dQ, dK, dV in fp32 buffers with grad += step (read 4 + 2, write 4)
  // on every step, the first with the zero fill (4) and the final cast (6) besides: 20, then 10; dK/dV rotate
  // in fp32 by all-to-all.
  f.cp_merge = {12.0, 38.0, 20.0, 10.0};
  f.cp_allgather_runs_ring_loop = true;
  f.cp_grad_kv_bytes = 4.0;
  f.selective_is_op_sac = true;  // activation_checkpoint.mode = "selective", selective_ac_option = "op"
  // data_parallel_replicate_degree (0); FSDP2 with reshard_after_forward false (2, torchtitan's choice under PP)
  // or true (3). No optimizer-only sharding.
  f.zero_stages = {0, 2, 3};
  // HSDP: data_parallel_replicate_degree x data_parallel_shard_degree (torchtitan config/configs.py
  // ParallelismConfig; distributed/fsdp.py applies fully_shard on the (dp_replicate, dp_shard x cp) mesh, and
  // FSDP2 reduce-scatters over the shard dim and all-reduces over the replicate dim per unit in backward).
  f.hsdp_zero_stages = {2, 3};
  // training.enable_cpu_offload: FSDP2 CPUOffloadPolicy, "parameters, gradients, and optimizer states" on the
  // host (config/configs.py, distributed/fsdp.py). Activation offload exists only in experiments/graph_trainer
  // (compile.memory_policy cpu_offload_all), not in the trainer: not offered here.
  f.param_offload = ParamOffloadKind::fsdp_cpu;
  f.offers_tp_overlap = true;  // parallelism.enable_async_tensor_parallel (torch.compile + symmetric memory)
  // AsyncTP moves data with copy-engine copies between symmetric-memory buffers in tp chunks, for the
  // reduce-scatter too (torch/distributed/_symmetric_memory _pipelined_produce_and_all2all): no SMs taken.
  f.tp_overlap_rs_splits = 0;
  f.tp_overlap_rs_sms = 0;
  f.tp_overlap_bulk_sms = 0;
  // ...and then sums the tp partial chunks it received (reduce over the stacked chunks: torch.sum).
  f.tp_overlap_rs_reduce_kernel = true;
  // torchao Float8Linear, tensor-wise dynamic scaling (torchtitan 9dec370 docs/float8.md; config_manager.py
  // float8.scaling_type_* default "dynamic"); docs/float8.md launches with --float8.enable_fsdp_float8_all_gather
  // and train_configs/llama3_405b.toml sets it. training.compile is a store_true flag (eager by default).
  f.fp8_library = Fp8Library::torchao;
  f.fp8_recipe = Fp8Recipe::tensorwise;
  f.fp8_param_gather = true;
  f.offers_compile = true;
  f.compiled_by_default = false;
  f.sources = {"pytorch/torchtitan 9dec370 docs/float8.md, config_manager.py (float8, training.compile)",
               "pytorch/torchtitan docs/fsdp.md (FSDP2 MixedPrecisionPolicy, reshard_after_forward)",
               "PyTorch SDPA backends (flash = FlashAttention-2)", "pytorch/ao float8 README (dynamic scaling)",
               "torch FSDPParam.to_accumulated_grad_if_needed; torch.distributed.pipelining backward_maybe_with_nosync",
               "torchtitan 9dec370 pipeline_parallel.py (n_microbatches defaults to the pipeline degree)"};
  f.launcher = Launcher::torchtitan;
  // parallelism.data_parallel_shard_degree = -1 (FSDP over the leftover ranks) with fsdp_reshard_after_forward
  // "default": reshard after forward without PP (ZeRO-3), never under PP (ZeRO-2) (torchtitan
  // torchtitan/models/llama3/infra/parallelize.py apply_fsdp). Tensor parallelism always shards the norms'
  // sequence (SequenceParallel in apply_tp). The shipped llama3 configs checkpoint with op-level selective AC
  // (train_configs/llama3_8b.toml mode = "selective", selective_ac_option = "op"). torchao float8 scales
  // tensorwise by default (Float8Linear recipe_name None = tensorwise).
  f.default_zero = 3;
  f.default_zero_pp = 2;
  f.default_sp = true;
  f.default_recompute = Recompute::selective;
  f.default_sources = {"torchtitan v0.2.2 torchtitan/config/job_config.py (data_parallel_shard_degree -1, "
                       "fsdp_reshard_after_forward default)",
                       "torchtitan v0.2.2 torchtitan/models/llama3/infra/parallelize.py (apply_fsdp, apply_tp)",
                       "torchtitan v0.2.2 torchtitan/models/llama3/train_configs/llama3_8b.toml (selective op AC)"};
  return f;
}

Framework llm_foundry() {
  Framework f;
  f.name = "llm-foundry";
  f.description = "MosaicML llm-foundry / Composer (2023): FSDP1, Triton flash attention, eager loss";
  // attn_impl: triton in the 2023 MPT yamls the benchmark tables were run with (scripts/train/yamls/pretrain/
  // mpt-*.yaml): the Triton port of the first FlashAttention algorithm.
  f.attention = AttentionKernel::flash1;
  // MPT blocks: low_precision_layernorm (one fused torch kernel), GELU unfused; fused cross-entropy optional.
  f.fused_elementwise = false;
  f.unfused_passes_per_norm = 1.0;
  f.overlap_grad_reduce = true;   // FSDP1 backward prefetch (BACKWARD_PRE)
  f.overlap_param_gather = true;  // FSDP1 forward prefetch
  f.reshard_after_forward = true; // FULL_SHARD
  f.zero_stages = {0, 2, 3};      // NO_SHARD, SHARD_GRAD_OP, FULL_SHARD
  // PyTorch FSDP1 ShardingStrategy.HYBRID_SHARD / _HYBRID_SHARD_ZERO2 (torch/distributed/fsdp/api.py: shard within
  // a node, replicate across nodes) and CPUOffload(offload_params=True) (parameters and gradients on the host,
  // the optimizer steps there), both Composer FSDP config keys (sharding_strategy, cpu_offload).
  f.hsdp_zero_stages = {2, 3};
  f.param_offload = ParamOffloadKind::fsdp_cpu;
  f.state = {4, 4, 8};            // FSDP1 flat fp32 params sharded (master), fp32 grads, Adam (LionW uses m only)
  f.fsdp_unsharded_param_bytes = 2.0;  // FSDP MixedPrecision param_dtype bf16 (PURE/DEFAULT precision configs)
  // The 2023 MPT yamls set no fused loss: eager F.cross_entropy, as torchtitan (36 bytes per logit of traffic).
  f.cross_entropy_bytes_per_logit = 36.0;
  // The loss's backward peak as torchtitan's (12 bytes) plus the bf16 logits, which Composer keeps referenced
  // through the backward (composer/trainer/trainer.py _train_microbatch: self.state.outputs): 14 bytes per logit.
  f.logits_bytes_per_logit = 14.0;
  f.sources = {"mosaicml/llm-foundry scripts/train/benchmarking/README.md and yamls (FULL_SHARD, attn_impl triton)",
               "Composer FSDP docs (mixed precision DEFAULT/PURE)"};
  f.default_zero = f.default_zero_pp = 3;  // sharding_strategy FULL_SHARD in the MPT yamls
  f.default_sp = false;                    // no tensor parallelism in the MPT recipes
  f.default_sources = {"mosaicml/llm-foundry scripts/train/yamls/pretrain/mpt-*.yaml (FULL_SHARD)"};
  return f;
}

Framework hf_deepspeed() {
  Framework f;
  f.name = "hf-deepspeed";
  f.description = "Hugging Face Trainer/TRL + PEFT + accelerate with DeepSpeed ZeRO (eager transformers models)";
  // Read at transformers 4.46+ (modeling_llama.py, loss/loss_utils.py), peft examples/sft (utils.py, train.py),
  // bitsandbytes functional.py / autograd/_functions.py, accelerate utils/dataclasses.py, DeepSpeed edaa722.
  // attn_implementation="flash_attention_2" (peft examples/sft --use_flash_attn): FlashAttention-2.
  f.attention = AttentionKernel::flash2;
  // Eager modules: LlamaRMSNorm runs to(float32), pow, mean, add+rsqrt, mul, to(bf16), mul by the weight as separate
  // kernels (about six read+write passes), and upcasts its input, which pow and mul keep for backward in fp32.
  f.fused_elementwise = false;
  f.unfused_passes_per_norm = 6.0;
  f.norm_saved_input_bytes = 4.0;
  // LlamaMLP.forward: down_proj(act_fn(gate_proj(x)) * up_proj(x)) in eager PyTorch (ACT2FN["silu"] = nn.SiLU).
  f.eager_swiglu_saves_silu_output = true;
  // transformers' ForCausalLMLoss upcasts the bf16 logits to fp32 and calls cross_entropy (log_softmax saves its
  // fp32 output): 2 + 4 + 4 bytes per logit in forward; Trainer.compute_loss returns only the loss, so the outputs
  // (the bf16 logits) are gone before accelerator.backward, whose log_softmax backward holds its saved output, the
  // incoming fp32 gradient and its own: 12 bytes per logit. Traffic as torchtitan's eager F.cross_entropy (36).
  f.logits_bytes_per_logit = 12.0;
  f.cross_entropy_bytes_per_logit = 36.0;
  // DeepSpeed bf16 under ZeRO: the model (zero.Init casts to the config's dtype) and its gradient partitions are
  // bf16 (engine.get_data_types: grad_accum_dtype = the model dtype with ZeRO), the optimizer holds the fp32 master
  // with Adam's m and v.
  f.state = {2, 2, 12};
  f.zero_stages = {0, 1, 2, 3};
  f.zero3_gather = Zero3Gather::deepspeed_modules;
  // transformers' modules (modeling_llama.py LlamaAttention, LlamaMLP): q_proj, k_proj, v_proj, gate_proj and up_proj
  // are separate nn.Linear modules, under DeepSpeed and FSDP alike (hf_fsdp inherits this).
  f.fused_projections = false;
  // DeepSpeed offload_optimizer / offload_param (cpu or nvme), set through the accelerate config.
  f.optimizer_offload = OptimizerOffloadKind::zero_offload;
  f.param_offload = ParamOffloadKind::zero_infinity;
  f.offers_nvme_offload = true;
  // The Trainer parallelises by data only (accelerate's DeepSpeed plugin: DeepSpeed's data-parallel engine).
  f.offers_model_parallel = false;
  f.offers_tp_overlap = false;
  f.offers_ep_overlap = false;
  f.offers_recompute_modules = false;
  f.overlap_param_gather = true;  // the coordinator prefetches (stage3_prefetch_bucket_size)
  f.sources = {"huggingface/peft docs/source/accelerate/deepspeed.md, examples/sft",
               "huggingface/transformers models/llama/modeling_llama.py (LlamaRMSNorm), loss/loss_utils.py",
               "huggingface/accelerate src/accelerate/utils/dataclasses.py (DeepSpeedPlugin config)",
               "deepspeedai/DeepSpeed deepspeed/runtime/zero/stage3.py, partitioned_param_coordinator.py (edaa722)"};
  f.launcher = Launcher::none;  // no launcher emitted: plan JSON
  // DeepSpeed's zero_optimization.stage default (0) when the config leaves it out; gradient checkpointing is the
  // TrainingArguments flag (gradient_checkpointing, default False).
  f.default_zero = f.default_zero_pp = 0;
  f.default_sp = false;
  f.default_recompute = Recompute::none;
  f.default_sources = {"deepspeedai/DeepSpeed deepspeed/runtime/zero/config.py (stage 0 by default)",
                       "huggingface/transformers TrainingArguments.gradient_checkpointing (False)"};
  return f;
}

Framework hf_fsdp() {
  Framework f = hf_deepspeed();
  f.name = "hf-fsdp";
  f.description = "Hugging Face Trainer/TRL + PEFT + accelerate with PyTorch FSDP1 (eager transformers models)";
  // accelerate's FSDP plugin (FSDP1, FullyShardedDataParallelPlugin): FULL_SHARD (3), SHARD_GRAD_OP (2), NO_SHARD
  // (0), HYBRID_SHARD; use_orig_params=False as PEFT's guide requires. The peft examples load the model in fp32
  // (examples/sft/utils.py: torch_dtype float32 unless a 4-bit storage dtype is given) and train under
  // mixed_precision bf16: the flat parameters (the master copy), their gradients and Adam's states are fp32 and each
  // wrapped unit (PEFT's fsdp_auto_wrap_policy: one decoder layer) is gathered in bf16.
  f.state = {4, 4, 8};
  f.fsdp_unsharded_param_bytes = 2.0;
  f.zero_stages = {0, 2, 3};
  f.zero3_gather = Zero3Gather::fsdp_units;
  f.optimizer_offload = OptimizerOffloadKind::none;
  f.param_offload = ParamOffloadKind::fsdp_cpu;  // fsdp_offload_params: CPUOffload(offload_params=True)
  f.offers_nvme_offload = false;
  f.sources = {"huggingface/peft docs/source/accelerate/fsdp.md, examples/sft (utils.py create_and_prepare_model)",
               "huggingface/accelerate src/accelerate/utils/dataclasses.py (FullyShardedDataParallelPlugin)",
               "huggingface/transformers models/llama/modeling_llama.py, loss/loss_utils.py"};
  // accelerate's FSDP_SHARDING_STRATEGY default FULL_SHARD.
  f.default_zero = f.default_zero_pp = 3;
  f.default_sources = {"huggingface/accelerate FullyShardedDataParallelPlugin (FSDP_SHARDING_STRATEGY FULL_SHARD)"};
  return f;
}

Framework other() {
  Framework f = torchtitan();
  f.name = "other";
  f.description = "a generic PyTorch FSDP stack: eager ops, FlashAttention-2 (torchtitan traits otherwise)";
  f.selective_is_op_sac = false;
  f.zero_stages = {0, 1, 2, 3};
  f.sources = {"generic PyTorch FSDP stack: eager ops, FlashAttention-2"};
  f.launcher = Launcher::none;
  f.default_zero = f.default_zero_pp = 3;  // fully_shard / FULL_SHARD, PyTorch FSDP's default
  f.default_recompute = Recompute::none;
  f.default_sources = {"PyTorch FSDP: ShardingStrategy.FULL_SHARD, fully_shard's reshard_after_forward=True default"};
  return f;
}

Framework litgpt_2023() {
  Framework f;
  f.name = "litgpt-2023";
  f.description = "Lit-GPT 8641822 (Oct 2023) finetune/lora.py: bf16-true, eager PyTorch 2.1, bitsandbytes 0.41";
  // Read at Lightning-AI/litgpt 8641822 (the commit tutorials/resource-tables.md names): finetune/lora.py,
  // lit_gpt/lora.py, lit_gpt/model.py, lit_gpt/rmsnorm.py, lit_gpt/utils.py; bitsandbytes 0.41.0
  // autograd/_functions.py.
  // model.py CausalSelfAttention: F.scaled_dot_product_attention(is_causal=True) without a mask (flash kernel).
  f.attention = AttentionKernel::flash2;
  // Eager modules, no torch.compile in the fine-tuning scripts. rmsnorm.py computes x * rsqrt(mean(x * x)) in the
  // input dtype (no fp32 upcast): its muls keep the 16-bit input.
  f.fused_elementwise = false;
  f.unfused_passes_per_norm = 5.0;  // x * x, mean, add + rsqrt, x * r, weight * x: read + write each
  f.norm_saved_input_bytes = 2.0;
  // LLaMAMLP.forward: proj(silu(fc_1(x)) * fc_2(x)).
  f.eager_swiglu_saves_silu_output = true;
  // model.py: qkv = self.attn(x) viewed, permuted and split into q, k, v; apply_rope + torch.cat write new q and k,
  // v stays a view of qkv and SDPA saves it.
  f.attention_keeps_fused_qkv = true;
  // lit_gpt/lora.py LoRAQKVLinear: one lora_dropout and one lora_A (r * sum(enable_lora), in) on the fused attn
  // linear; zero_pad's index_copy keeps its source when not all of q, k, v are enabled.
  f.lora_fused_qkv = true;
  // --quantize bnb.nf4-dq: lightning (71aed751, lit-gpt's pinned commit) fabric/plugins/precision/bitsandbytes.py
  // swaps every nn.Linear, lm_head included (no ignore_modules passed), for _NF4DQLinear, quantised from
  // weight.to(torch.half); bitsandbytes 0.41 MatMul4Bit keeps A and runs
  // dequantize_4bit(B, state).to(A.dtype): an fp16 and a bf16 copy of the weight at once.
  f.qlora_keeps_linear_inputs = true;
  f.qlora_quantizes_lm_head = true;
  f.qlora_dequant_copies = 2.0;
  // lit_gpt/lora.py GPT.forward(lm_head_chunk_size=128) returns bf16 logit chunks that the training loop holds
  // through backward, and utils.py chunked_cross_entropy runs F.cross_entropy on each bf16 chunk (log_softmax
  // keeps its bf16 output): 2 + 2 bytes per logit; each chunk's backward is 128 tokens wide.
  f.logits_bytes_per_logit = 4.0;
  f.cross_entropy_bytes_per_logit = 12.0;
  // precision "bf16-true": weights, LoRA parameters and their gradients are bf16, and torch.optim.AdamW keeps m and
  // v like the parameter (bf16), with no fp32 master. shardplan's AdamW states are counted in fp32 (8 bytes per
  // trainable parameter, optimizer.h): 4 bytes per adapter parameter more than bf16-true holds (17 MB on
  // Llama-2-7B rank 8 on q, v). The QLoRA path's bnb.optim.PagedAdamW pages its fp32 states in managed memory.
  f.state = {2, 2, 0};
  // devices > 1: FSDPStrategy (auto_wrap_policy and activation_checkpointing_policy {Block}); devices 1: no sharding
  // and no activation checkpointing.
  f.zero_stages = {0, 3};
  f.offers_model_parallel = false;
  f.fused_projections = true;  // the attention's attn linear is fused QKV (its MLP's fc_1, fc_2 are separate)
  f.overlap_param_gather = true;
  f.sources = {"Lightning-AI/litgpt 8641822 finetune/lora.py, lit_gpt/lora.py, lit_gpt/model.py, lit_gpt/rmsnorm.py",
               "bitsandbytes 0.41.0 bitsandbytes/autograd/_functions.py (MatMul4Bit ctx.tensors = (A, B))"};
  f.launcher = Launcher::none;
  f.default_zero = f.default_zero_pp = 0;
  f.default_sp = false;
  f.default_recompute = Recompute::none;
  f.default_sources = {"Lightning-AI/litgpt 8641822 finetune/lora.py (devices = 1: strategy auto)"};
  return f;
}

const std::vector<Framework>& registry() {
  static const std::vector<Framework> all = {megatron(),    nemo(),        torchtitan(),          llm_foundry(),
                                             megatron_deepspeed(), other(), megatron_legacy(), nemo_2024(),
                                             hf_deepspeed(), hf_fsdp(), litgpt_2023()};
  return all;
}

}  // namespace

const Framework* find_framework(const std::string& name) {
  for (const Framework& f : registry())
    if (f.name == name) return &f;
  return nullptr;
}

std::vector<std::string> framework_names() {
  std::vector<std::string> names;
  for (const Framework& f : registry()) names.push_back(f.name);
  return names;
}

const char* to_string(Launcher l) {
  constexpr const char* names[] = {"none", "megatron-lm", "nemo", "torchtitan", "megatron-deepspeed"};
  return names[static_cast<int>(l)];
}

std::string framework_defaults_text(const Framework& f) {
  std::string zero = "zero " + std::to_string(f.default_zero);
  if (f.default_zero_pp != f.default_zero) zero += " (" + std::to_string(f.default_zero_pp) + " with pp > 1)";
  return zero + ", sp " + (f.default_sp ? "on" : "off") + " when tp > 1, recompute " + to_string(f.default_recompute) +
         ", fp8 recipe " + to_string(f.fp8_recipe);
}

namespace {
/// The leading number of a version string ("core_r0.8.0" -> 0, "v3.0" -> 3, "24.07" -> 24); -1 if none.
int major_version(const std::string& v) {
  size_t i = 0;
  while (i < v.size() && !(v[i] >= '0' && v[i] <= '9')) ++i;
  if (i == v.size()) return -1;
  int n = 0;
  for (; i < v.size() && v[i] >= '0' && v[i] <= '9'; ++i) n = n * 10 + (v[i] - '0');
  return n;
}
int year_of(const std::string& date) { return date.size() >= 4 ? major_version(date.substr(0, 4)) : -1; }
}  // namespace

const Framework* select_framework(const std::string& name, const std::string& version, const std::string& date) {
  const int major = major_version(version), year = year_of(date);
  if (name == "megatron-lm") {
    // Releases v1.x-v3.x (2019-2022) predate Megatron-Core (core_r0.x, 2023-) and its FlashAttention and
    // Transformer Engine integration; "core_r" / "core_v" releases are the current profile.
    const bool core = version.rfind("core", 0) == 0;
    if (!version.empty() ? (!core && major >= 1 && major <= 3) : (year > 0 && year < 2023))
      return find_framework("megatron-lm-legacy");
  }
  if (name == "nemo") {
    // NeMo containers are named YY.MM: 24.x and earlier ran NeMo's own recipes (delayed fp8 scaling); 25.x the
    // Megatron-Bridge performance recipes.
    if (!version.empty() ? (major > 0 && major <= 24) : (year > 0 && year <= 2024)) return find_framework("nemo-2024");
  }
  return find_framework(name);
}

Framework compiled(const Framework& f) {
  if (!f.offers_compile) return f;
  Framework c = f;
  c.fused_elementwise = true;
  c.unfused_passes_per_norm = 1.0;
  c.eager_swiglu_saves_silu_output = false;  // Inductor's partitioner recomputes the SiLU from its saved input
  // Inductor fuses the norm's upcast into its kernel and the partitioner saves the smaller 16-bit input for the
  // backward (the cast is recomputed inside the fused backward kernel).
  c.norm_saved_input_bytes = std::min(c.norm_saved_input_bytes, 2.0);
  return c;
}

namespace {
std::string text(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}
std::string text(bool b) { return b ? "yes" : "no"; }
std::string dispatchers_text(const std::vector<MoeDispatcher>& v) {
  std::string s;
  for (MoeDispatcher d : v) s += (s.empty() ? "" : ", ") + std::string(to_string(d));
  return s;
}
std::string text(const std::vector<int>& v) {
  std::string s;
  for (int x : v) s += (s.empty() ? "" : ",") + std::to_string(x);
  return s;
}
}  // namespace

std::vector<FrameworkTrait> framework_traits(const Framework& f) {
  const CpMergeBytes& cp = f.cp_merge;
  return {
      {"attention", kAttentionKernelNames[static_cast<int>(f.attention)]},
      {"materialized_attention", text(f.materialized_attention)},
      {"selective_is_op_sac", text(f.selective_is_op_sac)},
      {"fused_elementwise", text(f.fused_elementwise)},
      {"unfused_passes_per_norm", text(f.unfused_passes_per_norm)},
      {"overlap_grad_reduce", text(f.overlap_grad_reduce)},
      {"overlap_param_gather", text(f.overlap_param_gather)},
      {"reshard_after_forward", text(f.reshard_after_forward)},
      {"state_bytes (weights, gradients, optimizer)",
       text(f.state.weights) + ", " + text(f.state.gradients) + ", " + text(f.state.optimizer)},
      {"fsdp_unsharded_param_bytes", text(f.fsdp_unsharded_param_bytes)},
      {"pp_deferred_grad_bytes", text(f.pp_deferred_grad_bytes)},
      {"zero_stages", text(f.zero_stages)},
      {"offers_tp_overlap", text(f.offers_tp_overlap)},
      {"offers_ep_overlap", text(f.offers_ep_overlap)},
      {"offers_block_recompute", text(f.offers_block_recompute)},
      {"offers_recompute_modules", text(f.offers_recompute_modules)},
      {"pp_microbatches_default_to_pp", text(f.pp_microbatches_default_to_pp)},
      {"cross_entropy_bytes_per_logit", text(f.cross_entropy_bytes_per_logit)},
      {"logits_bytes_per_logit", text(f.logits_bytes_per_logit)},
      {"loss_parallel_cross_entropy_bytes_per_logit", text(f.loss_parallel_cross_entropy_bytes_per_logit)},
      {"loss_parallel_logits_bytes_per_logit", text(f.loss_parallel_logits_bytes_per_logit)},
      {"fused_moe_permutation", text(f.fused_moe_permutation)},
      {"fused_moe_router", text(f.fused_moe_router)},
      {"moe_gemm_per_expert", text(f.moe_gemm_per_expert)},
      {"offers_moe_max_nodes", text(f.offers_moe_max_nodes)},
      {"moe_probs_in_activation", text(f.moe_probs_in_activation)},
      {"moe_dispatchers", dispatchers_text(f.moe_dispatchers)},
      {"fp8_caches_weights", text(f.fp8_caches_weights)},
      {"fp8_saves_linear_inputs", text(f.fp8_saves_linear_inputs)},
      {"cp_merge_bytes (forward first, later; backward first, later)",
       text(cp.forward_first) + ", " + text(cp.forward_step) + "; " + text(cp.backward_first) + ", " +
           text(cp.backward_step)},
      {"cp_allgather_runs_ring_loop", text(f.cp_allgather_runs_ring_loop)},
      {"cp_grad_kv_bytes", text(f.cp_grad_kv_bytes)},
      {"optimizer_offload", f.optimizer_offload == OptimizerOffloadKind::megatron_hybrid ? "megatron_hybrid"
                            : f.optimizer_offload == OptimizerOffloadKind::zero_offload  ? "zero_offload"
                                                                                         : "none"},
      {"hsdp_zero_stages", text(f.hsdp_zero_stages)},
      {"offers_zeropp", text(f.offers_zeropp)},
      {"param_offload", f.param_offload == ParamOffloadKind::zero_infinity ? "zero_infinity"
                        : f.param_offload == ParamOffloadKind::fsdp_cpu    ? "fsdp_cpu"
                                                                           : "none"},
      {"offers_nvme_offload", text(f.offers_nvme_offload)},
      {"offers_activation_offload", text(f.offers_activation_offload)},
      {"zero3_gather", f.zero3_gather == Zero3Gather::deepspeed_modules ? "deepspeed_modules" : "fsdp_units"},
      {"fused_projections", text(f.fused_projections)},
      {"norm_saved_input_bytes", text(f.norm_saved_input_bytes)},
      {"eager_swiglu_saves_silu_output", text(f.eager_swiglu_saves_silu_output)},
      {"attention_keeps_fused_qkv", text(f.attention_keeps_fused_qkv)},
      {"lora_fused_qkv", text(f.lora_fused_qkv)},
      {"qlora_keeps_linear_inputs", text(f.qlora_keeps_linear_inputs)},
      {"qlora_quantizes_lm_head", text(f.qlora_quantizes_lm_head)},
      {"qlora_dequant_copies", text(f.qlora_dequant_copies)},
      {"offers_model_parallel", text(f.offers_model_parallel)},
      {"launcher", to_string(f.launcher)},
      {"defaults", framework_defaults_text(f)},
      {"fp8_library", f.fp8_library == Fp8Library::torchao ? "torchao" : "transformer_engine"},
      {"fp8_recipe", to_string(f.fp8_recipe)},
      {"fp8_param_gather", text(f.fp8_param_gather)},
      {"recipe_tp_comm_overlap", text(f.recipe_tp_comm_overlap)},
      {"offers_compile", text(f.offers_compile)},
      {"compiled_by_default", text(f.compiled_by_default)},
  };
}

}  // namespace shardplan
