#include "modeler/search.h"

#include <algorithm>
#include <chrono>
#include <exception>
#include <thread>
#include <tuple>

#include "modeler/evaluate.h"
#include "modeler/framework_rules.h"

namespace shardplan {

namespace {

/// What the search keeps of a plan while it runs: enough to rank it; full estimates are recomputed for the few
/// plans reported.
struct Record {
  Plan plan;
  double step_s = 0;
  double memory = 0;    // bytes per GPU
  double overflow = 0;  // bytes over capacity - headroom (misses only)
};

auto plan_key(const Plan& p) {
  return std::make_tuple(p.tp, p.cp, p.pp, p.vpp, p.dp, p.zero, p.sequence_parallel, p.tp_comm_overlap, p.micro_batch,
                         static_cast<int>(p.recompute), static_cast<int>(p.precision), static_cast<int>(p.cp_kind),
                         p.ep, p.etp, p.global_batch, p.seq_len, p.tsp, p.sdp_keep, static_cast<int>(p.sdp_mask),
                         p.uneven_pipeline, p.ep_comm_overlap, p.recompute_layers, p.recompute_modules,
                         p.optimizer_offload, p.moe_dispatcher, p.moe_max_nodes);
}

bool record_less(const Record& a, const Record& b) {
  if (a.step_s != b.step_s) return a.step_s < b.step_s;
  if (a.memory != b.memory) return a.memory < b.memory;
  return plan_less(a.plan, b.plan);
}

bool miss_less(const Record& a, const Record& b) {
  if (a.overflow != b.overflow) return a.overflow < b.overflow;
  return record_less(a, b);
}

struct WorkerState {
  std::vector<Record> fits, misses;
  std::map<std::string, uint64_t> rejected;
  uint64_t evaluated = 0;
};

void run_layouts(const ModelDesc& model, const System& system, const Framework& fw, const PlanSpace& space,
                 const SearchOptions& opt, std::atomic<size_t>* next_layout, std::atomic<uint64_t>* done,
                 const std::atomic<bool>* failed, WorkerState* out) {
  for (size_t li = next_layout->fetch_add(1); li < space.layouts.size(); li = next_layout->fetch_add(1)) {
    const Layout& l = space.layouts[li];
    const uint64_t n = space.layout_size(l);
    for (uint64_t k = 0; k < n; ++k) {
      if (opt.cancel && opt.cancel->load(std::memory_order_relaxed)) return;
      if (failed->load(std::memory_order_relaxed)) return;  // another worker threw
      const Plan p = space.plan_at(l, k);
      const Estimate e = evaluate(model, system, p, fw);
      ++out->evaluated;
      const bool has_time = e.time.compute.v > 0;
      const double overflow = has_time ? memory_overflow(e, opt.headroom).v : 0;
      if (e.feasible() && overflow <= 0) {
        out->fits.push_back({p, e.time.step().v, e.memory.total().v, 0});
        continue;
      }
      const std::string& code = e.feasible() ? std::string("headroom") : e.problems.front().code;
      ++out->rejected[code];
      // A miss is a valid plan that only lacks memory: it has a time breakdown and nothing but memory is wrong.
      if (has_time && overflow > 0 && (e.feasible() || e.problems.size() == 1))
        out->misses.push_back({p, e.time.step().v, e.memory.total().v, overflow});
    }
    done->fetch_add(n, std::memory_order_relaxed);
    // Keep memory bounded: only the nearest misses are ever reported.
    const size_t keep = static_cast<size_t>(std::max(opt.nearest_misses, 0));
    if (out->misses.size() > 4096 + keep) {
      std::nth_element(out->misses.begin(), out->misses.begin() + static_cast<long>(keep), out->misses.end(),
                       miss_less);
      out->misses.resize(keep);
    }
  }
}

/// Plans on the front of (step time, memory): no other plan is both faster and smaller. `sorted` is in
/// record_less order.
std::vector<Record> pareto_front(const std::vector<Record>& sorted, int max_points) {
  std::vector<Record> front;
  for (const Record& r : sorted)
    if (front.empty() || r.memory < front.back().memory) front.push_back(r);
  if (max_points > 0 && front.size() > static_cast<size_t>(max_points)) {
    // Keep the two ends and evenly spaced points between them.
    std::vector<Record> thin;
    const double stride = (static_cast<double>(front.size()) - 1.0) / (max_points - 1.0);
    for (int i = 0; i < max_points; ++i) thin.push_back(front[static_cast<size_t>(i * stride + 0.5)]);
    front = thin;
  }
  return front;
}

}  // namespace

uint64_t rank_among(const SearchResult& r, double step_s) {
  const auto faster = std::lower_bound(r.fit_steps_s.begin(), r.fit_steps_s.end(), step_s);
  return 1 + static_cast<uint64_t>(faster - r.fit_steps_s.begin());
}

bool plan_less(const Plan& a, const Plan& b) { return plan_key(a) < plan_key(b); }

bool estimate_less(const Estimate& a, const Estimate& b) {
  const double sa = a.time.step().v, sb = b.time.step().v;
  if (sa != sb) return sa < sb;
  const double ma = a.memory.total().v, mb = b.memory.total().v;
  if (ma != mb) return ma < mb;
  return plan_less(a.plan, b.plan);
}

Bytes memory_overflow(const Estimate& e, Bytes headroom) {
  const double over = e.memory.total().v + headroom.v - e.memory.capacity.v;
  return Bytes(over > 0 ? over : 0);
}

std::string rejection_label(const std::string& code) {
  static const std::map<std::string, std::string> labels = {
      {"tp_divides_heads", "tp does not divide heads"},
      {"tp_divides_kv_heads", "tp does not divide kv_heads"},
      {"tp_divides_ffn", "tp does not divide ffn_hidden"},
      {"pp_divides_layers", "pp x vpp does not divide layers"},
      {"pp_exceeds_layers", "pp exceeds layers"},
      {"vpp_microbatches", "interleaving needs micro-batches divisible by pp"},
      {"dp_divides_batch", "micro-batch x dp does not divide the global batch"},
      {"cp_divides_seq", "2 x cp does not divide the sequence"},
      {"gpus_product", "degrees do not multiply to the GPU count"},
      {"precision_unsupported", "precision not supported by the GPU"},
      {"headroom", "fits, but with less than the required headroom"},
      {"zero_unsupported", "ZeRO stage not offered by the framework"},
      {"tp_overlap_unsupported", "TP overlap not offered by the framework"},
      {"ep_overlap_unsupported", "MoE all-to-all overlap not offered by the framework"},
      {"moe_max_nodes_unsupported", "node-limited MoE routing not offered by the framework"},
      {"tsp_exclusive", "tsp with tp or cp on the same ranks"},
      {"tsp_divides_heads", "tsp does not divide heads"},
      {"tsp_divides_kv_heads", "tsp does not divide kv_heads"},
      {"tsp_divides_ffn_hidden", "tsp does not divide ffn_hidden"},
      {"tsp_divides_seq", "2 x tsp does not divide the sequence"},
      {"sdp_holders", "sdp keep x dp not a whole number of workers"},
      {"recompute_layers_exceed_chunk", "recompute layers exceed a pipeline chunk's"},
      {"recompute_layers_unsupported", "block recompute not offered by the framework"},
      {"recompute_modules_unsupported", "recompute modules not offered by the framework"},
      {"recompute_modules_need_moe", "MoE recompute modules on a model without them"},
      {"recompute_modules_need_mla", "mla_up_proj recompute without MLA"},
  };
  if (auto it = labels.find(code); it != labels.end()) return it->second;
  if (const char* rule = framework_rule_summary(code)) return rule;
  if (code.rfind("oom_", 0) == 0) return "out of memory (largest item: " + code.substr(4) + ")";
  std::string s = code;
  std::replace(s.begin(), s.end(), '_', ' ');
  return s;
}

SearchResult search(const ModelDesc& model, const System& system, const Framework& fw, const PlanSpace& space,
                    const SearchOptions& opt) {
  SearchResult result;
  result.space_size = space.size();
  int threads = opt.threads > 0 ? opt.threads : static_cast<int>(std::thread::hardware_concurrency());
  threads = std::max(1, std::min<int>(threads, static_cast<int>(space.layouts.size())));

  std::vector<WorkerState> states(static_cast<size_t>(threads));
  std::atomic<size_t> next_layout{0};
  std::atomic<uint64_t> done{0};
  std::atomic<int> running{threads};
  // An exception escaping a std::thread terminates the process: each worker keeps its own, stops the others, and
  // the first is rethrown here as the request's error (ConfigError stays exit 2, a broken invariant exit 1).
  std::vector<std::exception_ptr> errors(static_cast<size_t>(threads));
  std::atomic<bool> failed{false};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      try {
        run_layouts(model, system, fw, space, opt, &next_layout, &done, &failed, &states[static_cast<size_t>(t)]);
      } catch (...) {
        errors[static_cast<size_t>(t)] = std::current_exception();
        failed.store(true);
      }
      running.fetch_sub(1);
    });
  // The calling thread only reports progress, so the callback never runs concurrently with itself.
  auto last = std::chrono::steady_clock::now();
  while (running.load() > 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    if (opt.progress && std::chrono::steady_clock::now() - last > std::chrono::milliseconds(100)) {
      opt.progress(done.load(), result.space_size);
      last = std::chrono::steady_clock::now();
    }
  }
  for (std::thread& th : pool) th.join();
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);
  if (opt.progress) opt.progress(done.load(), result.space_size);
  result.cancelled = opt.cancel && opt.cancel->load();

  std::vector<Record> fits, misses;
  for (WorkerState& s : states) {
    result.evaluated += s.evaluated;
    for (const auto& [code, n] : s.rejected) result.rejected[code] += n;
    fits.insert(fits.end(), s.fits.begin(), s.fits.end());
    misses.insert(misses.end(), s.misses.begin(), s.misses.end());
  }
  result.feasible = fits.size();
  std::sort(fits.begin(), fits.end(), record_less);
  if (opt.keep_fit_steps)
    for (const Record& r : fits) result.fit_steps_s.push_back(r.step_s);
  std::sort(misses.begin(), misses.end(), miss_less);

  auto full = [&](const Record& r) { return evaluate(model, system, r.plan, fw); };
  for (size_t i = 0; i < fits.size() && i < static_cast<size_t>(std::max(opt.top_k, 0)); ++i)
    result.top.push_back(full(fits[i]));
  for (const Record& r : pareto_front(fits, opt.pareto_max)) result.pareto.push_back(full(r));
  for (size_t i = 0; i < misses.size() && i < static_cast<size_t>(std::max(opt.nearest_misses, 0)); ++i)
    result.nearest_misses.push_back(full(misses[i]));
  return result;
}

}  // namespace shardplan
