// Serving prediction: TTFT, TPOT, tokens/s, the batch continuous batching settles at, KV-cache capacity and the
// memory of one GPU, for an aggregated or disaggregated plan under a fixed-length closed-loop workload.
//
// Aggregated (continuous batching, chunked prefill), in the steady state of a closed loop: each step decodes the
// batch and prefills the prompts of the requests that replace finished ones (batch / output_len per step); that
// mixed step is the TPOT. TTFT is half a step of waiting plus the prompt's chunks, each sharing its step with the
// batch's decode tokens. Concurrency above the batch the KV cache or max_batch allow waits for a slot.
//
// Disaggregated: prefill workers run batches of prompts, decode workers hold the batch; the closed loop's
// throughput is the smallest of prefill capacity, decode capacity, the KV links' capacity and concurrency /
// request time (Little's law), and TTFT grows to concurrency / throughput minus the decode time when prefill is
// the bottleneck. A request's first token also waits for its prompt's KV cache to reach the decode worker
// (kv_transfer.h), which lengthens its cycle by the same amount.
#pragma once

#include <optional>
#include <string>

#include "modeler/problems.h"
#include "modeler/serving/engine_memory.h"
#include "modeler/serving/kv_transfer.h"
#include "modeler/serving/speculative.h"

namespace shardplan::serving {

struct ServeInputs {
  const ServingModel* model = nullptr;
  const System* system = nullptr;
  Engine engine = Engine::vllm;
  ServingPlan plan;
  Workload workload;
  EngineMemoryOptions memory;
  /// Static batch (trtllm-bench static, llama-bench): batch_size sequences prefilled together, then decoded
  /// together; no arrivals. concurrency is ignored when set.
  int static_batch = 0;
  /// llama-bench: pp and tg are separate tests, so decode starts from context_depth, not after the prompt.
  bool separate_phases = false;
  /// Speculative decoding (speculative.h); off by default. Every step of the plan's workers then verifies
  /// spec.tokens draft tokens per sequence and runs the draft; TPOT is the step over the expected tokens it emits.
  SpecDecode spec;
  /// The draft as a serving model (make_draft_head, make_draft_model): needed for draft_model; for mtp and eagle,
  /// nullptr builds the head from the target (make_draft_head).
  const ServingModel* draft = nullptr;
};

struct ServePrediction {
  Seconds ttft;                       // mean time to first token
  Seconds tpot;                       // mean time per output token after the first: (e2e - ttft) / (out - 1)
  bool tpot_includes_first = false;   // always false: TPOT excludes the first token, as genai-perf reports it
  double batch = 0;                   // steady-state decoding sequences per attention-DP rank
  std::string batch_cap;              // what limits it: "concurrency", "max_batch" or "kv_cache"
  double kv_tokens = 0;               // KV-cache capacity in tokens of one attention-DP rank (its GPUs hold shares)
  double kv_max_batch = 0;            // sequences of input + output tokens that fit
  double request_tokens_per_s = 0;    // one request's output tokens per second while decoding (1 / TPOT)
  double output_tokens_per_s = 0;     // aggregate, all workers
  double output_tokens_per_s_per_gpu = 0;
  double total_tokens_per_s_per_gpu = 0;  // prompt + output
  double prefill_tokens_per_s = 0;    // one prompt's tokens per second (llama-bench pp)
  double decode_tokens_per_s = 0;     // generated tokens per second summed over the batch (llama-bench tg)
  StepTime prefill_step, decode_step; // one prefill chunk step and one pure decode step (with speculative
                                      // decoding: verification and draft passes together)
  double tokens_per_step = 1;         // tokens a decode step emits per sequence (speculative: E, speculative.h)
  double kv_slots_per_seq = 0;        // KV slots a sequence holds beyond its tokens (speculative: the k drafts)
  MemoryReport memory;                // one GPU of the (decode) worker
  MemoryReport prefill_memory;        // disaggregated: one GPU of a prefill worker
  std::optional<KvTransfer> kv_transfer;  // disaggregated: one request's prompt cache, prefill to decode worker
  int gpus = 0;
};

/// Throws ConfigError for an inconsistent plan (sizes that do not divide the model) or speculative setting
/// (check_spec; and speculative decoding with workload.rounds, which closed_loop.h does not model) and
/// Infeasible when the weights leave no room for a KV cache.
ServePrediction serve_predict(const ServeInputs& in);

/// Checks the plan against the model: tp divides the heads, moe_tp x moe_ep = tp x attention_dp, experts
/// divisible by moe_ep, pp at most the layers. Returns the problems (empty: valid).
Problems check_plan(const ModelDesc& m, const WorkerPlan& w);

}  // namespace shardplan::serving
