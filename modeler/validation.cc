#include "modeler/validation.h"

#include <cmath>

#include "modeler/evaluate.h"

namespace shardplan {

namespace {
std::vector<int> micro_batch_choices(const Plan& p) {
  std::vector<int> out;
  if (p.dp < 1 || p.global_batch % p.dp != 0) return {1};
  const int per_rank = p.global_batch / p.dp;
  for (int m = 1; m <= 16 && m <= per_rank; ++m)
    if (per_rank % m == 0) out.push_back(m);
  return out.empty() ? std::vector<int>{1} : out;
}
}  // namespace

Resolution fastest_fitting(const ModelDesc& model, const System& system, const OpenPlan& open, const Framework& fw) {
  const Plan& base = open.plan;
  const std::vector<int> mbs = open.micro_batch ? std::vector<int>{*open.micro_batch} : micro_batch_choices(base);
  std::vector<bool> sps = {false};
  if (open.sequence_parallel) sps = {*open.sequence_parallel};
  else if (base.tp > 1) sps = {true, false};
  std::vector<Recompute> recs = {Recompute::none, Recompute::selective, Recompute::full};
  if (open.recompute) recs = {*open.recompute};

  Resolution best;
  bool have = false, have_fit = false;
  for (int m : mbs)
    for (bool sp : sps)
      for (Recompute r : recs) {
        Plan p = base;
        p.micro_batch = m;
        p.sequence_parallel = sp;
        p.recompute = r;
        Estimate e = evaluate(model, system, p, fw);
        ++best.candidates;
        if (e.time.compute.v <= 0) continue;  // invalid (e.g. micro-batch vs interleaving)
        const bool fits = e.memory.fits();
        const bool better = !have || (fits && !have_fit) ||
                            (fits == have_fit && e.time.step() < best.estimate.time.step());
        if (better) {
          const int candidates = best.candidates;
          best = Resolution{};
          best.candidates = candidates;
          best.estimate = std::move(e);
          have = true;
          have_fit = fits;
        }
      }
  best.fits = have_fit;
  if (!have) best.estimate = evaluate(model, system, base, fw);  // reports the constraint problems
  const Plan& p = best.estimate.plan;
  if (!open.micro_batch) best.chosen.push_back("mbs=" + std::to_string(p.micro_batch));
  if (!open.sequence_parallel && base.tp > 1) best.chosen.push_back(std::string("sp=") + (p.sequence_parallel ? "on" : "off"));
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
