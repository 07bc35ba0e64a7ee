#include "modeler/collectives.h"

#include <algorithm>
#include <cmath>

namespace shardplan {

double latency_steps(Collective c, int n, bool scale_out) {
  if (n <= 1) return 0;
  // Sequential steps of the ring algorithm (NCCL tuning.cc nsteps): all-reduce 2(n-1), others n-1. A send/recv
  // is one transfer, and so is an all-to-all: it is not a ring but every peer's send and receive posted in one
  // NCCL group, all in flight together (nccl-tests src/alltoall.cu). Sanity check against a measurement: 8 MiB
  // over 64 H800 ranks (8 nodes) took 338 us (NVIDIA/nccl#1531); one step predicts ~190 us at 43 GB/s per NIC,
  // a ring's 63 steps ~1,070 us.
  const bool one_step = c == Collective::send_recv || c == Collective::all_to_all;
  const double ring = one_step ? 1.0 : c == Collective::all_reduce ? 2.0 * (n - 1) : n - 1.0;
  if (scale_out && c == Collective::all_reduce) return std::min(ring, 2.0 * std::ceil(std::log2(n)));
  return ring;
}

namespace {

BytesPerSec achieved_bw(const Tier& tier, Collective c, Bytes size) {
  const Curve& own = tier.busbw_eff_by[static_cast<int>(c)];
  const Curve& curve = !own.empty() ? own
                       : (c == Collective::send_recv && !tier.p2p_eff.empty()) ? tier.p2p_eff
                                                                              : tier.busbw_eff;
  const double eff = curve.empty() ? 1.0 : curve.at(size.v);
  return tier.bw_per_gpu * (eff / tier.oversubscription);
}

bool hierarchical(Collective c) {
  return c == Collective::all_reduce || c == Collective::all_gather || c == Collective::reduce_scatter;
}

/// An all-to-all over n = g x k ranks (g per inner domain): each rank sends S/n to every peer at once, the g-1
/// peers of its own domain over the inner tier and the n-g others through its own NIC, so the two shares
/// travel concurrently: max(S (g-1)/n / bw_inner, S (n-g)/n / bw_outer) after one network latency.
Seconds hierarchical_all_to_all(const Tier& inner, const Tier& outer, Bytes s, int g, int k) {
  const double n = 1.0 * g * k;
  Seconds inner_t;
  if (g > 1) inner_t = (s * ((g - 1) / n)) / achieved_bw(inner, Collective::all_to_all, s);
  const Seconds outer_t = (s * ((n - g) / n)) / achieved_bw(outer, Collective::all_to_all, s);
  return outer.latency + std::max(inner_t, outer_t);
}

}  // namespace

BytesPerSec achieved_bandwidth(const Tier& tier, Collective c, Bytes size) { return achieved_bw(tier, c, size); }

Seconds hierarchical_latency(const Tier& inner, const Tier& outer, Collective c, int g, int k) {
  // NCCL tuning.cc ring latency: of the ring's steps, nInterSteps cross the network (2(k-1) for all-reduce, k-1
  // otherwise) and the rest stay inside a node. All-reduce may instead run NCCL's tree:
  // 2 ((g-1) intra + log2(k) inter).
  const int n = g * k;
  const double inter_steps = c == Collective::all_reduce ? 2.0 * (k - 1) : k - 1.0;
  const double ring_steps = c == Collective::all_reduce ? 2.0 * (n - 1) : n - 1.0;
  const Seconds ring = inner.latency * (ring_steps - inter_steps) + outer.latency * inter_steps;
  if (c != Collective::all_reduce) return ring;
  const Seconds tree = (inner.latency * (g - 1.0) + outer.latency * std::ceil(std::log2(k))) * 2.0;
  return std::min(ring, tree);
}

Seconds collective_time(const System& sys, const CommOp& op) {
  if (op.fixed_s >= 0) return Seconds(op.fixed_s);
  if (op.group <= 1 || op.bytes.v <= 0) return Seconds(0);
  const int t = sys.tier_for_group(op.group, op.stride);
  const Tier& tier = sys.tiers[static_cast<size_t>(t)];
  const bool all_to_all = op.collective == Collective::all_to_all;
  if (t == 0 || !(hierarchical(op.collective) || all_to_all))
    return tier.latency * latency_steps(op.collective, op.group, t > 0) +
           (op.bytes * bus_bw_factor(op.collective, op.group)) / achieved_bw(tier, op.collective, op.bytes);
  // The group spans several inner domains (nodes): g members share each domain, k domains.
  const Tier& inner = sys.tiers.front();
  const int domain = std::max(1, inner.domain_gpus);
  const int g = op.stride >= domain ? 1 : std::min(op.group, std::max(1, domain / op.stride));
  const int k = (op.group + g - 1) / g;
  if (all_to_all) return hierarchical_all_to_all(inner, tier, op.bytes, g, k);
  // NCCL's rings move the inner-domain share over the fast tier and only the inter-domain share, spread over
  // the g members' NICs, over the network (the hierarchical reading of busbw; ml-engineering network notes,
  // hardware.md 4.4):
  //   inner: S x factor(g) / bw_inner,   outer: S x factor(k) / (g x bw_outer).
  Seconds inner_t;
  if (g > 1) inner_t = (op.bytes * bus_bw_factor(op.collective, g)) / achieved_bw(inner, op.collective, op.bytes);
  const Seconds outer_t =
      (op.bytes * bus_bw_factor(op.collective, k)) / (achieved_bw(tier, op.collective, op.bytes) * g);
  return hierarchical_latency(inner, tier, op.collective, g, k) + std::max(inner_t, outer_t);
}

}  // namespace shardplan
