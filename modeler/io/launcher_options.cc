#include "modeler/io/launcher_options.h"

namespace shardplan::io {

namespace {

// Sources (checked against the frameworks' code):
constexpr const char* kMegatron = "NVIDIA/Megatron-LM megatron/training/arguments.py (commit 307dcf37)";
constexpr const char* kTitan = "pytorch/torchtitan torchtitan/config/job_config.py (commit 000204a4)";
constexpr const char* kDeepSpeed = "DeepSpeed configuration JSON, deepspeed.ai/docs/config-json";
constexpr const char* kNemo = "NVIDIA/NeMo examples/nlp/language_modeling/conf/megatron_gpt_config.yaml";

}  // namespace

const std::vector<LauncherOption>& launcher_options() {
  static const std::vector<LauncherOption> options = {
      {"megatron", "--tensor-model-parallel-size", kMegatron},
      {"megatron", "--pipeline-model-parallel-size", kMegatron},
      {"megatron", "--num-layers-per-virtual-pipeline-stage", kMegatron},
      {"megatron", "--context-parallel-size", kMegatron},
      {"megatron", "--cp-comm-type", kMegatron},  // p2p, a2a, allgather, a2a+p2p
      {"megatron", "--sequence-parallel", kMegatron},
      {"megatron", "--use-distributed-optimizer", kMegatron},
      {"megatron", "--use-torch-fsdp2", kMegatron},
      {"megatron", "--micro-batch-size", kMegatron},
      {"megatron", "--global-batch-size", kMegatron},
      {"megatron", "--seq-length", kMegatron},
      {"megatron", "--recompute-granularity", kMegatron},  // full, selective
      {"megatron", "--recompute-method", kMegatron},       // uniform, block
      {"megatron", "--recompute-num-layers", kMegatron},
      // core_attn, moe_act, layernorm, mla_up_proj, mlp, moe, shared_experts (nargs *)
      {"megatron", "--recompute-modules", kMegatron},
      {"megatron", "--bf16", kMegatron},
      {"megatron", "--fp16", kMegatron},
      {"megatron", "--fp8-format", kMegatron},  // e4m3, hybrid
      {"megatron", "--overlap-grad-reduce", kMegatron},
      {"megatron", "--overlap-param-gather", kMegatron},
      {"megatron", "--tp-comm-overlap", kMegatron},
      {"megatron", "--expert-model-parallel-size", kMegatron},
      {"megatron", "--expert-tensor-parallel-size", kMegatron},
      {"megatron", "--moe-expert-capacity-factor", kMegatron},
      {"megatron", "--overlap-moe-expert-parallel-comm", kMegatron},
      {"torchtitan", "parallelism.data_parallel_replicate_degree", kTitan},
      {"torchtitan", "parallelism.data_parallel_shard_degree", kTitan},
      {"torchtitan", "parallelism.fsdp_reshard_after_forward", kTitan},  // default, always, never
      {"torchtitan", "parallelism.tensor_parallel_degree", kTitan},
      {"torchtitan", "parallelism.enable_async_tensor_parallel", kTitan},
      {"torchtitan", "parallelism.pipeline_parallel_degree", kTitan},
      {"torchtitan", "parallelism.pipeline_parallel_schedule", kTitan},  // 1F1B, Interleaved1F1B, ...
      {"torchtitan", "parallelism.pipeline_parallel_layers_per_stage", kTitan},
      {"torchtitan", "parallelism.pipeline_parallel_microbatch_size", kTitan},
      {"torchtitan", "parallelism.context_parallel_degree", kTitan},
      {"torchtitan", "parallelism.context_parallel_rotate_method", kTitan},  // allgather, alltoall
      {"torchtitan", "parallelism.expert_parallel_degree", kTitan},
      {"torchtitan", "parallelism.expert_tensor_parallel_degree", kTitan},
      {"torchtitan", "training.local_batch_size", kTitan},
      {"torchtitan", "training.global_batch_size", kTitan},
      {"torchtitan", "training.seq_len", kTitan},
      {"torchtitan", "training.mixed_precision_param", kTitan},  // bfloat16, float32
      {"torchtitan", "activation_checkpoint.mode", kTitan},     // selective, full, none
      {"torchtitan", "model.converters", kTitan},               // "float8"
      {"deepspeed", "train_batch_size", kDeepSpeed},
      {"deepspeed", "train_micro_batch_size_per_gpu", kDeepSpeed},
      {"deepspeed", "gradient_accumulation_steps", kDeepSpeed},
      {"deepspeed", "zero_optimization.stage", kDeepSpeed},
      {"deepspeed", "zero_optimization.overlap_comm", kDeepSpeed},
      {"deepspeed", "zero_optimization.contiguous_gradients", kDeepSpeed},
      {"deepspeed", "bf16.enabled", kDeepSpeed},
      {"deepspeed", "fp16.enabled", kDeepSpeed},
      {"nemo", "trainer.num_nodes", kNemo},
      {"nemo", "trainer.devices", kNemo},
      {"nemo", "trainer.precision", kNemo},  // bf16-mixed, 16-mixed
      {"nemo", "model.tensor_model_parallel_size", kNemo},
      {"nemo", "model.pipeline_model_parallel_size", kNemo},
      {"nemo", "model.virtual_pipeline_model_parallel_size", kNemo},
      {"nemo", "model.context_parallel_size", kNemo},
      {"nemo", "model.sequence_parallel", kNemo},
      {"nemo", "model.micro_batch_size", kNemo},
      {"nemo", "model.global_batch_size", kNemo},
      {"nemo", "model.encoder_seq_length", kNemo},
      {"nemo", "model.activations_checkpoint_granularity", kNemo},  // selective, full
      {"nemo", "model.activations_checkpoint_method", kNemo},       // uniform, block
      {"nemo", "model.activations_checkpoint_num_layers", kNemo},
      {"nemo", "model.fp8", kNemo},
      {"nemo", "model.fp8_hybrid", kNemo},
      {"nemo", "model.ub_tp_comm_overlap", kNemo},
      {"nemo", "model.expert_model_parallel_size", kNemo},
      {"nemo", "model.expert_tensor_parallel_size", kNemo},
      {"nemo", "model.moe_expert_capacity_factor", kNemo},
      {"nemo", "model.optim.name", kNemo},  // fused_adam, distributed_fused_adam
  };
  return options;
}

bool is_launcher_option(const std::string& format, const std::string& name) {
  for (const LauncherOption& o : launcher_options())
    if (format == o.format && name == o.name) return true;
  return false;
}

}  // namespace shardplan::io
