#include "modeler/collectives.h"

#include <algorithm>
#include <cmath>

namespace shardplan {

double latency_steps(Collective c, int n, bool scale_out) {
  if (n <= 1) return 0;
  // Sequential steps of the ring algorithm (NCCL tuning.cc nsteps): all-reduce 2(n-1), others n-1; a
  // send/recv is one transfer.
  const double ring = c == Collective::send_recv ? 1.0 : c == Collective::all_reduce ? 2.0 * (n - 1) : n - 1.0;
  if (scale_out && c == Collective::all_reduce) return std::min(ring, 2.0 * std::ceil(std::log2(n)));
  return ring;
}

namespace {

BytesPerSec achieved_bw(const Tier& tier, Collective c, Bytes size) {
  const Curve& curve = (c == Collective::send_recv && !tier.p2p_eff.empty()) ? tier.p2p_eff : tier.busbw_eff;
  const double eff = curve.empty() ? 1.0 : curve.at(size.v);
  return tier.bw_per_gpu * (eff / tier.oversubscription);
}

bool hierarchical(Collective c) {
  return c == Collective::all_reduce || c == Collective::all_gather || c == Collective::reduce_scatter;
}

}  // namespace

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
  if (op.group <= 1 || op.bytes.v <= 0) return Seconds(0);
  const int t = sys.tier_for_group(op.group, op.stride);
  const Tier& tier = sys.tiers[static_cast<size_t>(t)];
  if (t == 0 || !hierarchical(op.collective))
    return tier.latency * latency_steps(op.collective, op.group, t > 0) + (op.bytes * bus_bw_factor(op.collective, op.group)) / achieved_bw(tier, op.collective, op.bytes);
  // The group spans several inner domains (nodes): g members share each domain, k domains. NCCL's rings then move
  // the inner-domain share over the fast tier and only the inter-domain share, spread over the g members' NICs,
  // over the network (the hierarchical reading of busbw; ml-engineering network notes, hardware.md 4.4):
  //   inner: S x factor(g) / bw_inner,   outer: S x factor(k) / (g x bw_outer).
  const Tier& inner = sys.tiers.front();
  const int domain = std::max(1, inner.domain_gpus);
  const int g = op.stride >= domain ? 1 : std::min(op.group, std::max(1, domain / op.stride));
  const int k = (op.group + g - 1) / g;
  Seconds inner_t;
  if (g > 1) inner_t = (op.bytes * bus_bw_factor(op.collective, g)) / achieved_bw(inner, op.collective, op.bytes);
  const Seconds outer_t =
      (op.bytes * bus_bw_factor(op.collective, k)) / (achieved_bw(tier, op.collective, op.bytes) * g);
  return hierarchical_latency(inner, tier, op.collective, g, k) + std::max(inner_t, outer_t);
}

}  // namespace shardplan
