// serve search, disaggregated (xPyD): x prefill workers of one shape and y decode workers of another on at most
// `gpus` GPUs, each plan one serve_predict evaluation (its disaggregated mode), filtered by the same targets and
// rejection reasons as the aggregated search, ranked by output tokens/s per GPU of the budget (idle GPUs count).
//
// The space and its pruning:
// - prefill shapes: tp x pp (x attention_dp, with the aggregated search's two MoE splits); the prefill batch is
//   fixed by the step budget: max(1, floor(max_num_tokens / input_len)) prompts per attention-DP rank per step
//   (the engine default budget when the plan gives none). Prefill shapes another shape dominates are dropped
//   before pairing: one with a longer prefill step, fewer prompts/s per GPU and at least as many GPUs per worker
//   (worker sizes that divide each other), since any pool of it is matched by a pool of the other on no more GPUs.
// - decode shapes: tp (x attention_dp, MoE splits), pp 1, batch per attention-DP rank from the batch ladder.
// - concurrency = y x attention_dp(decode) x batch, the aggregated rule applied to the decode slots: the requests
//   in the system are the decode pool's slots (a request in prefill holds the slot it will decode in).
// - counts: for each y, x is the fewest prefill workers whose capacity (x x attention_dp x prompts / prefill step)
//   covers the decode pool's request rate (y x attention_dp x batch / (prefill step + (output_len - 1) x decode
//   step)); x is raised while serve_predict still finds the prefill pool the bottleneck. A plan whose x does not
//   fit beside y decode workers is rejected "prefill_cannot_keep_up". x*P + y*D <= gpus (not equality): the GPUs
//   left over are reported idle, and the ranking charges them to the plan.
#pragma once

#include "modeler/serving/serve_search.h"

namespace shardplan::serving {

struct DisaggCandidate {
  ServingPlan plan;  // mode disaggregated; prefill and decode carry shape, workers and batch
  int concurrency = 0;
  int gpus_used = 0;
  int idle_gpus = 0;
  double prefill_capacity_rps = 0;  // requests/s the prefill pool can take
  double request_rate_rps = 0;      // requests/s the plan serves
  double output_tokens_per_s_per_gpu_budget = 0;  // the ranking key: total output tokens/s / gpus given
  ServePrediction prediction;       // its output_tokens_per_s_per_gpu is per GPU used
};

struct DisaggSearchResult {
  std::vector<DisaggCandidate> ranked;  // best first
  std::map<std::string, int> rejected;  // reason -> count
  int evaluated = 0;                    // serve_predict evaluations of (x, y) plans
  int prefill_stepped = 0;              // evaluations that found the prefill pool the bottleneck (then x + 1)
  int prefill_shapes = 0, prefill_shapes_kept = 0;  // before and after the dominance pruning
};

/// `base` supplies model, system, engine, workload lengths, memory options and plan.max_num_tokens; the two pools,
/// their counts and the concurrency are searched. space.gpus is the budget.
DisaggSearchResult disagg_search(const ServeInputs& base, const ServeSearchSpace& space, const SearchTargets& t);

/// Prompts per attention-DP rank in one prefill step: max(1, floor(budget / input_len)).
int prefill_batch(int max_num_tokens, int input_len);

/// The flags one pool's workers need on top of engine_args for disaggregated serving, and the router that joins
/// the pools (sourced per engine in disagg_search.cc).
struct DisaggLaunch {
  std::string prefill_flags, decode_flags, router;
};
DisaggLaunch disagg_launch(Engine e, int prefill_workers, int decode_workers);

}  // namespace shardplan::serving
