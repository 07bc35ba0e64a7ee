// Flags shared by predict, search and sweep: which model, which system, which plan. CLI11 options fill the
// optionals; resolve_* turns them into library inputs, with errors naming the flag.
#pragma once

#include <CLI/CLI.hpp>

#include <map>
#include <optional>
#include <string>

#include "apps/sharding_flags.h"
#include "apps/finetune_flags.h"
#include "modeler/framework.h"
#include "modeler/model_desc.h"
#include "modeler/plan.h"
#include "modeler/system.h"

namespace shardplan::cli {

struct SystemFlags {
  std::string system;  // cluster name or profile path
  std::string gpu;     // GPU name: builds the standard node and network
  std::optional<int> gpus, gpus_per_node, nvlink_domain;
  std::optional<double> nic_gbps;  // Gb/s per GPU
  std::optional<double> power_limit_w;
};

struct PlanFlags {
  std::optional<int> tp, pp, vpp, dp, cp, ep, etp, tsp, zero, mbs, gbs, seq;
  std::optional<double> sdp_keep, moe_imbalance, capacity_factor;
  std::optional<double> optimizer_offload;  // fraction of optimizer states on the host
  ShardingFlags sharding;                   // --dp-shard, --zeropp, --param-offload, ... (sharding_flags.h)
  std::string sdp_mask = "forward";
  std::string sdp_granularity = "block";
  bool sp_on = false, sp_off = false;  // --sp / --no-sp; neither: on when tp > 1
  bool tp_overlap = false;
  bool ep_overlap = false;
  std::optional<std::string> moe_dispatcher;  // alltoall allgather deepep hybridep; unset: the framework's
  std::optional<int> moe_max_nodes;            // node-limited routing M; unset: 0 (no limit)
  bool moe_fp8_dispatch = false;
  std::optional<bool> fp8_param_gather;  // --fp8-param-gather / --no-fp8-param-gather; unset: the framework's
  bool uneven_pp = false;
  std::string pipeline_layout;     // Megatron-Core's layout string; empty: the even split
  std::optional<int> mtp_layers;   // multi-token-prediction modules trained; unset: 0
  std::string cp_kind;  // empty: the framework's (Framework::recipe_cp_kind)
  std::optional<std::string> recompute;  // default none, or selective when --recompute-modules is given
  std::optional<int> recompute_layers;
  std::optional<std::string> recompute_modules;  // "core_attn+mlp" or "core_attn,mlp"
  std::string precision = "bf16";
  std::string framework = "megatron-lm";
  FinetuneFlags finetune;  // --peft, --lora-rank, --lora-targets, --optimizer
  const CLI::App* app = nullptr;  // the command the flags were added to: says which were given (count())
  /// Fields a --plan file filled: flag -> the file's key ("--sp" -> "sequence_parallel"), so errors name the file.
  std::map<std::string, std::string> from_file;
  std::string plan_file;
  /// Whether the flag was given on the command line or filled from a plan file.
  bool given(const std::string& flag) const;
};

void add_system_flags(CLI::App* app, SystemFlags* f, bool gpus_required);
void add_plan_flags(CLI::App* app, PlanFlags* f);

System resolve_system(const SystemFlags& f);
const Framework& resolve_framework(const std::string& name);
Recompute parse_recompute(const std::string& s);
/// Megatron recompute modules from `flag`'s text (names joined by '+' or ','); ConfigError naming the flag, the
/// unknown name and the choices.
unsigned parse_recompute_modules_flag(const std::string& flag, const std::string& text);
Dtype parse_precision(const std::string& s);
/// The fp8 scaling recipe a --precision value names (mxfp8, fp8-delayed, ...); unset (the framework's) otherwise.
std::optional<Fp8Recipe> precision_fp8_recipe(const std::string& s);
/// The --framework help: each profile with the defaults it gives unset plan settings.
std::string framework_help();
/// The plan the flags describe; dp defaults to gpus / (tp x tsp x pp x cp), etp to tp (Megatron-Core's default),
/// gbs to dp x mbs, seq to 4096.
Plan resolve_plan(const PlanFlags& f, const System& sys);
/// Flags that do not apply to the model or the plan are flag errors (ConfigError) naming why: MoE flags (--ep,
/// --etp, --capacity-factor, --moe-imbalance, --ep-overlap) on a dense model, --ep-overlap at ep 1, --sp and
/// --tp-overlap at tp 1, --cp-kind at cp 1. Every problem is reported.
void check_flags_fit(const PlanFlags& f, const ModelDesc& model, const Plan& plan);
/// The `shardplan predict` arguments that reproduce a plan (search rows print it).
std::string plan_arguments(const Plan& p, const std::string& framework);

}  // namespace shardplan::cli
