// KV-cache transfer between disaggregated prefill and decode workers: the bytes one request's prompt moves, the
// link they cross and the part of the transfer its first token waits for.
//
// Bytes. The prompt's cache as the prefill worker holds it: every layer (sliding layers their window), the KV heads
// (2 x kv_heads x head_dim per layer) or the MLA latent (kv_lora_rank + qk_rope_head_dim, one copy), at the KV
// dtype, plus the draft's layers with speculative decoding. A request's cache lives on one attention-DP rank
// (tp x pp GPUs) on each side. Each decode GPU receives its own shard (its pp stage's layers, its tp share of the
// heads, replicated when tp exceeds the KV heads; the whole latent under MLA), so the request moves that shard
// times the decode rank's GPUs. The senders are the prefill GPUs holding distinct pieces the decode side reads:
// min(tp_prefill, max(tp_decode, distinct shards)) per stage, where distinct shards = min(tp, kv_heads) (1 under
// MLA), times pp_prefill. That is vLLM's NixlConnector mapping: a decode rank reads its head slice from prefill
// rank d / (tp_d / tp_p) when tp_d >= tp_p, from tp_p / tp_d prefill ranks when tp_p > tp_d, and a replicated
// cache (MLA) from one rank (vllm/distributed/kv_transfer/kv_connector/v1/nixl_connector.py,
// vllm-project/vllm@002a1057, _validate_remote_agent_handshake and the block registration of remote ranks).
// TRT-LLM's formatter re-shards across TP/PP the same way (docs/source/1.0/features/disagg-serving.md, "Cache
// Layout Transformation", NVIDIA/TensorRT-LLM@0cf83252); for MLA every context rank sends its latent to each
// generation rank it serves, one after another, and only one of tp_p / tp_d ranks sends when the context side is
// wider (MLACacheFormatter::needSendCache and formatOutput, cpp/tensorrt_llm/batch_manager/mlaCacheFormatter.cpp,
// NVIDIA/TensorRT-LLM@040855b8): an attention-DP prefill rank (tp 1) feeding a tp 16 decode worker sends 16
// copies. SGLang sends each prefill rank's pages to the decode ranks that hold the same heads
// (python/sglang/srt/disaggregation/prefill.py, sgl-project/sglang@000c2b94).
//
// Link. Same node: the scale-up tier (NVLink/NVSwitch, or PCIe where the profile has no NVLink) when the
// transport uses it; otherwise the scale-out NIC of each GPU. NIXL over UCX (vLLM's NixlConnector; TRT-LLM's
// cache transceiver backend DEFAULT, Dynamo's docs fern/pages/backends/trtllm/kv-cache-transfer.md in wxsms/dynamo)
// picks UCX's cuda_ipc inside a node and RDMA across nodes. Across the trays of an NVL72 rack it still takes the
// NIC: UCX uses multi-node NVLink only with UCX_CUDA_IPC_ENABLE_MNNVL=y and fabric-handle memory (openucx/ucx PR
// #10285, docs/source/faq.md), and vLLM's cache is plain cudaMalloc memory, which cuda_ipc cannot export across
// trays (vllm-project/vllm PR #51377, 2026-08). SGLang's default backend is Mooncake (server_args.py
// disaggregation_transfer_backend = "mooncake") with protocol rdma (MOONCAKE_PROTOCOL's default,
// python/sglang/srt/distributed/device_communicators/mooncake_transfer_engine.py, sgl-project/sglang@00157bdc),
// which goes through the NIC even inside a node. Every GPU of both ranks moves its share at once, each over its
// own link, at the tier's achieved point-to-point rate for that size (collectives.h achieved_bandwidth,
// send_recv) after one latency step of the tier.
//
// Overlap. None of the three engines streams a prompt's layers while it is computed. vLLM's NixlConnector does
// no layer-wise saving (save_kv_layer and wait_for_layer_load are no-ops); the decode worker reads the blocks
// once the prefill request finished. TRT-LLM sends after the context phase completes (docs/source/developer-guide/
// kv-transfer.md, "Workflow", NVIDIA/TensorRT-LLM@44d3172a), one request at a time by default
// (TRTLLM_PARALLEL_CACHE_SEND=0). SGLang sends a prompt's pages after each chunk of a chunked prefill
// (send_kv_chunk for the chunked request, the last chunk in process_batch_result_disagg_prefill), so earlier
// chunks move while later ones compute. So the exposed part is the whole transfer after the prefill step (for
// SGLang the last chunk's, plus what the earlier chunks' transfers left behind), and the prompts of one prefill
// step leave through the same links one after another: the mean request waits (prompts - 1) / 2 transfers more.
// The transfer runs beside the next prefill step (TRT-LLM overlaps the KV exchange with other requests' compute,
// disagg-serving.md "Overlap Optimization"; vLLM's and SGLang's transfers are asynchronous, polled between
// steps), so it costs TTFT, not prefill capacity, unless the links themselves are the bottleneck
// (KvTransfer::send_time, recv_time).
#pragma once

#include <string>

#include "modeler/serving/engine_memory.h"

namespace shardplan::serving {

/// The prompt's cache and its shards across the two attention-DP ranks that hold one request.
struct KvShards {
  Bytes unique;        // the prompt's cache once: every layer, every KV head (or one latent)
  Bytes moved;         // what the request moves: recv_per_gpu x the decode rank's GPUs
  Bytes send_per_gpu;  // each sending prefill GPU's share of `moved`
  Bytes recv_per_gpu;  // each decode GPU's shard
  int senders = 0;     // prefill GPUs of the rank that send
  int receivers = 0;   // decode GPUs of the rank (tp x pp)
};
/// `tokens` tokens of cache (context and prompt) from a prefill worker of shape `prefill` to one of shape `decode`;
/// `draft` adds the draft's layers (nullptr: none).
KvShards kv_shards(const ServingModel& sm, const WorkerPlan& prefill, const WorkerPlan& decode, double tokens,
                   const ServingModel* draft = nullptr);

/// The transport an engine's disaggregation runs (engine_default resolved): nixl or mooncake.
KvTransport resolve_kv_transport(Engine e, KvTransport t);
std::string kv_transport_name(KvTransport t);  // "NIXL/UCX", "Mooncake RDMA"
std::string kv_placement_name(KvPlacement p);  // "automatic", "same node", "cross node"

/// Whether the pools share a node: same_node / cross_node as stated; automatic: the deployment's GPUs fit in one
/// node (gpus_per_node, or the scale-up domain where that is smaller) and the system has a node that large.
bool kv_same_node(const System& sys, KvPlacement p, int deployment_gpus);

struct KvTransferInputs {
  const ServingModel* model = nullptr;
  const ServingModel* draft = nullptr;  // speculative decoding's draft (its KV moves too); nullptr: none
  const System* system = nullptr;
  Engine engine = Engine::vllm;
  KvTransport transport = KvTransport::engine_default;
  KvPlacement placement = KvPlacement::automatic;
  WorkerPlan prefill, decode;   // shapes and worker counts
  double tokens = 0;            // context + prompt tokens whose cache moves
  int chunks = 1;               // prefill chunks of one prompt (SGLang sends each one as it completes)
  double prompts_per_step = 1;  // prompts one prefill attention-DP rank runs per step
  Seconds prefill_step;         // that step
};

struct KvTransfer {
  KvShards shards;
  KvTransport transport = KvTransport::nixl;  // resolved
  bool same_node = false;
  std::string link;       // the tier it crosses ("nvlink", "infiniband", ...)
  std::string placement;  // what was assumed, as the reports print it
  BytesPerSec bandwidth;  // achieved per GPU on that tier for this size
  Seconds latency;        // the tier's latency step
  Seconds send_time;      // link time of one sending prefill GPU per request
  Seconds recv_time;      // link time of one decode GPU per request
  Seconds time;           // one request alone: latency + max(send, recv) / bandwidth
  Seconds exposed;        // the mean wait it adds to a request's first token after its prefill step
};

/// Throws ConfigError for a system without tiers or non-positive tokens.
KvTransfer kv_transfer(const KvTransferInputs& in);

}  // namespace shardplan::serving
