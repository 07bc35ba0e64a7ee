// Time of one collective on the tier its group spans: an alpha-beta model in the nccl-tests convention,
//   t = steps x latency + S x busbw_factor / (bw_per_gpu x busbw_eff(S)),
// where S is the nccl-tests size of the call and busbw_eff the achieved fraction the profile measured.
#pragma once

#include "modeler/system.h"
#include "modeler/workload.h"

namespace shardplan {

/// Latency steps: the ring's sequential steps inside a tier; across a scale-out tier all-reduce uses NCCL's tree
/// when that is shorter (2 log2 n, NCCL tuning.cc), as NCCL picks tree for latency at scale. Send/recv and
/// all-to-all (every peer in flight at once) take one step.
double latency_steps(Collective c, int n, bool scale_out);

/// Latency of a collective over g ranks in each of k inner domains: NCCL's ring splits its steps between the
/// inner tier and the network; all-reduce takes the shorter of ring and tree.
Seconds hierarchical_latency(const Tier& inner, const Tier& outer, Collective c, int g, int k);

/// The bandwidth a collective of nccl-tests size `size` achieves on `tier`: bw_per_gpu x the tier's busbw fraction
/// for that collective and size, over its oversubscription.
BytesPerSec achieved_bandwidth(const Tier& tier, Collective c, Bytes size);

/// Seconds of one call of `op` (count is not applied); an op with fixed_s >= 0 takes that.
Seconds collective_time(const System& sys, const CommOp& op);

}  // namespace shardplan
