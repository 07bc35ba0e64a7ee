// The closed-loop benchmark, simulated step by step: `clients` clients each send a fixed-length request, wait
// for its last token and send the next one at once (aiperf / genai-perf --concurrency). The engine's scheduler
// decides, step by step, which prompts and decodes share a forward pass; each step costs step_time().
//
// Why simulate rather than take the steady state: the benchmark starts every client at the same instant, so
// the first round's prompts queue behind each other's prefills, and because every request has the same
// lengths the later rounds keep much of that synchronisation (a request finishes a fixed time after its first
// token, so it returns in the same order and spacing as its prefill was served). The mean TTFT over the run
// is set by that queueing, which a steady state with spread arrivals cannot show.
//
// The schedulers, from the engines' sources:
//   vLLM V1 (vllm/v1/core/sched/scheduler.py): running requests first, one token per decode, then waiting
//     prompts FCFS in chunks that fill max_num_batched_tokens (chunked prefill on), while max_num_seqs allows.
//   SGLang (python/sglang/srt/managers/scheduler.py, get_next_batch_to_run): a prefill batch whenever prompts
//     wait and slots are free (new prompts up to chunked_prefill_size tokens, the last one chunked), decoding
//     paused for that step (enable_mixed_chunk is off by default); otherwise a decode step.
//   TRT-LLM (PyTorch executor, inflight batching): generation requests first, then whole context requests
//     FCFS while max_num_tokens allows (chunked prefill off by default: a prompt longer than the budget runs
//     alone). With the overlap scheduler a request that emitted its last token keeps its slot for one more
//     iteration (TensorRT-LLM PR 18457 describes these "retiring" requests).
#pragma once

#include "modeler/serving/serve_predict.h"

namespace shardplan::serving {

struct ClosedLoopOptions {
  int clients = 1;          // concurrent requests on this attention-DP rank
  int rounds = 20;          // requests per client (AIConfigurator's benchmark sends 20 x concurrency)
  double slots = 1;         // running sequences the engine admits (max batch, or what the KV cache holds)
  double budget = 8192;     // prompt + decode tokens per step
  // Steps a busy engine runs before it sees a request that a client sent when its previous request finished.
  // 0 (the default, what serve validate uses) lets the next request join the very next step. A real client
  // needs a round trip (the last token streamed out, the next request sent, tokenised and queued), and a busy
  // engine does not wait for it: it starts its next step at once, so the request misses at least that step
  // (1). An engine that schedules step n+1 before it emits step n's tokens (TRT-LLM's and SGLang's overlap
  // schedulers, vLLM's async scheduling) has already scheduled the step after that too (2). Tested, not wired:
  // docs/serving.md, "TTFT on the AIConfigurator rows".
  int client_lag_steps = 0;
};

struct ClosedLoopResult {
  Seconds ttft;             // mean over every request of the run
  Seconds tpot;             // mean over requests of (finish - first token) / (output - 1)
  Seconds duration;         // first request sent to last token
  double mean_batch = 0;    // decoding sequences per step, time-weighted
  long steps = 0;           // forward passes evaluated (steps fast-forwarded in one go count once)
  StepTime typical_step;    // a decode step at the mean batch (for the report's step breakdown)
};

/// Disaggregated serving under the same benchmark: `clients` requests start together and queue FCFS at the
/// prefill pool, which runs `per_step` prompts (all prefill ranks together) in each `prefill_step`; a request's
/// first token comes at the end of its prefill step, and it returns `decode_time` later (the decode pool holds
/// every sequence). Returns the mean TTFT over clients x rounds requests.
Seconds disaggregated_closed_loop_ttft(int clients, int rounds, double per_step, Seconds prefill_step,
                                       Seconds decode_time);

/// Simulates the benchmark on one attention-DP rank of the worker `w` (all ranks run the same schedule).
ClosedLoopResult simulate_closed_loop(const ServeInputs& in, const WorkerPlan& w, const ClosedLoopOptions& o);

}  // namespace shardplan::serving
