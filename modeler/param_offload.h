// Offload beyond the optimizer: parameters (DeepSpeed ZeRO-Infinity offload_param, PyTorch FSDP
// CPUOffload(offload_params=True) / FSDP2 CPUOffloadPolicy), activations (Megatron-Core / Transformer Engine
// --cpu-offloading-num-layers), and NVMe as a third tier (DeepSpeed offload_optimizer / offload_param device
// nvme). Memory moves from HBM to host DRAM or NVMe; time adds the per-layer copies over the host link, hidden
// behind the layer they prefetch for or drain from as far as that layer's compute lasts (each implementation
// copies on a side stream), and NVMe swaps of the optimizer states around the CPU step.
#pragma once

#include "modeler/estimate.h"
#include "modeler/layer_cost.h"
#include "modeler/strategies/strategy.h"

namespace shardplan {

/// Problems of param_offload, offload_device and activation_offload_layers: a framework without them, a ZeRO
/// stage they do not run at, DeepSpeed's parameter offload without its optimizer offload, an NVMe tier the
/// profile does not state, or Megatron's activation offload with pipeline parallelism or recompute (refused by
/// TransformerConfig).
void validate_param_offload(const Context& ctx, Problems* problems);

/// Applies parameter, activation and NVMe offload after the optimizer offload (apply_offload): moves their
/// bytes from `mem` to the host or NVMe, adds the exposed per-layer copies to `t->host_transfer` and the CPU step
/// (FSDP CPU offload) or NVMe swaps (ZeRO-Infinity) to `t->optimizer`, and fills `out`.
void apply_param_offload(const Context& ctx, const Sharding& sh, const Schedule& sched, const LayerCost& layer,
                         MemoryBreakdown* mem, TimeBreakdown* t, OffloadEstimate* out);

}  // namespace shardplan
