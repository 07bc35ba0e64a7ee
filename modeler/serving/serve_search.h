// serve search: aggregated serving plans for a model on N GPUs under TTFT/TPOT targets, ranked by output tokens/s
// per GPU, with every rejected candidate counted by reason. Each candidate is one serve_predict evaluation.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "modeler/serving/serve_predict.h"

namespace shardplan::serving {

struct SearchTargets {
  double ttft_ms = 0;  // 0: no target
  double tpot_ms = 0;
};
/// The rejection reason of a prediction that misses a target ("ttft_target", "tpot_target"), empty when it meets
/// both (the aggregated and the disaggregated search share it).
const char* missed_target(const ServePrediction& p, const SearchTargets& t);

struct ServeSearchSpace {
  int gpus = 8;
  std::vector<int> tp = {1, 2, 4, 8};
  std::vector<int> pp = {1, 2, 4};
  std::vector<int> attention_dp = {1, 2, 4, 8};                      // MoE models only
  std::vector<int> batch = {1, 2, 4, 8, 16, 32, 64, 128, 256, 512};  // sequences per attention-DP rank
};

struct SearchCandidate {
  ServingPlan plan;
  int concurrency = 0;
  ServePrediction prediction;
};

struct ServeSearchResult {
  std::vector<SearchCandidate> ranked;  // best first
  std::map<std::string, int> rejected;  // reason -> count
  int evaluated = 0;
};

/// Worker shapes of one pool: tp x pp (x attention_dp for MoE models) with two MoE splits, expert parallel over
/// the tp x attention_dp group (the engines' EP mode) and pure expert tensor parallelism without attention DP; the
/// aggregated and the disaggregated search both enumerate these (workers and batch unset).
std::vector<WorkerPlan> worker_shapes(const ModelDesc& m, const ServeSearchSpace& space, const std::vector<int>& pps);

/// `base` supplies model, system, engine, workload lengths and memory options; plan and concurrency are searched
/// (concurrency = replicas x attention_dp x batch: the closed loop that keeps every slot busy).
ServeSearchResult serve_search(const ServeInputs& base, const ServeSearchSpace& space, const SearchTargets& t);

/// Engine settings of a search beyond the plan's shape that its launch arguments must carry.
struct LaunchExtras {
  double mem_fraction = 0;    // --mem-fraction; 0: the engine default (no flag)
  bool prefix_cache = false;  // the workload has prefix-cache hits: the engine's prefix cache must be on
};

/// Launch arguments of the engines for one aggregated plan, with the speculative-decoding arguments of `spec`
/// (spec_engine_args, speculative.h; `draft` names the draft checkpoint) when it is on, and the memory fraction
/// and prefix cache of `x`.
std::string engine_args(Engine e, const std::string& model, const WorkerPlan& w, int kv_fp8,
                        const SpecDecode& spec = {}, const std::string& draft = "", const LaunchExtras& x = {});

}  // namespace shardplan::serving
