// Megatron-DeepSpeed launch unit: a bash script that writes the DeepSpeed config JSON next to it and runs
// pretrain_gpt.py under torchrun with the Megatron-style plan flags, in the shape of Megatron-DeepSpeed's
// examples_deepspeed/pretrain_llama2_distributed.sh. Tensor, pipeline and sequence parallelism, recompute and the
// ZeRO stage are all in it; what the fork cannot express is refused by name.
#include <nlohmann/json.hpp>

#include "modeler/io/emit_common.h"
#include "modeler/optimizer.h"
#include "modeler/io/emit_script.h"

namespace shardplan::io::detail {

namespace {
constexpr const char* kTarget =
    "deepspeedai/Megatron-DeepSpeed 4efb479 pretrain_gpt.py with DeepSpeed 0.16+ (config JSON schema of "
    "deepspeedai/DeepSpeed edaa722)";
}

std::string emit_deepspeed(const EmitInput& in) {
  const Plan& p = in.estimate.plan;
  const ModelDesc& m = desc_of(in);
  const std::string what = detail::what(EmitFormat::deepspeed);
  if (in.moe && p.ep > 1)
    throw ConfigError(what +
                      "DeepSpeed sets expert parallelism in the model code (deepspeed.moe.layer.MoE ep_size), "
                      "not in its launcher; emit megatron, nemo or json for this plan (ep " +
                      std::to_string(p.ep) + ")");
  if (m.moe || m.mla)
    throw ConfigError(what + "Megatron-DeepSpeed's GPT model has no " + (m.moe ? "mixture-of-experts" : "MLA") +
                      " flags for " + m.name + "; emit megatron, nemo or json");
  if (p.vpp > 1)
    throw ConfigError(what + "DeepSpeed's pipeline engine runs no interleaved schedule (vpp " + std::to_string(p.vpp) +
                      "); emit megatron, nemo or json for this plan");
  if (m.position == PositionKind::alibi || m.sliding_window > 0 || m.attention_sinks)
    throw ConfigError(what + m.name + "'s attention (ALiBi, sliding windows or sinks) has no Megatron-DeepSpeed flag");
  if (p.recompute == Recompute::selective && p.recompute_modules != kRecomputeCoreAttn)
    throw ConfigError(what + "Megatron-DeepSpeed has no --recompute-modules (" +
                      recompute_modules_string(p.recompute_modules) + "); emit megatron or json");

  // DeepSpeed checks train_batch_size == micro x gradient_accumulation x data-parallel world size
  // (deepspeed/runtime/config.py _batch_assertion), where the data-parallel size is world / (tp x pp).
  const int accumulation = p.global_batch / (p.micro_batch * p.dp);
  nlohmann::json ds;
  ds["train_batch_size"] = p.global_batch;
  ds["train_micro_batch_size_per_gpu"] = p.micro_batch;
  ds["gradient_accumulation_steps"] = accumulation;
  ds["zero_optimization"] = {{"stage", p.zero}, {"overlap_comm", true}, {"contiguous_gradients", true}};
  ds["bf16"] = {{"enabled", p.precision == Dtype::bf16}};
  ds["fp16"] = {{"enabled", p.precision == Dtype::fp16}};
  ds["steps_per_print"] = 1;
  const std::string preamble =
      "DS_CONFIG=${DS_CONFIG:-./ds_config.json}\ncat > \"$DS_CONFIG\" <<'EOF'\n" + ds.dump(2) + "\nEOF\n";

  ScriptArgs model, plan, data;
  model.add("--num-layers", m.layers);
  model.add("--hidden-size", m.hidden);
  model.add("--ffn-hidden-size", m.ffn_hidden);
  model.add("--num-attention-heads", m.heads);
  if (m.kv_heads != m.heads) model.add("--num-key-value-heads", m.kv_heads);
  model.add("--kv-channels", m.head_dim);
  model.add("--seq-length", p.seq_len);
  model.add("--max-position-embeddings", std::max(p.seq_len, m.max_position));
  if (m.position == PositionKind::rope) model.add("--use-rotary-position-embeddings");
  model.add("--normalization", m.norm == NormKind::rmsnorm ? "rmsnorm" : "layernorm");
  if (m.gated_mlp) model.add("--swiglu");
  if (!m.tied_embeddings) model.add("--untie-embeddings-and-output-weights");
  if (!m.linear_bias) model.add("--disable-bias-linear");
  model.add("--use-flash-attn-v2");  // the profile's attention kernel

  plan.add("--tensor-model-parallel-size", p.tp);
  plan.add("--pipeline-model-parallel-size", p.pp);
  if (p.pp == 1) plan.add("--no-pipeline-parallel");  // else the pipeline engine runs, which refuses ZeRO-2/3
  if (p.sequence_parallel && p.tp > 1) plan.add("--sequence-parallel");
  plan.add("--micro-batch-size", p.micro_batch);
  plan.add("--global-batch-size", p.global_batch);
  plan.add("--deepspeed");
  plan.add("--deepspeed_config", "$DS_CONFIG");
  plan.add("--zero-stage", p.zero);
  if (p.recompute == Recompute::selective) plan.add("--recompute-granularity", "selective");
  if (p.recompute == Recompute::full) {
    plan.add("--recompute-granularity", "full");
    plan.add("--recompute-method", p.recompute_layers > 0 ? "block" : "uniform");
    plan.add("--recompute-num-layers", p.recompute_layers > 0 ? p.recompute_layers : 1);
    plan.add("--deepspeed-activation-checkpointing");
  }
  // Megatron-DeepSpeed's Megatron arguments: --optimizer adam (AdamW) or sgd, --sgd-momentum (default 0.9).
  if (p.finetune.optimizer == Optimizer::sgd || p.finetune.optimizer == Optimizer::sgd_momentum) {
    plan.add("--optimizer", "sgd");
    plan.add("--sgd-momentum", p.finetune.optimizer == Optimizer::sgd ? "0" : "0.9");
  } else if (p.finetune.optimizer != Optimizer::adamw) {
    throw ConfigError(what + "Megatron-DeepSpeed offers adam and sgd, not " +
                      to_string(p.finetune.optimizer));
  }
  plan.add(p.precision == Dtype::fp16 ? "--fp16" : "--bf16");

  data.add("--data-path", "${DATA_PATH:?set DATA_PATH to an indexed dataset prefix}");
  data.add("--tokenizer-type", "GPTSentencePieceTokenizer");
  data.add("--tokenizer-model", "${TOKENIZER_MODEL:?set TOKENIZER_MODEL to a SentencePiece model}");
  data.add("--split", "949,50,1");
  data.add("--train-iters", "${TRAIN_ITERS:-100}");
  data.add("--lr", "1.5e-4");
  data.add("--min-lr", "1.5e-5");
  data.add("--lr-decay-style", "cosine");
  data.add("--log-interval", 1);
  const std::string env = p.tp > 1 ? "export CUDA_DEVICE_MAX_CONNECTIONS=1\n" : "";
  return bash_script(header(in, "#", kTarget), in.system, env, "${MEGATRON_DEEPSPEED:-.}/pretrain_gpt.py",
                     {{"MODEL_ARGS", model}, {"PLAN_ARGS", plan}, {"DATA_ARGS", data}}, preamble);
}

}  // namespace shardplan::io::detail
