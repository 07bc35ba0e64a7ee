// Hybrid sharded data parallelism (HSDP): the data-parallel ranks form replicate groups of shard groups. Model
// states are sharded (ZeRO/FSDP) inside a shard group of dp_shard x cp ranks and replicated across the
// dp / dp_shard groups, so the sharded collectives stay inside the shard group (a node, typically) and only one
// all-reduce of each rank's gradient shard crosses the replicas. As frameworks spell it:
//   torchtitan: parallelism.data_parallel_shard_degree x data_parallel_replicate_degree (FSDP2 on a 2-D mesh:
//     reduce-scatter over the shard dim, then all-reduce over the replicate dim, per unit in backward);
//   PyTorch FSDP1 (llm-foundry): ShardingStrategy.HYBRID_SHARD / _HYBRID_SHARD_ZERO2;
//   Megatron-Core: --num-distributed-optimizer-instances (dp x cp) / dp_shard (distributed optimizer only);
//   DeepSpeed: MiCS, zero_optimization.mics_shard_size (ZeRO-3).
#pragma once

#include "modeler/problems.h"
#include "modeler/strategies/strategy.h"

namespace shardplan {

/// Ranks the model states are sharded over: dp_shard x cp under HSDP, dp x cp otherwise.
int hsdp_shard_group(const Plan& p);
/// Copies of each shard: dp / dp_shard under HSDP, 1 otherwise.
int hsdp_replicas(const Plan& p);

/// Problems of the plan's dp_shard: not dividing dp, not below it, without a sharded stage the framework
/// offers hybrid, or combined with expert, folded or subnetwork data parallelism (not modelled).
void validate_hsdp(const Context& ctx, Problems* problems);

/// Caps the ZeRO divisors of the dense model states at the shard group.
void apply_hsdp_sharding(const Context& ctx, Sharding* sh);

/// Moves the data-parallel collectives of the dense parameters into the shard group, and follows each gradient
/// reduce-scatter with an all-reduce of the rank's gradient shard across the replicas (same scope and window:
/// FSDP2 and Megatron-Core issue it right after the reduce-scatter, on the communication stream).
void apply_hsdp_comm(const Context& ctx, CommPlan* comm);

}  // namespace shardplan
