// The open-loop benchmark, simulated step by step: requests arrive at their own times, whatever the engine is
// doing (vLLM benchmarks/benchmark_serving.py and SGLang python/sglang/bench_serving.py, get_request: the i-th
// request is sent, then the client sleeps an exponential interval of mean 1 / request_rate before the next,
// so arrivals are a Poisson process starting at t = 0; request_rate inf sends every request at once). Each
// request has its own prompt and output length (a dataset such as ShareGPT, or a fixed pair).
//
// The engine side is the closed loop's (closed_loop.h): the same three schedulers (vLLM's mixed chunked steps,
// SGLang's prefill batches that pause decoding unless --mixed-chunk, TRT-LLM's whole prompts first-come
// first-served) and every step priced by step_time(). Admission differs in one way: with lengths that vary, a
// request is admitted while a slot is free and the KV cache can hold its prompt and its whole output beside the
// running ones (a reservation rule; the engines allocate as they go and preempt, which is not modelled).
//
// Several workers or attention-DP ranks: requests go round-robin (SGLang's data-parallel controller's default,
// a load balancer's), so each rank serves every n-th request; the simulation runs one rank.
#pragma once

#include <cstdint>
#include <limits>
#include <vector>

#include "modeler/serving/serve_predict.h"

namespace shardplan::serving {

/// One request: when it is sent and its lengths in tokens.
struct OpenLoopRequest {
  double arrival = 0;
  int input_len = 1;
  int output_len = 1;
};

/// (input, output) lengths of one request.
struct LengthPair {
  int input_len = 1;
  int output_len = 1;
};

/// Send times of `n` requests at `rate` requests per second (infinity: all at 0), Poisson as the benchmarks draw
/// them: the first at 0, each next one an exponential interval later. Deterministic for a seed, and the same on
/// every platform (a 64-bit Mersenne Twister, whose output the standard fixes, and the inverse of the
/// exponential CDF; std::exponential_distribution's algorithm is left to the library).
std::vector<double> poisson_arrivals(int n, double rate, uint64_t seed);

/// Requests for one simulation: lengths[i] at arrivals[i].
std::vector<OpenLoopRequest> make_requests(const std::vector<double>& arrivals, const std::vector<LengthPair>& lengths);

struct OpenLoopOptions {
  double slots = 1e9;       // running sequences the engine admits (max batch)
  double budget = 8192;     // prompt + decode tokens per step
  double kv_tokens = 1e18;  // KV-cache capacity of the rank in tokens
};

/// Mean, median and 99th percentile of a metric (numpy's linear interpolation, as the benchmarks print them).
struct Summary {
  double mean = 0, p50 = 0, p99 = 0;
  long count = 0;
};

struct OpenLoopResult {
  Summary ttft, tpot, itl, e2e;  // seconds; TPOT over requests with more than one output token
  double duration = 0;           // first request sent to last token
  double requests_per_s = 0;     // completed requests over the duration
  double output_tokens_per_s = 0;
  double input_tokens_per_s = 0;
  double mean_batch = 0;  // running sequences per step, time-weighted
  int max_waiting = 0;    // most requests waiting for admission at once
  long steps = 0;
};

/// Simulates the requests (sorted by arrival) on one attention-DP rank of `w`. Throws ConfigError for an empty
/// request list or a length below 1.
OpenLoopResult simulate_open_loop(const ServeInputs& in, const WorkerPlan& w, const std::vector<OpenLoopRequest>& reqs,
                                  const OpenLoopOptions& o);

/// A whole open-loop prediction for an aggregated plan.
struct OpenLoopWorkload {
  double rate = std::numeric_limits<double>::infinity();  // requests per second over the whole deployment
  std::vector<LengthPair> lengths;                        // one per request, in sending order
  uint64_t seed = 0;
};

struct OpenLoopPrediction {
  OpenLoopResult run;           // the deployment: latencies of rank 0, throughputs summed over every rank
  double capacity_rps = 0;      // requests per second the deployment completes with every request sent at once
  bool stable = true;           // the offered rate is below that capacity
  double queue_growth_rps = 0;  // unstable: how fast the waiting queue grows (offered rate - capacity)
  MemoryReport memory;
  double kv_tokens = 0;  // KV capacity of one attention-DP rank
  int ranks = 1;         // workers x attention_dp
};

/// Runs the workload on `in.plan.agg` (workers x attention_dp ranks, round-robin) and once more with every
/// request sent at once for the service capacity. Throws ConfigError for a disaggregated plan, a static batch,
/// speculative decoding (not modelled here), a rate not above 0 or no lengths, and Infeasible when the weights
/// leave no room for a KV cache.
OpenLoopPrediction predict_open_loop(const ServeInputs& in, const OpenLoopWorkload& wl);

}  // namespace shardplan::serving
