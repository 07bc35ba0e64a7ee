#include "modeler/system.h"

#include <cmath>
#include <string>

#include "modeler/problems.h"

namespace shardplan {

void set_power_limit(Gpu* gpu, double watts) {
  if (gpu->tdp_w <= 0)
    throw ConfigError("power limit " + num(watts) + " W: the profile of " + gpu->name +
                      " states no tdp_w");
  if (!(watts > 0 && watts <= gpu->tdp_w))  // also nan; printed as %g, never cast to int
    throw ConfigError("power limit " + num(watts) + " W is outside (0, " + num(gpu->tdp_w) + "] W, the TDP of " +
                      gpu->name);
  gpu->clock_scale = std::cbrt(watts / gpu->tdp_w);
}

int System::tier_for_group(int size, int stride) const {
  SHARDPLAN_CHECK(!tiers.empty());
  // A group of `size` ranks at `stride` spans (size-1)*stride+1 consecutive ranks; with Megatron's contiguous
  // rank order it stays inside a domain when that span fits and the domain boundaries align with the span.
  const long long span = static_cast<long long>(size - 1) * stride + 1;
  for (size_t i = 0; i + 1 < tiers.size(); ++i)
    if (tiers[i].domain_gpus > 0 && span <= tiers[i].domain_gpus) return static_cast<int>(i);
  return static_cast<int>(tiers.size() - 1);
}

}  // namespace shardplan
