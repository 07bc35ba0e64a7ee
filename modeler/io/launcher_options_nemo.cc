// Megatron-Bridge ConfigContainer paths the NeMo recipe override YAML sets.
#include "modeler/io/launcher_options.h"

namespace shardplan::io::detail {

namespace {
constexpr const char* kBridge = "NVIDIA-NeMo/Megatron-Bridge src/megatron/bridge/training/config.py (067f987)";
constexpr const char* kCore = "Megatron-Core TransformerConfig / ModelParallelConfig field via GPTModelProvider";
constexpr const char* kMixed = "NVIDIA-NeMo/Megatron-Bridge src/megatron/bridge/training/mixed_precision.py (067f987)";
constexpr const char* kComm = "NVIDIA-NeMo/Megatron-Bridge src/megatron/bridge/training/comm_overlap.py (067f987)";
}  // namespace

void append_nemo_options(std::vector<LauncherOption>* out) {
  const std::vector<LauncherOption> v = {
      {"nemo", "model.num_layers", kCore},
      {"nemo", "model.hidden_size", kCore},
      {"nemo", "model.ffn_hidden_size", kCore},
      {"nemo", "model.num_attention_heads", kCore},
      {"nemo", "model.num_query_groups", kCore},
      {"nemo", "model.kv_channels", kCore},
      {"nemo", "model.vocab_size", kBridge},
      {"nemo", "model.seq_length", kBridge},
      {"nemo", "model.normalization", kCore},
      {"nemo", "model.gated_linear_unit", kCore},
      {"nemo", "model.position_embedding_type", kBridge},
      {"nemo", "model.share_embeddings_and_output_weights", kBridge},
      {"nemo", "model.add_bias_linear", kCore},
      {"nemo", "model.qk_layernorm", kCore},
      {"nemo", "model.num_moe_experts", kCore},
      {"nemo", "model.moe_router_topk", kCore},
      {"nemo", "model.moe_ffn_hidden_size", kCore},
      {"nemo", "model.tensor_model_parallel_size", kCore},
      {"nemo", "model.pipeline_model_parallel_size", kCore},
      {"nemo", "model.virtual_pipeline_model_parallel_size", kCore},
      {"nemo", "model.pipeline_model_parallel_layout", kCore},
      {"nemo", "model.context_parallel_size", kCore},
      {"nemo", "model.cp_comm_type", kCore},
      {"nemo", "model.sequence_parallel", kCore},
      {"nemo", "model.expert_model_parallel_size", kCore},
      {"nemo", "model.expert_tensor_parallel_size", kCore},
      {"nemo", "model.moe_expert_capacity_factor", kCore},
      {"nemo", "model.overlap_moe_expert_parallel_comm", kCore},
      {"nemo", "model.recompute_granularity", kCore},
      {"nemo", "model.recompute_method", kCore},
      {"nemo", "model.recompute_num_layers", kCore},
      {"nemo", "model.recompute_modules", kCore},
      {"nemo", "train.micro_batch_size", kBridge},
      {"nemo", "train.global_batch_size", kBridge},
      {"nemo", "dataset.sequence_length", kBridge},
      {"nemo", "ddp.use_distributed_optimizer", kBridge},
      {"nemo", "ddp.overlap_grad_reduce", kBridge},
      {"nemo", "ddp.overlap_param_gather", kBridge},
      {"nemo", "optimizer.use_distributed_optimizer", kBridge},
      {"nemo", "dist.use_torch_fsdp2", kBridge},
      {"nemo", "comm_overlap.tp_comm_overlap", kComm},
      {"nemo", "mixed_precision.bf16", kMixed},
      {"nemo", "mixed_precision.fp16", kMixed},
      {"nemo", "mixed_precision.params_dtype", kMixed},
      {"nemo", "mixed_precision.fp8", kMixed},
      {"nemo", "mixed_precision.fp8_recipe", kMixed},
      {"nemo", "mixed_precision.fp4", kMixed},
      {"nemo", "mixed_precision.fp4_recipe", kMixed},
  };
  out->insert(out->end(), v.begin(), v.end());
}

}  // namespace shardplan::io::detail
