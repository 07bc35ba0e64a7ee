// Megatron-LM flags. Most are generated from Megatron-Core's config dataclasses (field foo_bar -> --foo-bar,
// megatron/training/argument_utils.py); the rest are argparse definitions in megatron/training/arguments.py.
#include "modeler/io/launcher_options.h"

namespace shardplan::io::detail {

namespace {
constexpr const char* kArgs = "NVIDIA/Megatron-LM megatron/training/arguments.py (d98e8a6)";
constexpr const char* kTransformer =
    "NVIDIA/Megatron-LM megatron/core/transformer/transformer_config.py, generated flag (d98e8a6)";
constexpr const char* kParallel = "NVIDIA/Megatron-LM megatron/core/model_parallel_config.py, generated flag (d98e8a6)";
}  // namespace

void append_megatron_options(std::vector<LauncherOption>* out) {
  const std::vector<LauncherOption> v = {
      // model architecture
      {"megatron", "--use-mcore-models", kArgs},
      {"megatron", "--num-layers", kTransformer},
      {"megatron", "--hidden-size", kTransformer},
      {"megatron", "--ffn-hidden-size", kTransformer},
      {"megatron", "--num-attention-heads", kTransformer},
      {"megatron", "--group-query-attention", kArgs},
      {"megatron", "--num-query-groups", kTransformer},
      {"megatron", "--kv-channels", kTransformer},
      {"megatron", "--seq-length", kArgs},
      {"megatron", "--max-position-embeddings", kArgs},
      {"megatron", "--position-embedding-type", kArgs},  // learned_absolute, rope, none, ...
      {"megatron", "--normalization", kTransformer},     // LayerNorm, RMSNorm
      {"megatron", "--swiglu", kArgs},
      {"megatron", "--untie-embeddings-and-output-weights", kArgs},
      {"megatron", "--disable-bias-linear", kArgs},
      {"megatron", "--add-qkv-bias", kTransformer},
      {"megatron", "--qk-layernorm", kTransformer},
      {"megatron", "--multi-latent-attention", kTransformer},
      {"megatron", "--q-lora-rank", kArgs},
      {"megatron", "--kv-lora-rank", kArgs},
      {"megatron", "--qk-head-dim", kArgs},
      {"megatron", "--qk-pos-emb-head-dim", kArgs},
      {"megatron", "--v-head-dim", kArgs},
      {"megatron", "--num-experts", kArgs},
      {"megatron", "--moe-layer-freq", kArgs},
      {"megatron", "--moe-router-topk", kTransformer},
      {"megatron", "--moe-ffn-hidden-size", kTransformer},
      {"megatron", "--moe-shared-expert-intermediate-size", kTransformer},
      {"megatron", "--moe-grouped-gemm", kTransformer},
      {"megatron", "--moe-token-dispatcher-type", kTransformer},  // allgather, alltoall, flex
      // plan
      {"megatron", "--tensor-model-parallel-size", kParallel},
      {"megatron", "--pipeline-model-parallel-size", kParallel},
      {"megatron", "--num-layers-per-virtual-pipeline-stage", kArgs},
      {"megatron", "--pipeline-model-parallel-layout",
       kTransformer},  // "E|t*4|...|L" (pipeline_parallel_layer_layout.py)
      {"megatron", "--mtp-num-layers", kTransformer},  // TransformerConfig.mtp_num_layers
      {"megatron", "--context-parallel-size", kParallel},
      {"megatron", "--cp-comm-type", kTransformer},  // p2p, all_gather, a2a, a2a+p2p
      {"megatron", "--sequence-parallel", kParallel},
      {"megatron", "--tp-comm-overlap", kParallel},
      {"megatron", "--expert-model-parallel-size", kParallel},
      {"megatron", "--expert-tensor-parallel-size", kParallel},
      {"megatron", "--moe-expert-capacity-factor", kTransformer},
      {"megatron", "--overlap-moe-expert-parallel-comm", kTransformer},
      {"megatron", "--moe-pad-expert-input-to-capacity", kTransformer},
      {"megatron", "--moe-flex-dispatcher-backend", kTransformer},
      {"megatron", "--moe-router-num-groups", kTransformer},
      {"megatron", "--moe-router-group-topk", kTransformer},
      {"megatron", "--use-distributed-optimizer", kArgs},
      {"megatron", "--use-torch-fsdp2", kArgs},
      {"megatron", "--no-gradient-accumulation-fusion", kArgs},
      {"megatron", "--ckpt-format", kArgs},  // torch_dist, torch_dcp, ...
      {"megatron", "--overlap-grad-reduce", kArgs},
      {"megatron", "--overlap-param-gather", kArgs},
      {"megatron", "--micro-batch-size", kArgs},
      {"megatron", "--global-batch-size", kArgs},
      {"megatron", "--recompute-granularity", kTransformer},  // full, selective
      {"megatron", "--recompute-method", kTransformer},       // uniform, block
      {"megatron", "--recompute-num-layers", kTransformer},
      // core_attn, moe_act, layernorm, mla_up_proj, mlp, moe, shared_experts (nargs *)
      {"megatron", "--recompute-modules", kTransformer},
      {"megatron", "--bf16", kArgs},
      {"megatron", "--fp16", kArgs},
      {"megatron", "--fp8-format", kArgs},         // e4m3, hybrid
      {"megatron", "--fp8-recipe", kTransformer},  // tensorwise, delayed, mxfp8, blockwise
      {"megatron", "--fp4-format", kArgs},         // e2m1
      {"megatron", "--fp4-recipe", kTransformer},  // nvfp4
      // data and schedule of the mock run
      {"megatron", "--mock-data", kArgs},
      {"megatron", "--tokenizer-type", kArgs},  // NullTokenizer
      {"megatron", "--vocab-size", kArgs},
      {"megatron", "--make-vocab-size-divisible-by", kArgs},
      {"megatron", "--train-iters", kArgs},
      {"megatron", "--lr", kArgs},
      {"megatron", "--min-lr", kArgs},
      {"megatron", "--lr-decay-style", kArgs},
      {"megatron", "--log-interval", kArgs},
  };
  out->insert(out->end(), v.begin(), v.end());
}

}  // namespace shardplan::io::detail
