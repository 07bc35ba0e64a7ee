// serve search over several GPU types and objectives: the --gpu list and its prices, one search per type, and the
// one ranking of every plan they found (aggregated and disaggregated) by the objective (serve_objective.h), with
// its text table and JSON. The single-type aggregated search under the default objective keeps its own, older
// table (serve_search.cc).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "modeler/serving/disagg_search.h"
#include "modeler/serving/serve_objective.h"
#include "modeler/serving/serve_search.h"

namespace shardplan::cli {

/// "h100-sxm5-80gb,b200" -> the names; ConfigError naming --gpu for an empty or repeated name.
std::vector<std::string> split_gpu_list(const std::string& list);

/// Price per GPU-hour of each GPU type, in the order of `gpus` (0: none given). `one_price` (--gpu-hour-price,
/// 0: not given) serves a single type; `price_list` (--price NAME=P,...) names every type of several. ConfigError
/// (exit 2) naming the flag for: both given; --gpu-hour-price with several types; a malformed, non-positive,
/// repeated or unlisted entry; a listed type without a price; per-dollar with no price.
std::vector<double> gpu_prices(const std::vector<std::string>& gpus, double one_price, const std::string& price_list,
                               serving::ServeObjective objective);

/// One GPU type's searches.
struct TypeSearch {
  std::string name;  // as given to --gpu (or the --system file)
  System system;
  double price = 0;  // per GPU-hour; 0: none
  serving::ServeSearchResult agg;
  serving::DisaggSearchResult disagg;
  int prefill_batch = 0;  // the disaggregated search's prompts per prefill step
};

/// One ranked plan: an aggregated or a disaggregated candidate of type `type`.
struct RankedPlan {
  size_t type = 0;
  const serving::SearchCandidate* agg = nullptr;
  const serving::DisaggCandidate* dis = nullptr;
  double per_gpu = 0;  // output tokens/s per GPU of --gpus (idle GPUs count)
  double score = 0;    // objective_score: larger is better
  const serving::ServePrediction& pred() const { return agg ? agg->prediction : dis->prediction; }
};

/// Every plan of every type, best first by `objective` (stable: ties keep type order, aggregated before
/// disaggregated, each search's own order).
std::vector<RankedPlan> rank_plans(const std::vector<TypeSearch>& types, serving::ServeObjective objective, int gpus);

/// What the output needs beyond the searches.
struct RankContext {
  std::string model_arg, model_name, mode, transforms, weights_note;
  serving::Engine engine = serving::Engine::vllm;
  serving::ServeObjective objective = serving::ServeObjective::per_gpu;
  serving::Workload workload;
  serving::SearchTargets targets;
  serving::LaunchExtras extras;
  serving::SpecDecode spec;
  std::string draft_name;
  int gpus = 0, top = 10, kv_fp8 = 0;
};

/// The header lines under the title: the weights rule, the transforms and the prefix-cache hit rate, when set.
void print_search_notes(const RankContext& ctx);

/// Prints the ranking as a table (a GPU column with several types, $/Mtok when prices are given, total tok/s
/// under the throughput objective), each search's rejections and the best plan's launch arguments. Throws
/// Infeasible when no plan meets the targets.
void print_ranked(const RankContext& ctx, const std::vector<TypeSearch>& types, const std::vector<RankedPlan>& rows);
nlohmann::json ranked_json(const RankContext& ctx, const std::vector<TypeSearch>& types,
                           const std::vector<RankedPlan>& rows);

}  // namespace shardplan::cli
