// Flags shared by `search` and `sweep`: the model, the system (with --gpus as a value, list or range), the
// batch, and the plan-space constraints (axis lists/ranges, caps, headroom, --allow).
#pragma once

#include <CLI/CLI.hpp>

#include <optional>
#include <string>
#include <vector>

#include "apps/plan_flags.h"
#include "apps/sharding_flags.h"
#include "modeler/plan_space.h"
#include "modeler/search.h"

namespace shardplan::cli {

struct SearchFlags {
  std::string model;
  SystemFlags system;      // its gpus field is filled per GPU count
  std::string gpus;        // "1024", "128,256" or "128:2048" (powers of two in range)
  std::optional<int> gbs, seq;
  std::string tp, cp, pp, vpp, zero, mbs, ep;  // axis specs (plan_space.h AxisSpec)
  std::optional<int> max_tp, max_pp, max_cp;
  std::optional<bool> sp, tp_overlap, ep_overlap;
  const CLI::Option* sp_option = nullptr;          // CLI11 fills an optional<bool> flag even when absent:
  const CLI::Option* tp_overlap_option = nullptr;  // count() tells whether the user gave it
  const CLI::Option* ep_overlap_option = nullptr;
  std::string moe_dispatcher;  // list: "alltoall,deepep" (default: the framework's default dispatcher)
  std::string moe_max_nodes;   // list of node limits: "0,4" (default 0: no limit)
  std::string recompute;   // list: "none,selective"
  std::string recompute_layers;  // list of N for the block method: "1,2,4"
  std::string recompute_modules;  // module sets selective tries, '+' inside a set: "core_attn,core_attn+moe"
  std::string precision;   // list: "bf16,fp8"
  std::string framework = "megatron-lm";
  double headroom_gib = 0;
  std::string allow;       // strategies outside the default search: "tsp,sdp"
  std::string tsp;         // axis spec of TSP degrees (with --allow tsp)
  std::string sdp_keep;    // list of SDP keep fractions (with --allow sdp)
  std::string optimizer_offload;  // list of optimizer offload fractions: "0,1"
  SearchShardingFlags sharding;   // --dp-shard, --zeropp, --param-offload, ... lists (sharding_flags.h)
  std::string compare;     // --compare FILE: a plan file to evaluate and rank beside the results
  FinetuneFlags finetune;  // fixed for the whole search: what is trained and the optimizer (not axes)
  int top = 10;
  int threads = 0;
  bool quiet = false;
};

void add_search_flags(CLI::App* app, SearchFlags* f, bool gpus_required);

/// --compare FILE (search only; sweep has no ranking to place it in).
void add_compare_flag(CLI::App* app, SearchFlags* f);
/// Flags that do not apply to the model are flag errors naming why: --ep, --ep-overlap/--no-ep-overlap,
/// --moe-dispatcher and --moe-max-nodes on a dense model.
void check_search_flags_fit(const SearchFlags& f, const ModelDesc& model);

/// The GPU counts: a value, a comma list, "a:b" (powers of two from a to b) or "a:b:s" (a, a+s, ...).
std::vector<int> resolve_gpu_counts(const std::string& text);
/// The plan-space request; checks --allow names against the strategies this build has.
SpaceRequest resolve_request(const SearchFlags& f);
System system_for(const SearchFlags& f, int gpus);
SearchOptions search_options(const SearchFlags& f);
/// "tp8 cp1 pp4 vpp2 dp32 z1 sp mbs1 selective bf16"
std::string plan_label(const Plan& p);
/// The `shardplan predict ...` command reproducing a searched plan.
std::string predict_command(const SearchFlags& f, const Plan& p, int gpus);

}  // namespace shardplan::cli
