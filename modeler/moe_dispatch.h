// MoE token dispatchers: how each framework moves a routed token to its experts' ranks and back, in bytes per
// token over the NIC and over NVLink, and the kernels and host synchronisation each one costs (docs/moe.md).
//
// Megatron-Core (megatron/core/transformer/moe/token_dispatcher.py, transformer_config.py
// moe_token_dispatcher_type / moe_flex_dispatcher_backend) offers four:
//   alltoall  MoEAlltoAllTokenDispatcher: every token-expert pair's row is sent to its expert's rank by one NCCL
//             all-to-all (a token routed to two experts of one node crosses the NIC twice).
//   allgather MoEAllGatherTokenDispatcher: every rank all-gathers the hidden states of the whole EP group and
//             keeps the rows its experts need; combine is the matching reduce-scatter.
//   deepep    flex dispatcher with DeepEP's normal kernels (deepseek-ai/DeepEP, "normal kernels"): a token goes
//             once per destination node over RDMA to the GPU of the same local index, which forwards it over
//             NVLink to every GPU of that node holding one of its experts (once per GPU); combine reduces in
//             the node and sends one row back per node.
//   hybridep  flex dispatcher with HybridEP (DeepEP's hybrid-ep branch): the same bytes as deepep, and the only
//             backend that treats a multi-node NVLink domain (NVL72) as one domain.
// torchtitan's expert parallelism runs all_to_all_single on the token-expert pairs (alltoall).
#pragma once

#include <optional>
#include <string>

#include "modeler/system.h"
#include "modeler/units.h"

namespace shardplan {

enum class MoeDispatcher { alltoall, allgather, deepep, hybridep };
constexpr int kNumMoeDispatchers = 4;
const char* to_string(MoeDispatcher d);
/// Parses a name as to_string spells it; nullopt when unknown.
std::optional<MoeDispatcher> parse_moe_dispatcher(const std::string& text);
/// Whether the dispatcher sends a token once per destination node and fans it out over NVLink.
inline bool deduplicates_nodes(MoeDispatcher d) { return d == MoeDispatcher::deepep || d == MoeDispatcher::hybridep; }

/// One EP group on the topology: `domains` scale-up domains (nodes, or NVL72 racks) of `per_domain` members.
struct EpPlacement {
  int per_domain = 1;
  int domains = 1;
  int ranks() const { return per_domain * domains; }
};

/// Routing of one token: top_k distinct experts of `experts`, spread evenly over the EP ranks; `max_domains` caps
/// the domains a token may reach (DeepSeek-V3's node-limited routing, M = 4: the top-M node groups by affinity,
/// then the top-k experts among them; Megatron-Core --moe-router-num-groups = nodes, --moe-router-group-topk = M).
/// 0: no limit.
struct Routing {
  int experts = 1;
  int top_k = 1;
  int max_domains = 0;
};

/// Probability that a set of `group` experts out of `pool` receives at least one of `k` distinct picks made
/// uniformly without replacement (hypergeometric: 1 - C(pool - group, k) / C(pool, k)).
double hit_probability(double pool, double group, int k);

/// Where one token's copies go, in expectation over uniformly balanced routing (the force-balanced routing of
/// the published benchmarks; an imbalanced router changes who computes, not these means).
struct TokenFanout {
  double pairs = 0;             // token-expert pairs (top_k)
  double remote_pairs = 0;      // pairs whose expert sits in another domain
  double domain_pairs = 0;      // pairs whose expert sits on another GPU of the token's own domain
  double remote_domains = 0;    // other domains holding at least one of the token's experts
  double domain_gpus = 0;       // other GPUs of the own domain holding at least one of its experts
  double forwarded_gpus = 0;    // GPUs of remote domains reached by NVLink forwarding (not the RDMA receiver)
  double self_gpu = 0;          // probability the token's own GPU holds one of its experts
};
TokenFanout token_fanout(const EpPlacement& place, const Routing& routing);

/// Bytes one rank sends per source token per direction (dispatch, or combine for the same tokens), over its NIC
/// and over NVLink, for a row of `row_bytes` (hidden x element bytes, plus any scales).
struct DispatchBytes {
  double nic = 0;
  double nvlink = 0;
};
DispatchBytes dispatch_bytes_per_token(MoeDispatcher d, const EpPlacement& place, const Routing& routing,
                                       double row_bytes);

/// Bytes of one dispatched row: bf16 hidden states (2 bytes), or DeepSeek-V3's fp8 dispatch (1 byte per element
/// plus one fp32 scale per 128 elements; DeepSeek-V3 report Sec. 3.3, DeepEP's byte count). Combine is bf16.
double dispatch_row_bytes(double hidden, bool fp8);
inline double combine_row_bytes(double hidden) { return 2.0 * hidden; }

/// DeepEP normal-kernel time on the GPUs' own copy engines (SMs): the kernels are SM-bound inside a node, so a
/// call of `tokens` source tokens costs tokens x row_bytes x (alpha + beta x destinations) / sms, destinations
/// being the GPUs one token is copied to over NVLink (own domain including itself, plus forwarding). Calibrated on
/// the measured database (../shared/data/measured_kernels nccl.csv, AIConfigurator commit 095f58a5,
/// collect_deepep_normal.py): least squares over the H100 (8 GPUs) and GB200 (4 GPUs) intranode rows at 20 SMs,
/// hidden 7168, top-8 of 256 experts, 2048/4096/8192 tokens; held out: H200, B200, B300, GB300 and the 2-8 node
/// H100 rows (tests/modeler/moe_dispatch_test.cc reproduces them all, docs/moe.md has the table).
struct DeepepKernelRate {
  double alpha_us_sm_per_byte;  // per source-token byte (reading and staging the row), x SMs
  double beta_us_sm_per_byte;   // per destination copy byte, x SMs
};
inline constexpr DeepepKernelRate kDeepepDispatchRate = {1.490e-4, 3.270e-5};
inline constexpr DeepepKernelRate kDeepepCombineRate = {3.585e-5, 5.352e-5};
/// Megatron-Core's SM budget for DeepEP (transformer_config.py moe_deepep_num_sms: "historical default 20").
inline constexpr int kDeepepDefaultSms = 20;

/// Seconds of the NVLink side of one DeepEP normal call (the SM-bound copy kernels) for `tokens` source tokens.
Seconds deepep_nvlink_time(const DeepepKernelRate& rate, double tokens, double row_bytes, double destinations,
                           int sms);

/// Where an EP group of `group` ranks at rank stride `stride` sits: the scale-up domains it spans (the NVLink
/// domain of the first tier; `node_scoped` limits a domain to one node, as DeepEP's normal kernels do: only
/// HybridEP treats a multi-node NVLink domain as one, transformer_config.py moe_flex_dispatcher_backend).
EpPlacement ep_placement(const System& sys, int group, int stride, bool node_scoped);

/// One dispatch or combine call of a dedup dispatcher (deepep, hybridep) for `tokens` source tokens per rank:
/// the NIC share at the network tier's achieved all-to-all bandwidth and the NVLink share in DeepEP's SM-bound
/// copy kernels, concurrent, after one latency of the outermost tier crossed.
struct DedupCall {
  EpPlacement place;
  Routing routing;
  double tokens = 0;
  double row_bytes = 0;
  bool combine = false;
  int sms = kDeepepDefaultSms;
};
Seconds dedup_call_time(const System& sys, const DedupCall& call);

/// The kernels each dispatcher launches and its host synchronisation: modeler/moe_host.h.

}  // namespace shardplan
