// What `serve search` ranks its plans by: output tokens/s per GPU (the default), cost per million output tokens
// at a GPU-hour price the user gives, or total output tokens/s. Plans of several GPU types are ranked together on
// one key, so a plan carries its type's price beside its throughput.
//
// Prices are inputs, never shipped: they are not physics (they differ by cloud, contract and month). The
// arithmetic is the training side's cost rule (run_cost.h: cost = GPU-hours x price per GPU-hour) applied to a
// serving rate: one GPU-hour at r output tokens/s per GPU makes 3600 r tokens, so a million tokens costs
// price x 1e6 / (3600 r).
#pragma once

#include <optional>
#include <string>

namespace shardplan::serving {

enum class ServeObjective { per_gpu, per_dollar, throughput };
inline constexpr const char* kServeObjectiveNames[] = {"per-gpu", "per-dollar", "throughput"};
const char* to_string(ServeObjective o);
/// nullopt for an unknown name.
std::optional<ServeObjective> parse_serve_objective(const std::string& name);

/// Cost of one million output tokens at `gpu_hour_price` per GPU-hour and `tokens_per_s_per_gpu` output tokens/s
/// per GPU (idle GPUs of the budget included in the per-GPU rate). Infinite for a rate of 0.
double cost_per_mtok(double gpu_hour_price, double tokens_per_s_per_gpu);

/// The figures of one ranked plan the objectives read.
struct PlanRate {
  double tokens_per_s_per_gpu = 0;  // output tokens/s per GPU of the budget
  int gpus = 0;                     // GPUs of the budget (--gpus)
  double gpu_hour_price = 0;        // 0: no price given
};

/// The ranking key, larger is better: tokens/s per GPU (per-gpu), tokens per unit of money (per-dollar: the
/// inverse of cost_per_mtok, so it ranks as $/Mtok ascending) or tokens/s over the budget (throughput).
/// per-dollar needs a positive price (the caller checks; 0 here ranks last).
double objective_score(ServeObjective o, const PlanRate& r);

}  // namespace shardplan::serving
