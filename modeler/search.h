// Search: evaluates every plan of a PlanSpace on all cores and returns the fastest that fit, the Pareto front of
// step time vs memory headroom, the nearest misses, and how many plans each reason rejected (style L7: the
// breakdown is what a user needs when nothing fits). Results do not depend on the thread count: every list is
// sorted by a total order (step time, memory, then the plan's fields).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "modeler/estimate.h"
#include "modeler/framework.h"
#include "modeler/model_desc.h"
#include "modeler/plan_space.h"
#include "modeler/system.h"

namespace shardplan {

struct SearchOptions {
  int top_k = 10;
  int threads = 0;          // 0: std::thread::hardware_concurrency()
  Bytes headroom;           // memory a plan must leave free on every GPU to count as fitting
  int nearest_misses = 3;   // plans that overflow memory the least, for --explain
  int pareto_max = 20;      // Pareto points kept (evenly from the fastest to the most headroom)
  /// Polled between plans; when it becomes true the search stops and returns what it has (cancelled = true).
  const std::atomic<bool>* cancel = nullptr;
  /// Called on the calling thread about 10 times a second with plans done and total.
  std::function<void(uint64_t done, uint64_t total)> progress;
  /// Keep every fitting plan's step time (SearchResult::fit_steps_s), to rank a plan from outside the search.
  bool keep_fit_steps = false;
};

struct SearchResult {
  uint64_t space_size = 0;
  uint64_t evaluated = 0;
  uint64_t feasible = 0;
  std::vector<Estimate> top;             // fastest first
  std::vector<Estimate> pareto;          // fastest first; each has more headroom than every faster one
  std::vector<Estimate> nearest_misses;  // smallest memory overflow first
  std::map<std::string, uint64_t> rejected;  // by the first problem's code; "headroom": fits, headroom too small
  bool cancelled = false;
  std::vector<double> fit_steps_s;  // with keep_fit_steps: every fitting plan's step time, fastest first
};

/// The rank a plan of step `step_s` would take among the fitting plans: 1 + those strictly faster.
uint64_t rank_among(const SearchResult& r, double step_s);

SearchResult search(const ModelDesc& model, const System& system, const Framework& framework, const PlanSpace& space,
                    const SearchOptions& options);

/// The total order on plans used to break ties (degrees, then options).
bool plan_less(const Plan& a, const Plan& b);
/// The total order on estimates: step time, then memory, then plan_less.
bool estimate_less(const Estimate& a, const Estimate& b);

/// A rejection code in words: "tp_divides_kv_heads" -> "tp does not divide kv_heads",
/// "oom_activations" -> "out of memory (largest item: activations)".
std::string rejection_label(const std::string& code);

/// Memory a plan must add to fit with `headroom` free (0 when it fits).
Bytes memory_overflow(const Estimate& e, Bytes headroom);

}  // namespace shardplan
