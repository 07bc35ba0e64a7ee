#include "modeler/serving/kv_transfer.h"

#include <algorithm>
#include <cmath>

#include "modeler/collectives.h"
#include "modeler/problems.h"
#include "modeler/serving/speculative.h"

namespace shardplan::serving {

namespace {

// Bytes per token of one GPU of `w` (its stage's layers and head share), the draft's layers included.
Bytes per_gpu_per_token(const ServingModel& sm, const WorkerPlan& w, double tokens, const ServingModel* draft) {
  Bytes b = kv_bytes_per_token(sm, w, tokens);
  if (draft) b += draft_kv_bytes_per_token(*draft, w, tokens);
  return b;
}

// Shards of the cache held apart on one pp stage of a rank of tp GPUs: the KV heads split tp ways up to one head
// per GPU (replicas beyond), one latent under MLA.
int distinct_shards(const ModelDesc& m, int tp) { return m.mla ? 1 : std::max(1, std::min(tp, m.kv_heads)); }

}  // namespace

KvShards kv_shards(const ServingModel& sm, const WorkerPlan& prefill, const WorkerPlan& decode, double tokens,
                   const ServingModel* draft) {
  KvShards s;
  s.unique = per_gpu_per_token(sm, WorkerPlan{}, tokens, draft) * tokens;
  s.recv_per_gpu = per_gpu_per_token(sm, decode, tokens, draft) * tokens;
  s.receivers = decode.tp * decode.pp;
  s.moved = s.recv_per_gpu * s.receivers;
  const int per_stage = std::min(prefill.tp, std::max(decode.tp, distinct_shards(sm.model, prefill.tp)));
  s.senders = per_stage * prefill.pp;
  s.send_per_gpu = s.moved / s.senders;
  return s;
}

KvTransport resolve_kv_transport(Engine e, KvTransport t) {
  if (t != KvTransport::engine_default) return t;
  // SGLang: --disaggregation-transfer-backend defaults to mooncake (server_args.py, kv_transfer.h); vLLM's
  // NixlConnector and TRT-LLM's cache transceiver run NIXL over UCX.
  return e == Engine::sglang ? KvTransport::mooncake : KvTransport::nixl;
}

std::string kv_transport_name(KvTransport t) {
  switch (t) {
    case KvTransport::nixl:
      return "NIXL/UCX";
    case KvTransport::mooncake:
      return "Mooncake RDMA";
    case KvTransport::engine_default:
      return "engine default";
  }
  return "engine default";
}

std::string kv_placement_name(KvPlacement p) {
  switch (p) {
    case KvPlacement::automatic:
      return "automatic";
    case KvPlacement::same_node:
      return "same node";
    case KvPlacement::cross_node:
      return "cross node";
  }
  return "automatic";
}

bool kv_same_node(const System& sys, KvPlacement p, int deployment_gpus) {
  if (p != KvPlacement::automatic) return p == KvPlacement::same_node;
  // A router spreads requests over every decode worker, so once the pools span nodes most transfers cross one;
  // pairing each prefill worker with decode workers on its own node is not what the engines' routers do.
  int node = sys.gpus_per_node > 0 ? sys.gpus_per_node : deployment_gpus;
  if (!sys.tiers.empty() && sys.tiers.front().domain_gpus > 0) node = std::min(node, sys.tiers.front().domain_gpus);
  return deployment_gpus <= node;
}

KvTransfer kv_transfer(const KvTransferInputs& in) {
  SHARDPLAN_CHECK(in.model && in.system);
  const System& sys = *in.system;
  if (sys.tiers.empty()) throw ConfigError("KV transfer: the system has no interconnect tier");
  if (!(in.tokens > 0)) throw ConfigError("KV transfer: the prompt must have at least one token");
  KvTransfer t;
  t.shards = kv_shards(*in.model, in.prefill, in.decode, in.tokens, in.draft);
  t.transport = resolve_kv_transport(in.engine, in.transport);
  const int gpus = in.prefill.gpus() * in.prefill.workers + in.decode.gpus() * in.decode.workers;
  t.same_node = kv_same_node(sys, in.placement, gpus);
  // NIXL/UCX takes cuda_ipc over the scale-up tier inside a node; Mooncake's rdma protocol and every cross-node
  // transfer take the scale-out NIC (kv_transfer.h). A one-tier system has only that tier.
  const bool scale_up = t.same_node && t.transport == KvTransport::nixl;
  const Tier& tier = scale_up ? sys.tiers.front() : sys.tiers.back();
  t.link = tier.name;
  t.placement = std::string(t.same_node ? "same node" : "different nodes") +
                (in.placement == KvPlacement::automatic
                     ? (t.same_node ? " (the deployment fits in one node)" : " (the deployment spans nodes)")
                     : " (stated)") +
                ", " + kv_transport_name(t.transport) + " over " + tier.name;
  const Bytes busiest = std::max(t.shards.send_per_gpu, t.shards.recv_per_gpu);
  t.bandwidth = achieved_bandwidth(tier, Collective::send_recv, busiest);
  t.latency = tier.latency * latency_steps(Collective::send_recv, 2, !scale_up);
  t.send_time = t.shards.send_per_gpu / t.bandwidth;
  t.recv_time = t.shards.recv_per_gpu / t.bandwidth;
  t.time = t.latency + busiest / t.bandwidth;
  // What the first token waits for after its prefill step. SGLang sends each chunk as it completes: the last
  // chunk's transfer, plus the backlog when a chunk moves slower than the next one computes (a pipeline of n
  // equal chunks: x + (n - 1) max(0, x - c)). The others send the whole prompt after it.
  Seconds one = t.time;
  const int n = std::max(1, in.chunks);
  if (in.engine == Engine::sglang && n > 1) {
    const Bytes chunk_bytes = busiest / n;
    const Seconds x = t.latency + chunk_bytes / achieved_bandwidth(tier, Collective::send_recv, chunk_bytes);
    const Seconds c = in.prefill_step / n;
    one = x + Seconds(std::max(0.0, (x - c).v)) * (n - 1.0);
  }
  // The step's prompts leave one after another through the same sending GPUs (TRT-LLM sends one request at a
  // time by default; a link shared fairly ends the batch no sooner): the mean one waits (prompts - 1) / 2 more.
  t.exposed = one + t.time * (std::max(0.0, in.prompts_per_step - 1.0) / 2.0);
  return t;
}

}  // namespace shardplan::serving
