#include "modeler/system.h"

#include "modeler/problems.h"

namespace shardplan {

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
