// The Megatron family of framework profiles: Megatron-LM, NeMo / Megatron-Bridge and their releases,
// Megatron-DeepSpeed (declared in framework_profiles.h; each trait cites its source in Framework::sources).
#include "modeler/framework_profiles.h"

#include <algorithm>

namespace shardplan::profiles {

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
  // --mtp-num-layers and --pipeline-model-parallel-layout: multi_token_prediction.py and
  // pipeline_parallel_layer_layout.py are in Megatron-LM from core_v0.12.0 (2025-05) on.
  f.offers_mtp_and_layout = true;
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
  // Megatron-LM core_v0.14.0 megatron/training/arguments.py: gradient_accumulation_fusion on unless
  // --no-gradient-accumulation-fusion; Megatron-Bridge a2884419 scripts/performance/run_script.py sets it for every
  // performance run. TE then computes each wgrad into the parameter's fp32 main_grad (GroupedLinear: one cuBLAS
  // GEMM per expert with out = main_grads[i], out_dtype fp32, accumulate on all but the first micro-batch).
  f.wgrad_into_fp32_main_grad = true;
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
  // The 24.x containers ship Transformer Engine 1.x (the NeMo 24.07 performance summary's runs: TE 1.7-1.9, whose
  // linear.py / layernorm_linear.py quantize alike); its modules cast where te_v1_layer_quantize says.
  f.fp8_library = Fp8Library::transformer_engine_v1;
  f.offers_mtp_and_layout = false;  // 24.x ships Megatron-Core before core_v0.12.0 (MTP, pipeline layouts)
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
  f.offers_mtp_and_layout = false;
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
  f.offers_mtp_and_layout = false;
  f.moe_dispatchers = {MoeDispatcher::alltoall};  // DeepSpeed-MoE: capacity-padded all-to-all (deepspeed/moe)
  f.offers_moe_max_nodes = false;                 // DeepSpeed-MoE's top-k gating has no node groups
  f.moe_probs_in_activation = false;  // DeepSpeed-MoE combines with a probability-weighted einsum
  // DeepSpeed's engine owns the gradients (its bf16/fp16 optimizers accumulate .grad outside the GEMM); the fork's
  // fused accumulation into main_grad is not read here, so its wgrads keep the plain 16-bit output.
  f.wgrad_into_fp32_main_grad = false;
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

}  // namespace shardplan::profiles
