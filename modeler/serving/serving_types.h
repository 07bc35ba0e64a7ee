// Inputs of a serving prediction: the engine, the serving plan (parallel sizes, aggregated or disaggregated
// prefill/decode workers), the weight and KV formats, the host (for offload) and the workload. Plain data; the
// model (ModelDesc) and the hardware (System) are separate inputs, as for training.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "modeler/serving/formats.h"
#include "modeler/units.h"

namespace shardplan::serving {

/// Serving software; each allocates GPU memory its own way (engine_memory.h).
enum class Engine { vllm, sglang, trtllm, llamacpp, other };
std::optional<Engine> parse_engine(const std::string& name);  // "llama.cpp" and "ik_llama.cpp" -> llamacpp
std::string engine_name(Engine e);

/// One engine instance (a worker): its GPUs and how the model is split over them. A worker spans
/// tp x pp x attention_dp GPUs; its MoE layers are split moe_tp x moe_ep = tp x attention_dp ways
/// (AIConfigurator's and SGLang's convention). `batch` counts sequences per attention-DP rank.
struct WorkerPlan {
  int tp = 1, pp = 1, attention_dp = 1, moe_tp = 1, moe_ep = 1;
  int workers = 1;
  std::optional<int> batch;  // max running sequences per attention-DP rank (nullopt: the KV cache decides)
  int gpus() const { return tp * pp * attention_dp; }
};

/// The formats the weights and KV cache are stored in.
struct Precision {
  WeightFormat weights = WeightFormat::bf16;
  WeightFormat moe_weights = WeightFormat::bf16;  // routed experts
  double kv_bytes = 2.0;                          // bytes per KV element
};

enum class Mode { aggregated, disaggregated };

/// Where a disaggregated plan's prefill and decode workers sit relative to each other (kv_transfer.h):
/// automatic puts them on one node when the whole deployment fits in one (otherwise every transfer crosses the
/// scale-out network); the others state it.
enum class KvPlacement { automatic, same_node, cross_node };

/// The library that moves the KV cache between the pools (kv_transfer.h). engine_default: what the engine's
/// disaggregation runs unless told otherwise (vLLM NixlConnector, TRT-LLM's cache transceiver backend DEFAULT:
/// NIXL over UCX; SGLang Mooncake over RDMA); nixl and mooncake name one.
enum class KvTransport { engine_default, nixl, mooncake };

struct ServingPlan {
  Mode mode = Mode::aggregated;
  WorkerPlan agg;      // aggregated: every worker prefills and decodes
  WorkerPlan prefill;  // disaggregated
  WorkerPlan decode;
  /// Prefill tokens one scheduler step takes (vLLM max_num_batched_tokens, SGLang chunked_prefill_size,
  /// TRT-LLM max_num_tokens). 0: the engine default (engine_memory.h).
  int max_num_tokens = 0;
  /// SGLang --enable-mixed-chunk: a prefill batch also carries the running batch's decode tokens, instead of
  /// pausing decoding for that step (SGLang's default is off; AIConfigurator's generated agg configs turn it on).
  bool mixed_chunk = false;
  /// Disaggregated: the two pools' placement and the KV transport (kv_transfer.h).
  KvPlacement kv_placement = KvPlacement::automatic;
  KvTransport kv_transport = KvTransport::engine_default;
};

/// A fixed-length closed-loop workload (every request has input_len prompt and output_len generated tokens),
/// as AIConfigurator, trtllm-bench and genai-perf drive it. concurrency: requests in flight (0: batch_size
/// sequences in one static batch).
struct Workload {
  int input_len = 1024;
  int output_len = 128;
  int concurrency = 1;
  double prefix_hit = 0;  // fraction of prompt tokens found in the prefix cache (not prefilled)
  int context_depth = 0;  // tokens already in the KV cache before the prompt (llama-bench -d)
  /// Requests each client sends in a closed-loop benchmark that starts every client at once (closed_loop.h);
  /// 0: the steady state of spread arrivals (the analytic model of serve_predict.h).
  int rounds = 0;
};

/// Speculative decoding (speculative.h): a draft proposes `tokens` tokens per sequence and step, the target
/// verifies them in one step of tokens + 1 positions per sequence.
enum class SpecMethod {
  none,
  mtp,          // the model's own multi-token-prediction module(s) (DeepSeek-V3 NextN; ModelDesc::mtp_layers)
  eagle,        // an EAGLE-style one-layer draft head over the target's hidden states, sharing its LM head
  draft_model,  // a separate, smaller model with the target's vocabulary
};

struct SpecDecode {
  SpecMethod method = SpecMethod::none;
  int tokens = 0;  // k: draft tokens per sequence and step
  /// Acceptance, one of the two (no default: it depends on the model, the draft and the data):
  /// `accept`: the rate at each draft position i given positions < i were accepted (one value: the same at
  /// every position); `accept_length`: the mean tokens a step emits per sequence, the bonus token included
  /// (what vLLM and SGLang log as the mean acceptance length), in [1, k + 1].
  std::vector<double> accept;
  double accept_length = 0;
  bool enabled() const { return method != SpecMethod::none; }
};

/// The machine the GPU sits in, for CPU offload: host memory and its bandwidth, the CPU's dense matrix rate,
/// and the PCIe link to the GPU.
struct Host {
  std::string name;
  Bytes memory;
  BytesPerSec memory_bw;   // sustained read bandwidth (STREAM-like), not the channel peak
  FlopsPerSec cpu_flops;   // sustained 16-bit-or-int8 GEMM rate of all cores (dequantising quantised weights)
  BytesPerSec pcie_bw;     // host-to-device copy rate of pinned memory
  std::vector<std::string> sources;
};

}  // namespace shardplan::serving
