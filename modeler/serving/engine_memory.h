// GPU memory of one serving GPU as each engine allocates it, and the KV-cache capacity that is left.
//   vLLM:      KV = gpu_memory_utilization x capacity - weights - peak activation of the profiling run
//   SGLang:    KV = mem_fraction_static x capacity - weights
//   TRT-LLM:   KV = free_gpu_memory_fraction x (capacity - weights - activation workspace)
//   llama.cpp: weights + KV for the context + compute buffers (no pool: it allocates what the context needs)
#pragma once

#include <string>

#include "modeler/serving/step_time.h"

namespace shardplan::serving {

/// The engine's memory knobs; each default is the engine's own (sources in engine_memory.cc).
struct EngineMemoryOptions {
  double fraction = 0;  // vLLM gpu_memory_utilization / SGLang mem_fraction_static / TRT-LLM
                        // free_gpu_memory_fraction; 0: the engine default
  int max_num_tokens = 0;  // tokens of the largest step (activation peak); 0: the engine default
  int context = 0;         // llama.cpp: tokens of context allocated (-c); 0: the workload's input + output
};

struct MemoryReport {
  Bytes capacity;        // the GPU's memory
  Bytes weights;         // this GPU's shard of the weights
  Bytes activations;     // peak activation / compute buffers
  Bytes kv_cache;        // what the engine gives the KV cache (llama.cpp: what the context needs)
  Bytes other;           // CUDA context and runtime, not counted by the engines' budgets
  Bytes total;           // all of the above: what nvidia-smi shows
  double fraction = 0;   // the engine fraction applied
  bool fits = true;      // the weights and activations leave room for a KV cache
  std::string rule;      // the engine's allocation rule, as the report prints it
};

/// Defaults of the engines: prefill token budget per step and memory fraction.
int default_max_num_tokens(Engine e);
/// The same budget where the engine picks it by GPU (vLLM's max_num_batched_tokens and SGLang's
/// chunked_prefill_size depend on the device's memory; rules in engine_memory.cc).
int default_max_num_tokens(Engine e, const Gpu& gpu);
double default_memory_fraction(Engine e, int tp);

/// Bytes of KV cache per token on one GPU of the worker (its pp stage's layers, its share of the KV heads), for
/// a sequence of `seq_len` tokens (sliding layers keep at most their window).
Bytes kv_bytes_per_token(const ServingModel& sm, const WorkerPlan& w, double seq_len);
/// This GPU's share of the weights: the busiest pipeline stage's layers split over tp (experts over
/// moe_tp x moe_ep), plus the embedding and LM head split over tp.
Bytes weight_bytes_per_gpu(const ServingModel& sm, const WorkerPlan& w);

MemoryReport engine_memory(const ServingModel& sm, const Gpu& gpu, const WorkerPlan& w, Engine e,
                           const EngineMemoryOptions& opts, double seq_len);
/// Closes a report whose parts were set: a negative KV pool means nothing fits (pool 0), the total is the sum of the
/// parts, and a total above the capacity does not fit.
void settle_memory(MemoryReport* r);

}  // namespace shardplan::serving
