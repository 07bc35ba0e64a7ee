// NeMo / Megatron-Bridge launch unit: a recipe override YAML, the OmegaConf file Megatron-Bridge's pretrain scripts
// merge onto a recipe's ConfigContainer (--config-file; megatron/bridge/training/utils/omegaconf_utils.py). Keys are
// ConfigContainer fields: model (GPTModelProvider, i.e. Megatron-Core TransformerConfig + ModelParallelConfig),
// train, dataset, ddp, optimizer, dist, comm_overlap and mixed_precision.
#include <yaml-cpp/yaml.h>

#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "modeler/finetune.h"
#include "modeler/io/emit_common.h"
#include "modeler/moe_dispatch.h"
#include "modeler/pipeline_layout.h"

namespace shardplan::io::detail {

namespace {
constexpr const char* kTarget =
    "NVIDIA-NeMo/Megatron-Bridge main 067f987 ConfigContainer override YAML (pretrain script --config-file THIS_FILE "
    "on the model's recipe), Megatron-Core d98e8a6";
}

namespace {

/// ConfigContainer.peft (Megatron-Bridge 067f987 src/megatron/bridge/peft): LoRA on the fused Megatron-Core modules
/// (linear_qkv, linear_proj, linear_fc1 = gate + up, linear_fc2), CanonicalLoRA where q, k, v or gate, up are
/// adapted separately, DoRA on the fused ones; instantiated from _target_ by the override loader
/// (training/utils/omegaconf_utils.py). alpha scales the update, not the cost: twice the rank, the common choice.
void emit_peft(const Plan& p, const std::string& what, YAML::Emitter* out) {
  const unsigned t = p.finetune.lora_targets;
  const unsigned qkv = kLoraQ | kLoraK | kLoraV, fc1 = kLoraGate | kLoraUp;
  const bool split = ((t & qkv) != 0 && (t & qkv) != qkv) || ((t & fc1) != 0 && (t & fc1) != fc1);
  std::vector<std::string> modules;
  if (split) {
    if (p.finetune.peft == Peft::dora)
      throw ConfigError(what + "Megatron-Bridge's DoRA adapts fused linear_qkv and linear_fc1 only");
    const std::pair<unsigned, const char*> canonical[] = {
        {kLoraQ, "linear_q"},       {kLoraK, "linear_k"},       {kLoraV, "linear_v"}, {kLoraO, "linear_proj"},
        {kLoraUp, "linear_fc1_up"}, {kLoraGate, "linear_fc1_gate"}, {kLoraDown, "linear_fc2"}};
    for (const auto& [bit, name] : canonical)
      if (t & bit) modules.push_back(name);
  } else {
    if (t & qkv) modules.push_back("linear_qkv");
    if (t & kLoraO) modules.push_back("linear_proj");
    if (t & fc1) modules.push_back("linear_fc1");
    if (t & kLoraDown) modules.push_back("linear_fc2");
  }
  const char* target = p.finetune.peft == Peft::dora ? "megatron.bridge.peft.dora.DoRA"
                       : split                       ? "megatron.bridge.peft.canonical_lora.CanonicalLoRA"
                                                     : "megatron.bridge.peft.lora.LoRA";
  *out << YAML::Key << "peft" << YAML::Value << YAML::BeginMap;
  *out << YAML::Key << "_target_" << YAML::Value << target;
  *out << YAML::Key << "target_modules" << YAML::Value << YAML::Flow << modules;
  *out << YAML::Key << "dim" << YAML::Value << p.finetune.lora_rank;
  *out << YAML::Key << "alpha" << YAML::Value << 2 * p.finetune.lora_rank;
  *out << YAML::EndMap;
}

}  // namespace

std::string emit_nemo(const EmitInput& in) {
  const Plan& p = in.estimate.plan;
  const ModelDesc& m = desc_of(in);
  const std::string what = detail::what(EmitFormat::nemo);
  if (p.zero == 2)
    throw ConfigError(what + "Megatron-Core has no ZeRO-2 (gradient-only sharding); the plan needs zero 0, 1 or 3");
  if (m.position == PositionKind::alibi || m.sliding_window > 0 || m.attention_sinks)
    throw ConfigError(what + m.name +
                      "'s attention (ALiBi, sliding windows or sinks) is not expressed by this "
                      "emitter; --emit json writes the plan");
  if (m.qk_norm == QkNorm::full)
    throw ConfigError(what + m.name +
                      " normalises q and k over their full width (OLMo-2), which qk_layernorm (per head) does not "
                      "express; --emit json writes the plan");
  YAML::Emitter out;
  out << YAML::BeginMap;
  out << YAML::Key << "model" << YAML::Value << YAML::BeginMap;
  // Architecture (overrides the recipe's, so the run is the model that was predicted).
  out << YAML::Key << "num_layers" << YAML::Value << m.layers;
  out << YAML::Key << "hidden_size" << YAML::Value << m.hidden;
  out << YAML::Key << "ffn_hidden_size" << YAML::Value << m.ffn_hidden;
  out << YAML::Key << "num_attention_heads" << YAML::Value << m.heads;
  out << YAML::Key << "num_query_groups" << YAML::Value << m.kv_heads;
  out << YAML::Key << "kv_channels" << YAML::Value << m.head_dim;
  out << YAML::Key << "vocab_size" << YAML::Value << m.vocab;
  out << YAML::Key << "seq_length" << YAML::Value << p.seq_len;
  out << YAML::Key << "normalization" << YAML::Value << (m.norm == NormKind::rmsnorm ? "RMSNorm" : "LayerNorm");
  out << YAML::Key << "gated_linear_unit" << YAML::Value << m.gated_mlp;
  out << YAML::Key << "position_embedding_type" << YAML::Value
      << (m.position == PositionKind::rope      ? "rope"
          : m.position == PositionKind::learned ? "learned_absolute"
                                                : "none");
  out << YAML::Key << "share_embeddings_and_output_weights" << YAML::Value << m.tied_embeddings;
  out << YAML::Key << "add_bias_linear" << YAML::Value << m.linear_bias;
  // Per-head QK-norm (Qwen3): TransformerConfig.qk_layernorm, as Megatron-Bridge's Qwen3 providers set it.
  if (m.qk_norm == QkNorm::per_head) out << YAML::Key << "qk_layernorm" << YAML::Value << true;
  if (m.moe) {
    out << YAML::Key << "num_moe_experts" << YAML::Value << m.moe->experts;
    out << YAML::Key << "moe_router_topk" << YAML::Value << m.moe->top_k;
    out << YAML::Key << "moe_ffn_hidden_size" << YAML::Value << m.moe->expert_ffn_hidden;
  }
  // Plan.
  out << YAML::Key << "tensor_model_parallel_size" << YAML::Value << p.tp;
  out << YAML::Key << "pipeline_model_parallel_size" << YAML::Value << p.pp;
  const bool uneven = p.pp > 1 && m.layers % (p.pp * p.vpp) != 0;
  out << YAML::Key << "virtual_pipeline_model_parallel_size" << YAML::Value;
  if (p.vpp > 1)
    out << p.vpp;
  else
    out << YAML::Null;
  if (uneven || !p.pipeline_layout.empty()) {
    // Megatron-Core's list form of the layout: one list of layer types per virtual stage in model order
    // (PipelineParallelLayerLayout accepts a list of lists); "embedding" first, MTP modules ("mtp") and "loss"
    // last; the plan's own layout when it states one (modeler/pipeline_layout.h).
    std::vector<LayoutStage> stages;
    std::string error;
    if (const std::optional<PipelineLayout> l = parse_pipeline_layout(p.pipeline_layout, &error);
        l && !p.pipeline_layout.empty()) {
      stages = l->stages;
    } else {
      for (int n : stage_layers(p, m.layers)) stages.push_back(LayoutStage{n, 0, false, false});
      stages.front().embedding = true;
      stages.back().mtp = p.mtp_layers;
      stages.back().loss = true;
    }
    out << YAML::Key << "pipeline_model_parallel_layout" << YAML::Value << YAML::Flow << YAML::BeginSeq;
    for (const LayoutStage& st : stages) {
      out << YAML::BeginSeq;
      if (st.embedding) out << "embedding";
      for (int k = 0; k < st.decoders; ++k) out << "decoder";
      for (int k = 0; k < st.mtp; ++k) out << "mtp";
      if (st.loss) out << "loss";
      out << YAML::EndSeq;
    }
    out << YAML::EndSeq;
  }
  if (p.mtp_layers > 0) out << YAML::Key << "mtp_num_layers" << YAML::Value << p.mtp_layers;
  out << YAML::Key << "context_parallel_size" << YAML::Value << p.cp;
  if (p.cp > 1)
    out << YAML::Key << "cp_comm_type" << YAML::Value << (p.cp_kind == CpKind::allgather ? "all_gather" : "p2p");
  out << YAML::Key << "sequence_parallel" << YAML::Value << (p.sequence_parallel && p.tp > 1);
  if (in.moe) {
    out << YAML::Key << "expert_model_parallel_size" << YAML::Value << p.ep;
    out << YAML::Key << "expert_tensor_parallel_size" << YAML::Value << p.etp;
    if (p.capacity_factor > 0) out << YAML::Key << "moe_expert_capacity_factor" << YAML::Value << p.capacity_factor;
    out << YAML::Key << "overlap_moe_expert_parallel_comm" << YAML::Value << p.ep_comm_overlap;
    // Megatron-Core TransformerConfig: moe_token_dispatcher_type, and flex's moe_flex_dispatcher_backend.
    const MoeDispatcher d = p.moe_dispatcher.value_or(MoeDispatcher::alltoall);
    out << YAML::Key << "moe_token_dispatcher_type" << YAML::Value << (deduplicates_nodes(d) ? "flex" : to_string(d));
    if (deduplicates_nodes(d)) out << YAML::Key << "moe_flex_dispatcher_backend" << YAML::Value << to_string(d);
  }
  out << YAML::Key << "recompute_granularity" << YAML::Value;
  if (p.recompute == Recompute::none)
    out << YAML::Null;
  else
    out << to_string(p.recompute);
  out << YAML::Key << "recompute_method" << YAML::Value;
  if (p.recompute == Recompute::full)
    out << (p.recompute_layers > 0 ? "block" : "uniform");
  else
    out << YAML::Null;
  out << YAML::Key << "recompute_num_layers" << YAML::Value;
  if (p.recompute == Recompute::full)
    out << (p.recompute_layers > 0 ? p.recompute_layers : 1);
  else
    out << YAML::Null;
  if (p.recompute == Recompute::selective) {
    out << YAML::Key << "recompute_modules" << YAML::Value << YAML::Flow << YAML::BeginSeq;
    for (const RecomputeModuleName& n : kRecomputeModuleNames)
      if (p.recompute_modules & n.bit) out << n.name;
    out << YAML::EndSeq;
  }
  out << YAML::EndMap;

  out << YAML::Key << "train" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "micro_batch_size" << YAML::Value << p.micro_batch;
  out << YAML::Key << "global_batch_size" << YAML::Value << p.global_batch;
  out << YAML::EndMap;
  out << YAML::Key << "dataset" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "sequence_length" << YAML::Value << p.seq_len;
  out << YAML::EndMap;

  const bool data_parallel = p.dp * p.cp > 1;
  out << YAML::Key << "ddp" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "use_distributed_optimizer" << YAML::Value << (p.zero == 1);
  out << YAML::Key << "overlap_grad_reduce" << YAML::Value << data_parallel;
  out << YAML::Key << "overlap_param_gather" << YAML::Value << (data_parallel && p.zero == 1);
  out << YAML::EndMap;
  out << YAML::Key << "optimizer" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "use_distributed_optimizer" << YAML::Value << (p.zero == 1);
  // Megatron-Core OptimizerConfig.optimizer: adam (AdamW), sgd with sgd_momentum, muon.
  const Optimizer opt = p.finetune.optimizer;
  if (opt != Optimizer::adamw) {
    if (opt != Optimizer::sgd && opt != Optimizer::sgd_momentum && opt != Optimizer::muon)
      throw ConfigError(what + "Megatron-Core's OptimizerConfig has no " + to_string(opt));
    out << YAML::Key << "optimizer" << YAML::Value << (opt == Optimizer::muon ? "muon" : "sgd");
    if (opt != Optimizer::muon)
      out << YAML::Key << "sgd_momentum" << YAML::Value << (opt == Optimizer::sgd ? 0.0 : 0.9);
  }
  out << YAML::EndMap;
  if (base_frozen(p)) emit_peft(p, what, &out);
  out << YAML::Key << "dist" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "use_torch_fsdp2" << YAML::Value << (p.zero == 3);
  out << YAML::EndMap;
  out << YAML::Key << "comm_overlap" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "tp_comm_overlap" << YAML::Value << p.tp_comm_overlap;
  out << YAML::EndMap;

  // MixedPrecisionConfig fields (megatron/bridge/training/mixed_precision.py).
  out << YAML::Key << "mixed_precision" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "bf16" << YAML::Value << (p.precision != Dtype::fp16);
  out << YAML::Key << "fp16" << YAML::Value << (p.precision == Dtype::fp16);
  out << YAML::Key << "params_dtype" << YAML::Value << (p.precision == Dtype::fp16 ? "float16" : "bfloat16");
  out << YAML::Key << "fp8" << YAML::Value;
  const Fp8Recipe recipe = fp8_recipe_of(p, in.framework);
  if (p.precision == Dtype::fp8)
    out << (recipe == Fp8Recipe::mxfp8 ? "e4m3" : "hybrid");
  else
    out << YAML::Null;
  if (p.precision == Dtype::fp8) out << YAML::Key << "fp8_recipe" << YAML::Value << to_string(recipe);
  out << YAML::Key << "fp4" << YAML::Value;
  if (p.precision == Dtype::fp4)
    out << "e2m1";
  else
    out << YAML::Null;
  if (p.precision == Dtype::fp4) out << YAML::Key << "fp4_recipe" << YAML::Value << "nvfp4";
  out << YAML::EndMap;
  out << YAML::EndMap;
  if (!out.good()) throw std::logic_error("YAML emitter: " + out.GetLastError());
  return header(in, "#", kTarget) + "# on " + std::to_string(nodes_of(in.system)) + " nodes x " +
         std::to_string(gpus_per_node_of(in.system)) + " GPUs (torchrun --nnodes " +
         std::to_string(nodes_of(in.system)) + " --nproc-per-node " + std::to_string(gpus_per_node_of(in.system)) +
         ")\n" + out.c_str() + "\n";
}

}  // namespace shardplan::io::detail
