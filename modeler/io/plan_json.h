// Plan files: reading a plan back from the JSON shardplan writes, so a plan can be re-predicted, compared in a
// search and shared (docs/plan-json.md is the schema). Three documents are accepted: a plan emitted by
// `search --emit json` (kind "shardplan-plan"), a `predict --json` report, and a bare plan object (the `plan`
// object of either). The parts read as input (the top level, `inputs`, `plan`) are read strictly: an unknown key
// is a ConfigError naming the file, line and key path with a suggestion; reported numbers (`predicted`, `time`,
// `memory`, `throughput`) are read where present and their other keys ignored, as the JSON contract says.
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "modeler/estimate.h"
#include "modeler/plan.h"

namespace shardplan::io {

/// What the plan was predicted for, as the command-line flags gave it: enough to build the same system again
/// (a cluster name or file, or a GPU with its standard node and the overrides). Written as the "inputs" object.
struct PlanInputs {
  std::string model;      // --model: a name from models/ or a path
  std::string framework;  // --framework
  std::string system;     // --system: cluster name or profile path ("" when gpu is set)
  std::string gpu;        // --gpu ("" when system is set)
  int gpus = 0;
  int gpus_per_node = 0;  // 0: not given (the standard node's)
  int nvlink_domain = 0;
  double nic_gbps = 0;
  double power_limit_w = 0;
};

nlohmann::json inputs_json(const PlanInputs& in);

/// A plan as a file states it: every field optional, so a bare plan object may name only what it changes; a field
/// left out takes the default of the predict flag of the same meaning (docs/plan-json.md).
struct PlanFields {
  std::optional<int> tp, pp, vpp, dp, cp, ep, etp, tsp, zero, micro_batch, global_batch, seq_len, recompute_layers;
  std::optional<bool> sequence_parallel, tp_comm_overlap, ep_comm_overlap, uneven_pipeline;
  std::optional<std::string> pipeline_layout;  // Megatron-Core's layout string (modeler/pipeline_layout.h)
  std::optional<int> mtp_layers;               // multi-token-prediction modules trained
  std::optional<CpKind> cp_kind;
  std::optional<Recompute> recompute;
  std::optional<unsigned> recompute_modules;  // RecomputeModule bits; only read with selective recompute
  std::optional<double> optimizer_offload;  // fraction of optimizer states on the host (modeler/offload.h)
  std::optional<std::string> precision;       // a predict --precision name: bf16 fp16 fp8 mxfp8 nvfp4
  std::optional<double> moe_imbalance, capacity_factor, sdp_keep;
  // MoE dispatch (modeler/moe_dispatch.h): the dispatcher's name, node-limited routing, fp8 dispatch.
  std::optional<std::string> moe_dispatcher;  // alltoall allgather deepep hybridep
  std::optional<int> moe_max_nodes;
  std::optional<bool> moe_fp8_dispatch;
  std::optional<bool> fp8_param_gather;  // parameters all-gathered in the fp8 recipe's dtype
  std::optional<SdpMask> sdp_mask;
  std::optional<SdpGranularity> sdp_granularity;
  // Memory tiers (modeler/hsdp.h, zeropp.h, param_offload.h).
  std::optional<int> dp_shard, activation_offload_layers;
  std::optional<std::string> zeropp, offload_device;  // "qwz+hpz8" (zeropp_string), "cpu" or "nvme"
  std::optional<bool> param_offload;
  /// Fine-tuning (modeler/finetune.h) as predict's flags spell it: --peft, --lora-rank, --lora-targets, --optimizer.
  std::optional<std::string> peft, lora_targets, optimizer;
  std::optional<int> lora_rank;
  std::optional<double> lora_dropout;
};

/// The numbers the file reports for its plan (an emitted plan's `predicted`, a report's time/throughput/memory).
struct PredictedNumbers {
  double step_s = 0;
  double tokens_per_s_per_gpu = 0;
  std::optional<double> mfu;
  std::optional<double> memory_bytes;
};

struct PlanFile {
  std::string file;
  std::string kind;  // "shardplan-plan", "predict report" or "plan"
  std::optional<PlanInputs> inputs;  // absent in a bare plan and in files written before "inputs" existed
  std::optional<std::string> model, framework;  // the file's own naming of them, when inputs is absent
  std::string shardplan_version;                // "" when the file does not say
  PlanFields plan;
  std::optional<PredictedNumbers> predicted;
};

/// What predict --json records of the plan file it read: {"file", "kind", "shardplan_version", "overridden": [flags],
/// "predicted": {step_s, tokens_per_s_per_gpu, mfu, memory_bytes} or null}.
nlohmann::json plan_file_json(const PlanFile& f, const std::vector<std::string>& overridden);

/// search --json's "compare" object: {"file", "rank" (null when the plan does not fit), "fitting", "notes", and the
/// plan's estimate as every result has it (plan, memory, time, throughput, feasible, problems)}.
nlohmann::json compare_json(const PlanFile& f, const Estimate& e, uint64_t rank, uint64_t fitting,
                            const std::vector<std::string>& notes);

/// Parses a plan file's text; `filename` names it in errors ("plan.json:12: plan.tpp: unknown key ...").
PlanFile parse_plan_json(std::string_view text, const std::string& filename);
/// Reads and parses a file; a missing file is a ConfigError naming it.
PlanFile load_plan_file(const std::string& path);

}  // namespace shardplan::io
