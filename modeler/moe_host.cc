#include "modeler/moe_host.h"

#include "modeler/moe_overlap.h"

namespace shardplan {

MoeHostCost moe_host_cost(const Plan& p, const Framework& f, const Gpu& gpu) {
  const MoeDispatcher d = moe_dispatcher_of(p, f);
  // Each small kernel pays the GPU's launch-and-ramp overhead (the profile's kernel_overhead).
  const Seconds kernels = gpu.eff.kernel_overhead *
                          static_cast<double>(moe_layer_small_kernels(d, f.fused_moe_permutation, f.fused_moe_router));
  MoeHostCost c;
  c.kernels = kernels;
  // Token-drop routing pads every expert to its capacity (Megatron-Bridge apply_moe_token_drop sets
  // moe_pad_expert_input_to_capacity): fixed shapes, no wait.
  const bool padded = p.capacity_factor > 0;
  if (syncs_token_counts(d, padded)) c.sync = Seconds(kEagerOpHostSeconds * kKernelsAfterTokenSync);
  return c;
}

}  // namespace shardplan
