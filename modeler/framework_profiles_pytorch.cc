// The PyTorch-native framework profiles: torchtitan, llm-foundry, Hugging Face Trainer + PEFT, Lit-GPT, other
// (declared in framework_profiles.h; each trait cites its source in Framework::sources).
#include "modeler/framework_profiles.h"

#include <algorithm>

namespace shardplan::profiles {

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
  // torchtitan 9dec370 models/llama/model.py apply_rotary_emb: xq.float() (read 2, write 4 bytes per element),
  // view_as_complex(...) * freqs_cis (read 4, write 4; the frequencies are a [seq, d/2] table), type_as(xq) (read
  // 4, write 2): 20 bytes per q/k element in eager mode. repeat_kv: unsqueeze/expand/reshape of K and V to
  // n_heads before F.scaled_dot_product_attention, a copy whenever n_kv_heads < n_heads.
  f.eager_rope_bytes_per_element = 20.0;
  f.gqa_repeats_kv = true;
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
  // Tensor parallelism as DTensor styles (9dec370 parallelize_llama.py apply_tp): PrepareModuleInput gathers each
  // norm's sequence-sharded output for wq/wk/wv and w1/w3, the LM head's ColwiseParallel(input_layouts=Shard(1))
  // the final norm's, and each mm saves the gathered, full-sequence input for its weight gradient.
  f.tp_saves_gathered_inputs = true;
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
  // The ring loop's own copies (_templated_ring_attention and its backward; read at pytorch@0123248a, 2025, and
  // in a stored late-2024 copy with _RotateMethod.PRE_ALL_GATHER, the same in these lines; the runs' 1963fc8 is
  // not stored): each pass makes K and V contiguous (torchtitan hands SDPA transposed views: read 2, write 2)
  // and concatenates them into the send buffer before each of the cp - 1 sends, torch.cat even under the
  // all-gather rotater (4 each). Backward, dK/dV: the fp32 buffer's zero fill (4), grad += step (4 + 2, 4),
  // torch.cat into the send buffer on every step (4, 4) and the final cast (4, 2): 28; on later steps the busiest
  // (last) rank adds into half the buffer through _partial_update, whose torch.cat rewrites all of it (5 + 8),
  // then the send buffer's cat (8): 21. The elements are the repeated heads' (gqa_repeats_kv). The last step's
  // dK/dV is waited after the loop (dkv_rotater.next_buffer()), exposed.
  f.cp_merge = {12.0, 38.0, 20.0, 10.0, 28.0, 21.0, 4.0, 4.0};
  // torchtitan@9dec370 config_manager.py: experimental.context_parallel_rotate_method defaults to "allgather"
  // (added in c97876e, Dec 2024), passed to torch's set_rotate_method. The all-gather rotater keeps the loop
  // above: its all-gather of cp x the local K/V (repeated heads, bf16) is issued before step 0's kernel and
  // waited at step 1, in forward and again in backward, whose dK/dV rotate by all-to-all as in the ring
  // (_templated_ring_attention_backward: dkv_rotater is always _RotateMethod.ALL_TO_ALL).
  f.cp_allgather_runs_ring_loop = true;
  f.recipe_cp_kind = CpKind::allgather;
  f.cp_grad_kv_bytes = 4.0;
  f.cp_last_grad_kv_exposed = true;
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
  // Which collectives AsyncTP overlaps is what Inductor's micro_pipeline_tp pass rewrites in each compiled graph
  // (torchtitan 9dec370 parallelize_llama.py sets torch._inductor.config._micro_pipeline_tp; the pass read at
  // pytorch@00122fb): an all-gather whose output is an mm's left operand, and a reduce-scatter whose input is an
  // mm's output with no other user. torchtitan's wq, wk, wv and w1, w3 are separate linears (models/llama/
  // model.py), so the dX reduce-scatter after the QKV (MLP-up) dgrad takes the sum of three (two) mm outputs, an
  // add the pattern does not match: a plain NCCL reduce-scatter whose output the norm's backward waits for at
  // once (Inductor's comm reordering, reorder_for_compute_comm_overlap, is off by default). The forward's four
  // collectives and the backward's gradient all-gathers before the wo and w2 dgrad are matched.
  f.tp_overlap_pairs_dx_reduce_scatter = false;
  // torchao Float8Linear, tensor-wise dynamic scaling (torchtitan 9dec370 docs/float8.md; config_manager.py
  // float8.scaling_type_* default "dynamic"); docs/float8.md launches with --float8.enable_fsdp_float8_all_gather
  // and train_configs/llama3_405b.toml sets it. training.compile is a store_true flag (eager by default).
  f.fp8_library = Fp8Library::torchao;
  f.fp8_recipe = Fp8Recipe::tensorwise;
  f.fp8_param_gather = true;
  f.offers_compile = true;
  f.compiled_by_default = false;
  f.sources = {"pytorch/torchtitan 9dec370 docs/float8.md, config_manager.py (float8, training.compile)",
               "pytorch/torchtitan 9dec370 torchtitan/models/llama/model.py (apply_rotary_emb, repeat_kv)",
               "pytorch/torchtitan docs/fsdp.md (FSDP2 MixedPrecisionPolicy, reshard_after_forward)",
               "PyTorch SDPA backends (flash = FlashAttention-2)", "pytorch/ao float8 README (dynamic scaling)",
               "torch FSDPParam.to_accumulated_grad_if_needed; torch.distributed.pipelining backward_maybe_with_nosync",
               "torchtitan 9dec370 pipeline_parallel.py (n_microbatches defaults to the pipeline degree)",
               "pytorch 0123248a torch/distributed/tensor/experimental/_attention.py (ring loop copies, dK/dV)",
               "torchtitan 9dec370 config_manager.py (context_parallel_rotate_method allgather); torch "
               "_attention.py _AllGatherRotater (late 2024, with set_rotate_method)"};
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
  // No tensor-parallel plan is stated for a generic stack: its linears are counted as saving the local sequence
  // shard, not torchtitan's DTensor gathered inputs.
  f.tp_saves_gathered_inputs = false;
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

}  // namespace shardplan::profiles
