#include "modeler/validation.h"

#include <cmath>

#include "modeler/evaluate.h"

namespace shardplan {

namespace {
/// The micro-batch a framework sets by default when a run leaves it open, 0 where it is a free choice.
int default_micro_batch(const Plan& p, const Framework& fw) {
  if (!fw.pp_microbatches_default_to_pp || p.pp <= 1 || p.dp < 1 || p.global_batch % p.dp != 0) return 0;
  const int per_rank = p.global_batch / p.dp;
  return per_rank % p.pp == 0 ? per_rank / p.pp : 0;
}

std::vector<int> micro_batch_choices(const Plan& p) {
  std::vector<int> out;
  if (p.dp < 1 || p.global_batch % p.dp != 0) return {1};
  const int per_rank = p.global_batch / p.dp;
  for (int m = 1; m <= 16 && m <= per_rank; ++m)
    if (per_rank % m == 0) out.push_back(m);
  return out.empty() ? std::vector<int>{1} : out;
}
}  // namespace

namespace {
/// Replaces every plan by one copy per value of a field.
template <class T, class Set>
void expand(std::vector<Plan>* plans, const std::vector<T>& values, Set set) {
  std::vector<Plan> out;
  out.reserve(plans->size() * values.size());
  for (const Plan& p : *plans)
    for (const T& v : values) {
      Plan q = p;
      set(q, v);
      out.push_back(q);
    }
  *plans = std::move(out);
}
}  // namespace

Resolution fastest_fitting(const ModelDesc& model, const System& system, const OpenPlan& open, const Framework& fw,
                           bool framework_defaults) {
  const Plan& base = open.plan;
  std::vector<Plan> plans = {base};
  const int framework_mbs = open.micro_batch || !framework_defaults ? 0 : default_micro_batch(base, fw);
  expand(&plans,
         open.micro_batch ? std::vector<int>{*open.micro_batch}
         : framework_mbs  ? std::vector<int>{framework_mbs}
                          : micro_batch_choices(base),
         [](Plan& p, int m) { p.micro_batch = m; });
  expand(&plans,
         open.sequence_parallel ? std::vector<bool>{*open.sequence_parallel}
         : base.tp > 1          ? std::vector<bool>{true, false}
                                : std::vector<bool>{false},
         [](Plan& p, bool sp) { p.sequence_parallel = sp; });
  expand(&plans,
         open.recompute ? std::vector<Recompute>{*open.recompute}
                        : std::vector<Recompute>{Recompute::none, Recompute::selective, Recompute::full},
         [](Plan& p, Recompute r) { p.recompute = r; });

  Resolution best;
  bool have = false, have_fit = false;
  for (const Plan& p : plans) {
    Estimate e = evaluate(model, system, p, fw);
    ++best.candidates;
    if (e.time.compute.v <= 0) continue;  // invalid (e.g. micro-batch vs interleaving)
    const bool fits = e.memory.fits();
    const bool better =
        !have || (fits && !have_fit) || (fits == have_fit && e.time.step() < best.estimate.time.step());
    if (better) {
      best.estimate = std::move(e);
      have = true;
      have_fit = fits;
    }
  }
  best.fits = have_fit;
  if (!have) best.estimate = evaluate(model, system, base, fw);  // reports the constraint problems
  const Plan& p = best.estimate.plan;
  auto on_off = [](bool b) { return b ? std::string("on") : std::string("off"); };
  if (!open.micro_batch)
    best.chosen.push_back("mbs=" + std::to_string(p.micro_batch) + (framework_mbs ? " (pp micro-batches)" : ""));
  if (!open.sequence_parallel && base.tp > 1) best.chosen.push_back("sp=" + on_off(p.sequence_parallel));
  if (!open.recompute) best.chosen.push_back(std::string("recompute=") + to_string(p.recompute));
  return best;
}

double mape(const std::vector<double>& predicted, const std::vector<double>& measured) {
  if (predicted.empty()) return 0;
  double sum = 0;
  for (size_t i = 0; i < predicted.size(); ++i) sum += std::fabs(predicted[i] - measured[i]) / measured[i];
  return 100.0 * sum / static_cast<double>(predicted.size());
}

}  // namespace shardplan
