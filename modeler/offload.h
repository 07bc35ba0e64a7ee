// Optimizer offload: a fraction of each rank's fp32 master weights and Adam states lives in host memory and a
// CPU Adam steps it (ZeRO-Offload, Ren et al. 2021; Megatron-Core's HybridDeviceOptimizer). Memory moves from HBM
// to the host; the step adds the gradient copy to the host, the CPU step and the parameter copy back, overlapped
// as the framework does (framework.h OptimizerOffloadKind).
#pragma once

#include "modeler/estimate.h"
#include "modeler/strategies/strategy.h"

namespace shardplan {

/// Problems of the plan's optimizer_offload: a fraction outside [0, 1], a framework without offload, no ZeRO
/// stage (both implementations shard the optimizer first), or a system whose host DRAM bandwidth is not stated.
void validate_offload(const Context& ctx, Problems* problems);

/// Moves the offloaded share of optimizer states (and for ZeRO-Offload at stage 2 and above, the gradients) from
/// `mem` to the host, adds the exposed offload time to `t->optimizer`, and fills `out`. No-op without offload.
/// The CPU step streams kAdamBytesPerParam per parameter through host DRAM (memory-bound: a 2-socket Xeon's
/// AVX-512 units exceed the bytes' arithmetic many times over); copies run at the GPU's host-link bandwidth.
void apply_offload(const Context& ctx, const Sharding& sh, MemoryBreakdown* mem, TimeBreakdown* t,
                   OffloadEstimate* out);

}  // namespace shardplan
