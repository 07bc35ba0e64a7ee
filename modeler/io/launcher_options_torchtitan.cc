// torchtitan keys: the v0.2.2 TOML job config and main's Python Trainer.Config attribute paths.
#include "modeler/io/launcher_options.h"

namespace shardplan::io::detail {

namespace {
constexpr const char* kToml = "pytorch/torchtitan v0.2.2 torchtitan/config/job_config.py";
constexpr const char* kMain = "pytorch/torchtitan main b5bcd76 torchtitan/config/configs.py, trainer.py";
}  // namespace

void append_torchtitan_options(std::vector<LauncherOption>* out) {
  const std::vector<LauncherOption> v = {
      {"torchtitan-toml", "model.name", kToml},
      {"torchtitan-toml", "model.flavor", kToml},
      {"torchtitan-toml", "model.converters", kToml},  // quantize.linear.float8, quantize.linear.mx
      {"torchtitan-toml", "parallelism.data_parallel_replicate_degree", kToml},
      {"torchtitan-toml", "parallelism.data_parallel_shard_degree", kToml},
      {"torchtitan-toml", "parallelism.fsdp_reshard_after_forward", kToml},  // default, always, never
      {"torchtitan-toml", "parallelism.tensor_parallel_degree", kToml},
      {"torchtitan-toml", "parallelism.enable_async_tensor_parallel", kToml},
      {"torchtitan-toml", "parallelism.pipeline_parallel_degree", kToml},
      {"torchtitan-toml", "parallelism.pipeline_parallel_schedule", kToml},  // 1F1B, Interleaved1F1B, ...
      {"torchtitan-toml", "parallelism.pipeline_parallel_microbatch_size", kToml},
      {"torchtitan-toml", "parallelism.module_fqns_per_model_part", kToml},
      {"torchtitan-toml", "parallelism.context_parallel_degree", kToml},
      {"torchtitan-toml", "parallelism.context_parallel_rotate_method", kToml},  // allgather, alltoall
      {"torchtitan-toml", "parallelism.expert_parallel_degree", kToml},
      {"torchtitan-toml", "parallelism.expert_tensor_parallel_degree", kToml},
      {"torchtitan-toml", "training.local_batch_size", kToml},
      {"torchtitan-toml", "training.global_batch_size", kToml},
      {"torchtitan-toml", "training.seq_len", kToml},
      {"torchtitan-toml", "training.mixed_precision_param", kToml},             // bfloat16, float32
      {"torchtitan-toml", "activation_checkpoint.mode", kToml},                 // selective, full, none
      {"torchtitan-toml", "activation_checkpoint.selective_ac_option", kToml},  // "op" or a layer period
      {"torchtitan-toml", "compile.enable", kToml},
      {"torchtitan-toml", "compile.components", kToml},
      {"torchtitan-toml", "quantize.linear.float8.recipe_name", kToml},  // tensorwise, rowwise, rowwise_with_gw_hp
      {"torchtitan-toml", "quantize.linear.mx.recipe_name", kToml},      // mxfp8_cublas, ...
      {"torchtitan", "parallelism.data_parallel_replicate_degree", kMain},
      {"torchtitan", "parallelism.data_parallel_shard_degree", kMain},
      {"torchtitan", "parallelism.fsdp_reshard_after_forward", kMain},
      {"torchtitan", "parallelism.tensor_parallel_degree", kMain},
      {"torchtitan", "parallelism.enable_sequence_parallel", kMain},
      {"torchtitan", "parallelism.pipeline_parallel_degree", kMain},
      {"torchtitan", "parallelism.pipeline_parallel_schedule", kMain},
      {"torchtitan", "parallelism.num_pp_microbatches", kMain},
      {"torchtitan", "parallelism.module_fqns_per_model_part", kMain},
      {"torchtitan", "parallelism.context_parallel_degree", kMain},
      {"torchtitan", "parallelism.expert_parallel_degree", kMain},
      {"torchtitan", "training.num_tokens_per_microbatch_per_dp_rank", kMain},
      {"torchtitan", "training.num_tokens_per_train_step", kMain},
      {"torchtitan", "training.max_context_length", kMain},
      {"torchtitan", "training.mixed_precision_param", kMain},
      {"torchtitan", "activation_checkpoint", kMain},  // SelectiveAC.Config(), FullAC.Config() or None
      {"torchtitan", "compile", kMain},                // CompileConfig(enable, enable_async_tensor_parallel, ...)
      {"torchtitan", "model_spec", kMain},             // model_registry(flavor, converters=[...])
  };
  out->insert(out->end(), v.begin(), v.end());
}

}  // namespace shardplan::io::detail
