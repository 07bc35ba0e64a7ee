#include "modeler/moe_dispatch.h"

#include <algorithm>
#include <cmath>

#include "modeler/collectives.h"

namespace shardplan {

const char* to_string(MoeDispatcher d) {
  switch (d) {
    case MoeDispatcher::alltoall: return "alltoall";
    case MoeDispatcher::allgather: return "allgather";
    case MoeDispatcher::deepep: return "deepep";
    case MoeDispatcher::hybridep: return "hybridep";
  }
  return "alltoall";
}

std::optional<MoeDispatcher> parse_moe_dispatcher(const std::string& text) {
  for (MoeDispatcher d :
       {MoeDispatcher::alltoall, MoeDispatcher::allgather, MoeDispatcher::deepep, MoeDispatcher::hybridep})
    if (text == to_string(d)) return d;
  return std::nullopt;
}

double hit_probability(double pool, double group, int k) {
  if (group <= 0 || k <= 0 || pool <= 0) return 0.0;
  if (group >= pool || pool - group < k) return 1.0;
  // C(pool - group, k) / C(pool, k) = prod_{i<k} (pool - group - i) / (pool - i).
  double miss = 1.0;
  for (int i = 0; i < k; ++i) miss *= (pool - group - i) / (pool - i);
  return 1.0 - miss;
}

TokenFanout token_fanout(const EpPlacement& place, const Routing& routing) {
  TokenFanout f;
  const double n = std::max(1, place.ranks()), g = std::max(1, place.per_domain), N = std::max(1, place.domains);
  const int k = std::max(1, std::min(routing.top_k, routing.experts));
  const double experts = std::max(1, routing.experts);
  const double per_gpu = experts / n, per_domain = experts / N;
  // Node-limited routing picks M of the N domains (each equally likely under balanced routing) and the top-k
  // experts among their M x per_domain experts; unlimited routing is M = N.
  const double M = routing.max_domains > 0 ? std::min<double>(routing.max_domains, N) : N;
  const double pool = M * per_domain;
  const double chosen = M / N;  // probability a given domain is among the M
  const double hit_domain = hit_probability(pool, per_domain, k);
  const double hit_gpu = hit_probability(pool, per_gpu, k);
  f.pairs = k;
  // By symmetry each pair lands in any given domain with probability 1/N and on any given GPU with 1/n.
  f.remote_pairs = k * (N - 1) / N;
  f.domain_pairs = k * (g - 1) / n;
  f.remote_domains = (N - 1) * chosen * hit_domain;
  f.domain_gpus = (g - 1) * chosen * hit_gpu;
  // In each remote domain the token reaches, the RDMA receiver forwards it to the other GPUs hit there.
  f.forwarded_gpus = (N - 1) * chosen * (g - 1) * hit_gpu;
  f.self_gpu = chosen * hit_gpu;
  return f;
}

DispatchBytes dispatch_bytes_per_token(MoeDispatcher d, const EpPlacement& place, const Routing& routing,
                                       double row_bytes) {
  const TokenFanout f = token_fanout(place, routing);
  DispatchBytes b;
  switch (d) {
    case MoeDispatcher::alltoall:
      b.nic = f.remote_pairs * row_bytes;
      b.nvlink = f.domain_pairs * row_bytes;
      break;
    case MoeDispatcher::allgather: {
      // All-gather over the EP group: every rank receives every other rank's tokens, so per token of its own a
      // rank receives (and, by symmetry, sends) n - 1 rows, n - g of them from other domains.
      const double n = place.ranks(), g = place.per_domain;
      b.nic = (n - g) * row_bytes;
      b.nvlink = (g - 1) * row_bytes;
      break;
    }
    case MoeDispatcher::deepep:
    case MoeDispatcher::hybridep:
      b.nic = f.remote_domains * row_bytes;
      b.nvlink = (f.domain_gpus + f.forwarded_gpus) * row_bytes;
      break;
  }
  return b;
}

double dispatch_row_bytes(double hidden, bool fp8) { return fp8 ? hidden + hidden / 128.0 * 4.0 : 2.0 * hidden; }

Seconds deepep_nvlink_time(const DeepepKernelRate& rate, double tokens, double row_bytes, double destinations,
                           int sms) {
  const double us = tokens * row_bytes * (rate.alpha_us_sm_per_byte + rate.beta_us_sm_per_byte * destinations) /
                    std::max(1, sms);
  return Seconds(us * 1e-6);
}

EpPlacement ep_placement(const System& sys, int group, int stride, bool node_scoped) {
  EpPlacement p;
  if (sys.tiers.empty() || group <= 1) {
    p.per_domain = std::max(1, group);
    return p;
  }
  int domain = sys.tiers.front().domain_gpus > 0 ? sys.tiers.front().domain_gpus : group * std::max(1, stride);
  if (node_scoped && sys.gpus_per_node > 0) domain = std::min(domain, sys.gpus_per_node);
  const int s = std::max(1, stride);
  p.per_domain = s >= domain ? 1 : std::min(group, std::max(1, domain / s));
  p.domains = (group + p.per_domain - 1) / p.per_domain;
  return p;
}

Seconds dedup_call_time(const System& sys, const DedupCall& c) {
  if (c.place.ranks() <= 1 || c.tokens <= 0 || sys.tiers.empty()) return Seconds(0);
  const TokenFanout f = token_fanout(c.place, c.routing);
  const double destinations = f.self_gpu + f.domain_gpus + f.forwarded_gpus;
  const Seconds nvlink = deepep_nvlink_time(c.combine ? kDeepepCombineRate : kDeepepDispatchRate, c.tokens,
                                            c.row_bytes, destinations, c.sms);
  const Tier& inner = sys.tiers.front();
  if (c.place.domains <= 1 || sys.tiers.size() < 2) return inner.latency + nvlink;
  const Tier& outer = sys.tiers[1];  // the first tier beyond the NVLink domain: the NICs
  const Bytes nic(c.tokens * f.remote_domains * c.row_bytes);
  const Seconds nic_t = nic / achieved_bandwidth(outer, Collective::all_to_all, nic);
  return outer.latency + std::max(nvlink, nic_t);
}

}  // namespace shardplan
