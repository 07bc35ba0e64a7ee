// Megatron-LM launch unit: a bash script running pretrain_gpt.py under torchrun, in the shape of Megatron-LM's
// examples/llama/train_llama3_8b_h100_fp8.sh (mock data, so it runs without a dataset). Flag names are Megatron-LM
// main at d98e8a6 (launcher_options_megatron.cc); the plan reaches the script whole or not at all.
#include <algorithm>
#include <sstream>

#include "modeler/io/emit_common.h"
#include "modeler/io/emit_script.h"
#include "modeler/moe_dispatch.h"
#include "modeler/optimizer.h"
#include "modeler/pipeline_layout.h"

namespace shardplan::io::detail {

namespace {

int desc_experts(const EmitInput& in) { return in.desc && in.desc->moe ? in.desc->moe->experts : 0; }

constexpr const char* kTarget = "Megatron-LM main d98e8a6 (core_r0.15 era) pretrain_gpt.py, Transformer Engine 2.x";

}  // namespace

void megatron_model_args(const ModelDesc& m, const Plan& p, EmitFormat f, ScriptArgs* a) {
  const std::string what = detail::what(f);
  if (m.position == PositionKind::alibi)
    throw ConfigError(what + "Megatron-LM has no ALiBi position embedding (" + m.name +
                      "); --emit json writes the plan");
  if (m.sliding_window > 0 || m.attention_sinks)
    throw ConfigError(what + m.name +
                      " uses sliding-window attention or attention sinks, which this emitter does "
                      "not express (Megatron-LM --window-size per layer pattern); --emit json writes the plan");
  if (m.qk_norm == QkNorm::full)
    throw ConfigError(what + m.name +
                      " normalises q and k over their full width (OLMo-2), which --qk-layernorm (per head) does not "
                      "express; --emit json writes the plan");
  a->add("--num-layers", m.layers);
  a->add("--hidden-size", m.hidden);
  a->add("--ffn-hidden-size", m.ffn_hidden);
  a->add("--num-attention-heads", m.heads);
  if (m.kv_heads != m.heads) {
    a->add("--group-query-attention");
    a->add("--num-query-groups", m.kv_heads);
  }
  a->add("--kv-channels", m.head_dim);
  a->add("--seq-length", p.seq_len);
  a->add("--max-position-embeddings", std::max(p.seq_len, m.max_position));
  a->add("--position-embedding-type", m.position == PositionKind::rope      ? "rope"
                                      : m.position == PositionKind::learned ? "learned_absolute"
                                                                            : "none");
  a->add("--normalization", m.norm == NormKind::rmsnorm ? "RMSNorm" : "LayerNorm");
  if (m.gated_mlp) a->add("--swiglu");
  if (!m.tied_embeddings) a->add("--untie-embeddings-and-output-weights");
  if (!m.linear_bias) a->add("--disable-bias-linear");
  if (m.qkv_bias && !m.linear_bias) a->add("--add-qkv-bias");
  // Per-head QK-norm (Qwen3): TransformerConfig.qk_layernorm (d98e8a6), one norm of kv_channels per head.
  if (m.qk_norm == QkNorm::per_head) a->add("--qk-layernorm");
  if (m.mla) {
    a->add("--multi-latent-attention");
    if (m.mla->q_lora_rank > 0) a->add("--q-lora-rank", m.mla->q_lora_rank);
    a->add("--kv-lora-rank", m.mla->kv_lora_rank);
    a->add("--qk-head-dim", m.mla->qk_nope_head_dim);
    a->add("--qk-pos-emb-head-dim", m.mla->qk_rope_head_dim);
    a->add("--v-head-dim", m.mla->v_head_dim);
  }
  if (m.moe) {
    const MoeDesc& e = *m.moe;
    a->add("--num-experts", e.experts);
    a->add("--moe-router-topk", e.top_k);
    a->add("--moe-ffn-hidden-size", e.expert_ffn_hidden);
    if (e.shared_experts > 0)
      a->add("--moe-shared-expert-intermediate-size",
             e.shared_experts * (e.shared_expert_ffn_hidden > 0 ? e.shared_expert_ffn_hidden : e.expert_ffn_hidden));
    if (e.dense_layers > 0)  // a Python list expression, Megatron's moe_freq_type
      a->add("--moe-layer-freq",
             "([0]*" + std::to_string(e.dense_layers) + "+[1]*" + std::to_string(m.layers - e.dense_layers) + ")");
    a->add("--moe-grouped-gemm");
    // --moe-token-dispatcher-type is the plan's (emit_megatron below): the dispatcher is a plan choice.
  }
}

std::string emit_megatron(const EmitInput& in) {
  const Plan& p = in.estimate.plan;
  const ModelDesc& m = desc_of(in);
  ScriptArgs model, plan;
  megatron_model_args(m, p, EmitFormat::megatron, &model);
  plan.add("--use-mcore-models");
  plan.add("--tensor-model-parallel-size", p.tp);
  plan.add("--pipeline-model-parallel-size", p.pp);
  // --pipeline-model-parallel-layout (megatron/training/arguments.py; grammar in modeler/pipeline_layout.h) sets vpp
  // from its stage count and excludes --num-layers-per-virtual-pipeline-stage: the plan's own layout, or, for an
  // uneven split, every virtual stage's layers (no divisibility rule applies), MTP modules on the last.
  if (!p.pipeline_layout.empty()) {
    plan.add("--pipeline-model-parallel-layout", p.pipeline_layout);
  } else if (p.pp > 1 && m.layers % (p.pp * p.vpp) != 0) {
    plan.add("--pipeline-model-parallel-layout", pipeline_layout_string(stage_layers(p, m.layers), p.mtp_layers));
  } else if (p.vpp > 1) {
    plan.add("--num-layers-per-virtual-pipeline-stage", m.layers / (p.pp * p.vpp));
  }
  if (p.mtp_layers > 0) plan.add("--mtp-num-layers", p.mtp_layers);  // arguments.py (core_v0.14.0)
  if (p.cp > 1) {
    plan.add("--context-parallel-size", p.cp);
    plan.add("--cp-comm-type", p.cp_kind == CpKind::allgather ? "all_gather" : "p2p");
  }
  if (p.sequence_parallel && p.tp > 1) plan.add("--sequence-parallel");
  if (p.tp_comm_overlap) plan.add("--tp-comm-overlap");
  if (in.moe) {
    plan.add("--expert-model-parallel-size", p.ep);
    plan.add("--expert-tensor-parallel-size", p.etp);
    if (p.capacity_factor > 0) plan.add("--moe-expert-capacity-factor", num(p.capacity_factor));
    if (p.capacity_factor > 0) plan.add("--moe-pad-expert-input-to-capacity");
    // Megatron-Core's own default is allgather; shardplan's (Megatron-Bridge's recipes') is alltoall, so say it.
    const MoeDispatcher d = p.moe_dispatcher.value_or(MoeDispatcher::alltoall);
    if (deduplicates_nodes(d)) {
      plan.add("--moe-token-dispatcher-type", "flex");
      plan.add("--moe-flex-dispatcher-backend", to_string(d));
    } else {
      plan.add("--moe-token-dispatcher-type", to_string(d));
    }
    if (p.moe_max_nodes > 0 && desc_experts(in) > 0) {
      // Node-limited routing as DeepSeek's group-limited routing with one group per domain of the EP group.
      const EpPlacement place = ep_placement(in.system, p.ep, p.etp, d == MoeDispatcher::deepep);
      plan.add("--moe-router-num-groups", place.domains);
      plan.add("--moe-router-group-topk", std::min(p.moe_max_nodes, place.domains));
    }
    if (p.ep_comm_overlap) plan.add("--overlap-moe-expert-parallel-comm");
  }
  if (p.zero == 2)
    throw ConfigError(what(EmitFormat::megatron) +
                      "Megatron-LM has no ZeRO-2 (gradient-only sharding); the plan "
                      "needs zero 0, 1 or 3");
  if (p.zero == 1) plan.add("--use-distributed-optimizer");
  // HSDP: the distributed optimizer over (dp x cp) / N ranks, N instances (megatron/training/arguments.py).
  if (p.zero == 1 && p.dp_shard > 0) plan.add("--num-distributed-optimizer-instances", p.dp / p.dp_shard);
  if (p.optimizer_offload > 0) {
    // Megatron-Core HybridDeviceOptimizer: needs the precision-aware optimizer (arguments.py validate_args).
    plan.add("--optimizer-cpu-offload");
    plan.add("--optimizer-offload-fraction", num(p.optimizer_offload));
    plan.add("--use-precision-aware-optimizer");
    plan.add("--overlap-cpu-optimizer-d2h-h2d");
  }
  // Transformer Engine activation offload of N layers (ModelParallelConfig.cpu_offloading_num_layers).
  if (p.activation_offload_layers > 0) plan.add("--cpu-offloading-num-layers", p.activation_offload_layers);
  if (p.zero == 3) {
    // --use-torch-fsdp2 refuses gradient-accumulation fusion (on by default) and needs a distributed checkpoint.
    plan.add("--use-torch-fsdp2");
    plan.add("--no-gradient-accumulation-fusion");
    plan.add("--ckpt-format", "torch_dist");
  }
  const bool data_parallel = p.dp * p.cp > 1;
  if (data_parallel) plan.add("--overlap-grad-reduce");
  if (data_parallel && p.zero == 1) plan.add("--overlap-param-gather");  // needs the distributed optimizer
  plan.add("--micro-batch-size", p.micro_batch);
  plan.add("--global-batch-size", p.global_batch);
  // The optimizer (training/arguments.py --optimizer; adam is AdamW with decoupled weight decay, the default).
  switch (p.finetune.optimizer) {
    case Optimizer::adamw: break;
    case Optimizer::sgd: plan.add("--optimizer", "sgd"), plan.add("--sgd-momentum", "0"); break;
    case Optimizer::sgd_momentum: plan.add("--optimizer", "sgd"), plan.add("--sgd-momentum", "0.9"); break;
    case Optimizer::muon: plan.add("--optimizer", "muon"); break;
    case Optimizer::lion: plan.add("--optimizer", "lion"); break;
    default:
      throw ConfigError(what(EmitFormat::megatron) + "Megatron-LM has no " + to_string(p.finetune.optimizer));
  }
  if (p.recompute == Recompute::selective) {
    plan.add("--recompute-granularity", "selective");
    if (p.recompute_modules != kRecomputeCoreAttn) {
      std::vector<std::string> mods;
      for (const RecomputeModuleName& n : kRecomputeModuleNames)
        if (p.recompute_modules & n.bit) mods.push_back(n.name);
      plan.add("--recompute-modules", mods);  // nargs='*': one argument per module
    }
  }
  if (p.recompute == Recompute::full) {
    plan.add("--recompute-granularity", "full");
    plan.add("--recompute-method", p.recompute_layers > 0 ? "block" : "uniform");
    plan.add("--recompute-num-layers", p.recompute_layers > 0 ? p.recompute_layers : 1);
  }
  plan.add(p.precision == Dtype::fp16 ? "--fp16" : "--bf16");
  if (p.precision == Dtype::fp8) {
    const Fp8Recipe r = fp8_recipe_of(p, in.framework);
    plan.add("--fp8-format", r == Fp8Recipe::mxfp8 ? "e4m3" : "hybrid");
    plan.add("--fp8-recipe", to_string(r));  // delayed, tensorwise, blockwise, mxfp8 (Megatron-Core Fp8Recipe)
  }
  if (p.precision == Dtype::fp4) {
    plan.add("--fp4-format", "e2m1");
    plan.add("--fp4-recipe", "nvfp4");
  }
  ScriptArgs data;
  data.add("--mock-data");
  data.add("--tokenizer-type", "NullTokenizer");
  data.add("--vocab-size", m.vocab);
  data.add("--make-vocab-size-divisible-by", 1);  // the profile's vocabulary is already the padded one
  data.add("--train-iters", "${TRAIN_ITERS:-100}");
  data.add("--lr", "1.5e-4");
  data.add("--min-lr", "1.5e-5");
  data.add("--lr-decay-style", "cosine");
  data.add("--log-interval", 1);

  // Before Blackwell, TP/CP comm kernels must be queued in order (one hardware queue) for Megatron's compute-comm
  // overlap; FSDP2 requires more than one queue (arguments.py, validate_args).
  std::string env;
  if (p.zero == 3)
    env = "unset CUDA_DEVICE_MAX_CONNECTIONS  # --use-torch-fsdp2 refuses CUDA_DEVICE_MAX_CONNECTIONS=1\n";
  else if (p.ep_comm_overlap)
    env = "export CUDA_DEVICE_MAX_CONNECTIONS=32  # MoE all-to-all overlap wants several queues\n";
  else if (p.tp > 1 || p.cp > 1)
    env = "export CUDA_DEVICE_MAX_CONNECTIONS=1\n";
  return bash_script(header(in, "#", kTarget), in.system, env, "${MEGATRON_LM:-.}/pretrain_gpt.py",
                     {{"MODEL_ARGS", model}, {"PLAN_ARGS", plan}, {"DATA_ARGS", data}});
}

}  // namespace shardplan::io::detail
