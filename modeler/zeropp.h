// DeepSpeed ZeRO++ (Wang et al. 2023, "ZeRO++: Extremely Efficient Collective Communication for Giant Model
// Training", arXiv 2306.10209), three changes to ZeRO-3's collectives, each a DeepSpeed config key:
//   qwZ  zero_quantized_weights: the forward parameter all-gather sends int8 with one fp32 scale per block
//        (partition_parameters.py CUDAQuantizer: blocks of up to 8,000 elements), half the 16-bit bytes;
//   hpZ  zero_hpz_partition_size: each rank keeps a secondary 16-bit shard of every parameter over a group of
//        that size (ds_secondary_tensor, param.dtype), so the backward all-gather stays inside that group
//        (a node) at the cost of params x 2 / hpz bytes of HBM;
//   qgZ  zero_quantized_gradients: the gradient reduce-scatter becomes an int4 all-to-all inside the node, a
//        dequantise-reduce-requantise, and an int4 all-to-all across nodes of 1/gpus-per-node of the data
//        (runtime/comm/coalesced_collectives.py all_to_all_quant_reduce).
// The quantise and dequantise kernels are memory-bound passes over the tensors, added to compute.
#pragma once

#include <optional>
#include <string>

#include "modeler/estimate.h"
#include "modeler/strategies/strategy.h"

namespace shardplan {

/// Bytes per element of a qwZ-quantised parameter: int8 plus an fp32 scale per block of 8,000 (the quantiser's
/// target group size, partition_parameters.py CUDAQuantizer.target_group_size).
constexpr double kQwzBytes = 1.0 + 4.0 / 8000.0;
/// Bytes per element of a qgZ-quantised gradient: int4 (the scales, one per row-sized group, are neglected).
constexpr double kQgzBytes = 0.5;

/// Parses "off", or "qwz", "qgz", "hpzN" (N ranks) joined by '+' ("qwz+hpz8+qgz"); nullopt with `*error` set
/// when a part is unknown or N is not an integer of at least 2.
std::optional<ZeroPP> parse_zeropp(const std::string& text, std::string* error);
/// The same spelling: "off" or "qwz+hpz8+qgz".
std::string zeropp_string(const ZeroPP& z);

/// Problems: ZeRO++ outside DeepSpeed ZeRO-3, an hpZ group not dividing dp, qgZ with model parallelism (its
/// all-to-alls group the whole world by node), or combined with hybrid sharding (MiCS) or parameter offload.
void validate_zeropp(const Context& ctx, Problems* problems);

/// Rewrites ZeRO-3's data-parallel collectives as ZeRO++ runs them.
void apply_zeropp_comm(const Context& ctx, CommPlan* comm);

/// Adds hpZ's secondary parameter shard to `mem->weights` (and the allocator's share of it).
void apply_zeropp_memory(const Context& ctx, const Sharding& sh, MemoryBreakdown* mem);

/// Seconds per step of the quantise and dequantise kernels (memory-bound HBM passes) on the busiest rank.
Seconds zeropp_kernel_time(const Context& ctx, const Sharding& sh, const Schedule& sched);

}  // namespace shardplan
