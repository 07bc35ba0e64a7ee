#include "modeler/io/emit.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>

#include "modeler/io/report_json.h"
#include "modeler/io/yaml_reader.h"
#include "modeler/problems.h"

namespace shardplan::io {

namespace {

using nlohmann::json;

constexpr const char* kFormatNames[] = {"json", "megatron", "torchtitan", "deepspeed", "nemo"};

int nodes_of(const System& s) {
  const int per_node = s.gpus_per_node > 0 ? std::min(s.gpus_per_node, s.gpus) : s.gpus;
  return (s.gpus + per_node - 1) / per_node;
}

std::string header(const EmitInput& in, const std::string& comment) {
  const Plan& p = in.estimate.plan;
  std::ostringstream o;
  o << comment << " shardplan " << SHARDPLAN_VERSION << " plan for " << in.model << " on " << in.system.gpus << " x "
    << in.system.gpu.name << " (framework profile " << in.framework << ")\n"
    << comment << " tp " << p.tp << " cp " << p.cp << " pp " << p.pp << " vpp " << p.vpp << " dp " << p.dp
    << (p.tsp > 1 ? " tsp " + std::to_string(p.tsp) : "") << (in.moe ? " ep " + std::to_string(p.ep) : "") << " zero "
    << p.zero << "; predicted " << static_cast<long>(in.estimate.tokens_per_s_per_gpu) << " tokens/s/GPU\n";
  return o.str();
}

/// One parallel group in Megatron's rank order (tp innermost, then cp, dp, pp) and the tier it spans.
json group_json(const System& s, int size, int stride) {
  const int tier = s.tier_for_group(size, stride);
  const int span = (size - 1) * stride + 1;  // consecutive ranks from the first member to the last
  const int per_node = s.gpus_per_node > 0 ? s.gpus_per_node : s.gpus;
  return json{{"size", size},
              {"stride", stride},
              {"within_node", size == 1 || span <= per_node},
              {"tier", tier >= 0 && tier < static_cast<int>(s.tiers.size()) ? s.tiers[static_cast<size_t>(tier)].name
                                                                            : std::string("?")}};
}

std::string emit_json(const EmitInput& in) {
  const Plan& p = in.estimate.plan;
  const System& s = in.system;
  json j;
  j["schema_version"] = 1;
  j["kind"] = "shardplan-plan";
  j["shardplan_version"] = SHARDPLAN_VERSION;
  j["model"] = in.model;
  j["framework"] = in.framework;
  j["system"] = {{"name", s.name},
                 {"gpu", s.gpu.name},
                 {"gpus", s.gpus},
                 {"gpus_per_node", s.gpus_per_node},
                 {"nodes", nodes_of(s)}};
  if (in.inputs) j["inputs"] = inputs_json(*in.inputs);  // what predict --plan reads to build the same system
  j["plan"] = plan_json(p);
  j["rank_order"] = p.tsp > 1 ? "tp-tsp-cp-dp-pp" : "tp-cp-dp-pp";
  j["groups"] = {{"tp", group_json(s, p.tp, 1)},
                 {"cp", group_json(s, p.cp, p.tp * p.tsp)},
                 {"dp", group_json(s, p.dp, p.inner())},
                 {"pp", group_json(s, p.pp, p.inner() * p.dp)}};
  if (p.tsp > 1) j["groups"]["tsp"] = group_json(s, p.tsp, p.tp);
  if (in.moe) {
    // Megatron-Core lays expert layers out as etp-ep-edp-pp: an EP group's members sit at stride etp.
    j["expert_rank_order"] = "etp-ep-edp-pp";
    j["groups"]["ep"] = group_json(s, p.ep, p.etp);
  }
  j["predicted"] = {{"step_s", in.estimate.time.step().v},
                    {"tokens_per_s_per_gpu", in.estimate.tokens_per_s_per_gpu},
                    {"mfu", in.estimate.mfu},
                    {"memory_bytes", in.estimate.memory.total().v}};
  return j.dump(2) + "\n";
}

std::string emit_megatron(const EmitInput& in) {
  const Plan& p = in.estimate.plan;
  std::ostringstream o;
  o << header(in, "#");
  auto arg = [&o](const std::string& name, const std::string& value = "") {
    o << name << (value.empty() ? "" : " " + value) << "\n";
  };
  arg("--tensor-model-parallel-size", std::to_string(p.tp));
  arg("--pipeline-model-parallel-size", std::to_string(p.pp));
  if (p.vpp > 1) arg("--num-layers-per-virtual-pipeline-stage", std::to_string(in.layers / (p.pp * p.vpp)));
  if (p.cp > 1) {
    arg("--context-parallel-size", std::to_string(p.cp));
    arg("--cp-comm-type", p.cp_kind == CpKind::allgather ? "allgather" : "p2p");
  }
  if (p.sequence_parallel) arg("--sequence-parallel");
  if (p.tp_comm_overlap) arg("--tp-comm-overlap");
  if (in.moe) {
    arg("--expert-model-parallel-size", std::to_string(p.ep));
    arg("--expert-tensor-parallel-size", std::to_string(p.etp));
    if (p.capacity_factor > 0) arg("--moe-expert-capacity-factor", num(p.capacity_factor));
    if (p.ep_comm_overlap) arg("--overlap-moe-expert-parallel-comm");
  }
  if (p.zero == 2) o << "# ZeRO-2 has no Megatron-LM flag; the distributed optimizer (ZeRO-1) is the nearest\n";
  if (p.zero == 1 || p.zero == 2) arg("--use-distributed-optimizer");
  if (p.zero == 3) arg("--use-torch-fsdp2");
  if (p.dp * p.cp > 1) arg("--overlap-grad-reduce");
  if (p.dp * p.cp > 1 && p.zero >= 1) arg("--overlap-param-gather");
  arg("--micro-batch-size", std::to_string(p.micro_batch));
  arg("--global-batch-size", std::to_string(p.global_batch));
  arg("--seq-length", std::to_string(p.seq_len));
  if (p.recompute == Recompute::selective) {
    arg("--recompute-granularity", "selective");
    if (p.recompute_modules != kRecomputeCoreAttn) {
      std::string mods = recompute_modules_string(p.recompute_modules);
      std::replace(mods.begin(), mods.end(), '+', ' ');  // nargs='*': one argument per module
      arg("--recompute-modules", mods);
    }
  }
  if (p.recompute == Recompute::full) {
    arg("--recompute-granularity", "full");
    arg("--recompute-method", p.recompute_layers > 0 ? "block" : "uniform");
    arg("--recompute-num-layers", std::to_string(p.recompute_layers > 0 ? p.recompute_layers : 1));
  }
  if (p.precision == Dtype::fp16) {
    arg("--fp16");
  } else {
    arg("--bf16");
    if (p.precision == Dtype::fp8) arg("--fp8-format", "hybrid");
    if (p.precision == Dtype::fp4) o << "# fp4 GEMMs: set the fp4 recipe of your Megatron-LM/Transformer Engine version\n";
  }
  return o.str();
}

std::string toml_string(const std::string& s) { return "\"" + s + "\""; }

std::string emit_torchtitan(const EmitInput& in) {
  const Plan& p = in.estimate.plan;
  std::ostringstream o;
  o << header(in, "#");
  // FSDP2 shards over the data-parallel ranks for ZeRO 1-3 (torchtitan has no optimizer-only sharding; keeping
  // parameters gathered between forward and backward, reshard "never", is ZeRO-2-like); ZeRO 0 is replication.
  const bool shard = p.zero >= 1;
  o << "\n[parallelism]\n"
    << "data_parallel_replicate_degree = " << (shard ? 1 : p.dp) << "\n"
    << "data_parallel_shard_degree = " << (shard ? p.dp : 1) << "\n";
  if (shard) o << "fsdp_reshard_after_forward = " << toml_string(p.zero == 3 ? "always" : "never") << "\n";
  o << "tensor_parallel_degree = " << p.tp << "\n"
    << "enable_async_tensor_parallel = " << (p.tp_comm_overlap ? "true" : "false") << "\n"
    << "pipeline_parallel_degree = " << p.pp << "\n";
  if (p.pp > 1) {
    o << "pipeline_parallel_schedule = " << toml_string(p.vpp > 1 ? "Interleaved1F1B" : "1F1B") << "\n"
      << "pipeline_parallel_microbatch_size = " << p.micro_batch << "\n";
    if (p.vpp > 1) o << "pipeline_parallel_layers_per_stage = " << in.layers / (p.pp * p.vpp) << "\n";
  }
  o << "context_parallel_degree = " << p.cp << "\n";
  if (in.moe)
    o << "expert_parallel_degree = " << p.ep << "\n"
      << "expert_tensor_parallel_degree = " << p.etp << "\n";
  if (p.cp > 1) o << "context_parallel_rotate_method = " << toml_string("allgather") << "\n";
  // With pipelining the local batch is split into micro-batches; without, global / (local x dp) is the
  // gradient-accumulation count.
  const int local = p.pp > 1 ? p.global_batch / p.dp : p.micro_batch;
  o << "\n[training]\n"
    << "local_batch_size = " << local << "\n"
    << "global_batch_size = " << p.global_batch << "\n"
    << "seq_len = " << p.seq_len << "\n"
    << "mixed_precision_param = " << toml_string("bfloat16") << "\n";
  o << "\n[activation_checkpoint]\n"
    << "mode = " << toml_string(p.recompute == Recompute::none ? "none" : to_string(p.recompute)) << "\n";
  if (p.precision == Dtype::fp8) o << "\n[model]\nconverters = [" << toml_string("float8") << "]\n";
  return o.str();
}

std::string emit_deepspeed(const EmitInput& in) {
  const Plan& p = in.estimate.plan;
  json j;
  j["train_batch_size"] = p.global_batch;
  j["train_micro_batch_size_per_gpu"] = p.micro_batch;
  j["gradient_accumulation_steps"] = p.num_microbatches();
  j["zero_optimization"] = {{"stage", p.zero}, {"overlap_comm", true}, {"contiguous_gradients", true}};
  j["bf16"] = {{"enabled", p.precision != Dtype::fp16}};
  j["fp16"] = {{"enabled", p.precision == Dtype::fp16}};
  return j.dump(2) + "\n";
}

std::string emit_nemo(const EmitInput& in) {
  const Plan& p = in.estimate.plan;
  const System& s = in.system;
  YAML::Emitter out;
  out << YAML::BeginMap;
  out << YAML::Key << "trainer" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "num_nodes" << YAML::Value << nodes_of(s);
  out << YAML::Key << "devices" << YAML::Value << (s.gpus_per_node > 0 ? std::min(s.gpus_per_node, s.gpus) : s.gpus);
  out << YAML::Key << "precision" << YAML::Value << (p.precision == Dtype::fp16 ? "16-mixed" : "bf16-mixed");
  out << YAML::EndMap;
  out << YAML::Key << "model" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "tensor_model_parallel_size" << YAML::Value << p.tp;
  out << YAML::Key << "pipeline_model_parallel_size" << YAML::Value << p.pp;
  out << YAML::Key << "virtual_pipeline_model_parallel_size" << YAML::Value;
  if (p.vpp > 1) out << p.vpp;
  else out << YAML::Null;
  out << YAML::Key << "context_parallel_size" << YAML::Value << p.cp;
  out << YAML::Key << "sequence_parallel" << YAML::Value << p.sequence_parallel;
  out << YAML::Key << "micro_batch_size" << YAML::Value << p.micro_batch;
  out << YAML::Key << "global_batch_size" << YAML::Value << p.global_batch;
  out << YAML::Key << "encoder_seq_length" << YAML::Value << p.seq_len;
  out << YAML::Key << "activations_checkpoint_granularity" << YAML::Value;
  if (p.recompute == Recompute::none) out << YAML::Null;
  else out << to_string(p.recompute);
  out << YAML::Key << "activations_checkpoint_method" << YAML::Value;
  if (p.recompute == Recompute::full) out << (p.recompute_layers > 0 ? "block" : "uniform");
  else out << YAML::Null;
  out << YAML::Key << "activations_checkpoint_num_layers" << YAML::Value;
  if (p.recompute == Recompute::full) out << (p.recompute_layers > 0 ? p.recompute_layers : 1);
  else out << YAML::Null;
  out << YAML::Key << "fp8" << YAML::Value << (p.precision == Dtype::fp8);
  if (p.precision == Dtype::fp8) out << YAML::Key << "fp8_hybrid" << YAML::Value << true;
  out << YAML::Key << "ub_tp_comm_overlap" << YAML::Value << p.tp_comm_overlap;
  if (in.moe) {
    out << YAML::Key << "expert_model_parallel_size" << YAML::Value << p.ep;
    out << YAML::Key << "expert_tensor_parallel_size" << YAML::Value << p.etp;
    if (p.capacity_factor > 0) out << YAML::Key << "moe_expert_capacity_factor" << YAML::Value << p.capacity_factor;
  }
  out << YAML::Key << "optim" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "name" << YAML::Value << (p.zero >= 1 ? "distributed_fused_adam" : "fused_adam");
  out << YAML::EndMap;
  out << YAML::EndMap;
  out << YAML::EndMap;
  if (!out.good()) throw std::logic_error("YAML emitter: " + out.GetLastError());
  return header(in, "#") + out.c_str() + "\n";
}

}  // namespace

EmitFormat parse_emit_format(const std::string& name) {
  for (int i = 0; i < 5; ++i)
    if (name == kFormatNames[i]) return static_cast<EmitFormat>(i);
  const std::string near = closest_match(name, {std::begin(kFormatNames), std::end(kFormatNames)});
  throw ConfigError("--emit: unknown format '" + name + "' (json, megatron, torchtitan, deepspeed, nemo)" +
                    (near.empty() ? "" : ", did you mean '" + near + "'?"));
}

const char* to_string(EmitFormat f) { return kFormatNames[static_cast<int>(f)]; }

std::string emit_plan(EmitFormat format, const EmitInput& in) {
  const Plan& p = in.estimate.plan;
  const std::string what = std::string("--emit ") + to_string(format) + ": ";
  if (format != EmitFormat::json) {
    // What no launcher format can express: a plan of it would launch something else than was predicted.
    if (p.tsp > 1)
      throw ConfigError(what + "the plan uses folded tensor + sequence parallelism (tsp " + std::to_string(p.tsp) +
                        "), which no supported framework implements; --emit json writes it");
    if (p.changes_training_semantics())
      throw ConfigError(what + "the plan uses subnetwork data parallelism (sdp keep " + num(p.sdp_keep) +
                        "), which no supported framework implements; --emit json writes it");
  }
  if (format == EmitFormat::torchtitan && p.recompute_layers > 0)
    throw ConfigError(what + "torchtitan checkpoints every k-th layer, not the first " +
                      std::to_string(p.recompute_layers) + " of each chunk (--recompute-layers); emit megatron, nemo "
                      "or json for this plan");
  if (p.recompute == Recompute::selective && p.recompute_modules != kRecomputeCoreAttn &&
      (format == EmitFormat::torchtitan || format == EmitFormat::deepspeed || format == EmitFormat::nemo))
    throw ConfigError(what + "the plan recomputes Megatron-Core modules (" +
                      recompute_modules_string(p.recompute_modules) + "), which " + to_string(format) +
                      (format == EmitFormat::nemo ? "'s megatron_gpt_config has no key for (a NeMo 2 or "
                                                    "Megatron-Bridge recipe sets TransformerConfig.recompute_modules)"
                                                  : " does not offer") +
                      "; emit megatron or json for this plan");
  if (format == EmitFormat::deepspeed && in.moe && p.ep > 1)
    throw ConfigError(what +
                      "DeepSpeed sets expert parallelism in the model code (deepspeed.moe.layer.MoE ep_size), not in "
                      "its config JSON; emit megatron, nemo or json for this plan (ep " + std::to_string(p.ep) + ")");
  switch (format) {
    case EmitFormat::json: return emit_json(in);
    case EmitFormat::megatron: return emit_megatron(in);
    case EmitFormat::torchtitan: return emit_torchtitan(in);
    case EmitFormat::deepspeed: return emit_deepspeed(in);
    case EmitFormat::nemo: return emit_nemo(in);
  }
  throw std::logic_error("unknown emit format");
}

}  // namespace shardplan::io
