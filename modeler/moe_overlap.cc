#include "modeler/moe_overlap.h"

#include <algorithm>

namespace shardplan {

MoeDispatcher moe_dispatcher_of(const Plan& p, const Framework& f) {
  if (p.moe_dispatcher) return *p.moe_dispatcher;
  return f.moe_dispatchers.empty() ? MoeDispatcher::alltoall : f.moe_dispatchers.front();
}

double paired_fraction(int pp, int vpp, int microbatches) {
  const double m = std::max(1, microbatches);
  if (pp <= 1) return std::max(0.0, (m - 1.0) / m);
  const double v = std::max(1, vpp);
  const double warmup = v > 1 ? 2.0 * (pp - 1) + (v - 1) * pp : pp - 1.0;
  const double passes = m * v;
  return std::clamp(1.0 - warmup / passes, 0.0, 1.0);
}

double paired_exposed_fraction(const PairedLayer& l, double paired) {
  const Seconds comm = l.comm_f + l.comm_b;
  if (comm.v <= 0) return 0.0;
  auto excess = [](Seconds c, Seconds hide) { return std::max(0.0, (c - hide).v); };
  const Seconds half_f = l.comm_f * 0.5, half_b = l.comm_b * 0.5;
  const double shown =
      excess(half_b, l.attn_f) + excess(half_f, l.moe_b) + excess(half_b, l.moe_f) + excess(half_f, l.attn_b);
  const double p = std::clamp(paired, 0.0, 1.0);
  const double exposed = p * shown / comm.v + (1.0 - p);
  return exposed + (1.0 - exposed) * std::clamp(l.comm_sm_share, 0.0, 1.0);
}

ScheduleCost schedule_cost(MoeSchedule s, int pp, Seconds f, Seconds b, Seconds w, Seconds fb) {
  ScheduleCost c;
  const double n = std::max(1, pp);
  switch (s) {
    case MoeSchedule::one_f_one_b:
      c.bubble = (f + b + w) * (n - 1.0);
      c.parameter_copies = 1;
      c.activation_stages = n;
      break;
    case MoeSchedule::dualpipe:
    case MoeSchedule::dualpipev: {
      const Seconds per = fb + b - w * 3.0;
      c.bubble = per.v > 0 ? per * std::max(0.0, n / 2.0 - 1.0) : Seconds(0);
      c.parameter_copies = s == MoeSchedule::dualpipe ? 2 : 1;
      c.activation_stages = n + 1.0;
      break;
    }
  }
  return c;
}

}  // namespace shardplan
