// Megatron-DeepSpeed's flags and the DeepSpeed config JSON keys its launch script writes.
#include "modeler/io/launcher_options.h"

namespace shardplan::io::detail {

namespace {
constexpr const char* kMds = "deepspeedai/Megatron-DeepSpeed megatron/arguments.py (4efb479)";
constexpr const char* kMdsExample =
    "deepspeedai/Megatron-DeepSpeed examples_deepspeed/pretrain_llama2_distributed.sh (4efb479)";
constexpr const char* kDs = "deepspeedai/DeepSpeed deepspeed/runtime/config.py and zero/config.py (edaa722)";
}  // namespace

void append_deepspeed_options(std::vector<LauncherOption>* out) {
  const std::vector<LauncherOption> v = {
      {"megatron-deepspeed", "--num-layers", kMds},
      {"megatron-deepspeed", "--hidden-size", kMds},
      {"megatron-deepspeed", "--ffn-hidden-size", kMds},
      {"megatron-deepspeed", "--num-attention-heads", kMds},
      {"megatron-deepspeed", "--num-key-value-heads", kMds},
      {"megatron-deepspeed", "--kv-channels", kMds},
      {"megatron-deepspeed", "--seq-length", kMds},
      {"megatron-deepspeed", "--max-position-embeddings", kMds},
      {"megatron-deepspeed", "--use-rotary-position-embeddings", kMds},
      {"megatron-deepspeed", "--normalization", kMds},  // layernorm, rmsnorm
      {"megatron-deepspeed", "--swiglu", kMds},
      {"megatron-deepspeed", "--untie-embeddings-and-output-weights", kMds},
      {"megatron-deepspeed", "--disable-bias-linear", kMds},
      {"megatron-deepspeed", "--use-flash-attn-v2", kMds},
      {"megatron-deepspeed", "--tensor-model-parallel-size", kMds},
      {"megatron-deepspeed", "--pipeline-model-parallel-size", kMds},
      {"megatron-deepspeed", "--no-pipeline-parallel", kMds},
      {"megatron-deepspeed", "--sequence-parallel", kMds},
      {"megatron-deepspeed", "--micro-batch-size", kMds},
      {"megatron-deepspeed", "--global-batch-size", kMds},
      {"megatron-deepspeed", "--deepspeed", kMdsExample},         // deepspeed.add_config_arguments
      {"megatron-deepspeed", "--deepspeed_config", kMdsExample},  // deepspeed.add_config_arguments
      {"megatron-deepspeed", "--zero-stage", kMds},
      {"megatron-deepspeed", "--recompute-granularity", kMds},
      {"megatron-deepspeed", "--recompute-method", kMds},
      {"megatron-deepspeed", "--recompute-num-layers", kMds},
      {"megatron-deepspeed", "--deepspeed-activation-checkpointing", kMds},
      {"megatron-deepspeed", "--bf16", kMds},
      {"megatron-deepspeed", "--fp16", kMds},
      {"megatron-deepspeed", "--data-path", kMds},
      {"megatron-deepspeed", "--tokenizer-type", kMds},
      {"megatron-deepspeed", "--tokenizer-model", kMds},
      {"megatron-deepspeed", "--split", kMds},
      {"megatron-deepspeed", "--train-iters", kMds},
      {"megatron-deepspeed", "--lr", kMds},
      {"megatron-deepspeed", "--min-lr", kMds},
      {"megatron-deepspeed", "--lr-decay-style", kMds},
      {"megatron-deepspeed", "--log-interval", kMds},
      {"deepspeed", "train_batch_size", kDs},
      {"deepspeed", "train_micro_batch_size_per_gpu", kDs},
      {"deepspeed", "gradient_accumulation_steps", kDs},
      {"deepspeed", "steps_per_print", kDs},
      {"deepspeed", "zero_optimization.stage", kDs},
      {"deepspeed", "zero_optimization.overlap_comm", kDs},
      {"deepspeed", "zero_optimization.contiguous_gradients", kDs},
      {"deepspeed", "bf16.enabled", kDs},
      {"deepspeed", "fp16.enabled", kDs},
  };
  out->insert(out->end(), v.begin(), v.end());
}

}  // namespace shardplan::io::detail
