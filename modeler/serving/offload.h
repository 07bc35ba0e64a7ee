// CPU offload for one GPU (techniques.md section 4, ATSInfer): every weight tensor and every layer's KV cache has
// three homes (GPU-resident, in host memory computed by the CPU, in host memory streamed over PCIe to the GPU for
// each use). Per tensor and phase (n tokens per step):
//   t_gpu    = the GEMM formula on the GPU (weight_gemm_time)
//   t_cpu    = max(flops / cpu_flops, bytes read / host memory bandwidth)
//   t_stream = bytes / PCIe bandwidth + t_gpu
// A non-resident tensor takes the cheaper of CPU and stream (or the engine's batch rule, op_offload_min_batch);
// the step is the sum over tensors (layer-sequential, no overlap of CPU, GPU and PCIe work: a conservative bound,
// the ATSInfer pipeline overlap is not modelled).
// Placement: greedy by benefit per byte ((t_off - t_gpu) / bytes), then pairwise swaps while one improves,
// started from the greedy set and from the best llama.cpp -ngl set; separately for prefill and decode.
#pragma once

#include <string>
#include <vector>

#include "modeler/serving/step_time.h"

namespace shardplan::serving {

enum class Home { gpu, cpu, stream };
const char* home_name(Home h);

/// An offloadable item: a weight tensor or one layer's KV cache.
struct OffloadItem {
  std::string name;
  int layer = -1;
  Bytes bytes;
  bool kv = false;
  bool expert = false;
  double t_gpu[2] = {0, 0};  // seconds per step, [prefill, decode]
  double t_cpu[2] = {0, 0};
  double t_stream[2] = {0, 0};
  Home host_home[2] = {Home::cpu, Home::cpu};  // where it runs when not resident, per phase
  double off(int phase) const { return host_home[phase] == Home::cpu ? t_cpu[phase] : t_stream[phase]; }
};

struct OffloadSetup {
  const ServingModel* model = nullptr;
  const Gpu* gpu = nullptr;
  Host host;
  Bytes vram;                   // GPU memory for weights and KV (capacity minus compute buffers and runtime)
  double prefill_tokens = 512;  // tokens per prefill step (llama.cpp ubatch)
  double decode_batch = 1;
  double context = 4096;  // tokens in the KV cache (its size) and attended in decode
  /// Keys a prefill query attends on average: the cached tokens before its ubatch plus the causal half of the
  /// ubatch (a prompt of P tokens after D cached: D + P / 2). 0: the ubatch alone (prefill_tokens / 2).
  double prefill_keys = 0;
  /// 0: a host weight runs where it is cheaper (CPU or streamed), the planner's choice. > 0: the engine's rule:
  /// streamed when the step has at least this many tokens, else computed by the CPU (kLlamaCppOpOffloadMinBatch);
  /// a host KV cache's attention follows the same rule (it runs with its neighbouring weight ops).
  int op_offload_min_batch = 0;
  /// Seconds added to a decode step per run of host-computed items (host_runs): what the GPU's graph split after
  /// each CPU split costs when the engine launches its kernels one by one instead of as a CUDA graph (the stream
  /// drains at every split, so the launches are no longer hidden behind the GPU's work). 0: the engine keeps a
  /// graph per split (llama.cpp since PR #18934, on Ampere and newer), or the planner's default.
  /// kGraphsOffCostPerHostRunS is the measured figure for an engine that disables CUDA graphs under partial offload.
  double decode_host_run_s = 0;
  /// How -ngl N fills the GPU. true (llama.cpp since PR #18148, 2025-12-17, "offload output layer to GPU first";
  /// src/llama-model.cpp: i_gpu_start = n_layer + 1 - N): the output layer, then the last N - 1 blocks. false
  /// (before it: i_gpu_start = n_layer - N): the last N blocks, and the output layer only when N > n_layer.
  /// Either way N = blocks + 1 puts everything there.
  bool ngl_output_first = true;
};

/// The decode cost of one host run with CUDA graphs off, measured on llama.cpp: PR #18934 (ggml-org/llama.cpp,
/// 2026-01-19, "enable cuda-graphs for n-cpu-moe", 2 x RTX 4090 and 1 x RTX 5090 on Linux) benchmarks
/// GLM-4.5-Air IQ4_XS (glm4moe 106B.A12B) tg128 with --n-cpu-moe 8/16/32/64 before (graphs disabled as soon as
/// the graph has splits) and after (a CUDA graph per split): 60.84/63.12, 48.25/50.75, 32.84/35.03 and
/// 25.08/27.49 t/s. The per-token difference (0.594, 1.021, 1.904, 3.496 ms) grows linearly with the CPU-MoE
/// layers; its least-squares slope is 51.8 us per layer, and each such layer is one host run (its experts on the
/// CPU between the GPU's attention of that layer and of the next). The tests recompute the slope.
inline constexpr double kGraphsOffCostPerHostRunS = 51.8e-6;

/// Whether an engine build ran a decode step that has graph splits with CUDA graphs off (then each host run costs
/// kGraphsOffCostPerHostRunS), from the dates the changes landed; `build_date` is 'YYYY-MM-DD' or empty (unknown),
/// `compute_capability` 0 when unknown. A build dated on or before a PR's opening day lacks it (the merge cannot
/// come earlier; on that day itself the build is taken as the older).
/// - llama.cpp: every GPU until PR #18934 (2026-01-19, a CUDA graph per split; before it a graph with splits
///   was updated every call and disabled after four updates); NVIDIA below Ampere (cc < 8.0) until PR #25749
///   (opened 2026-07-16, "Enable CUDA graphs on Volta+Turing": ggml_cuda_graph_set_enabled set
///   disable_due_to_gpu_arch for cc < GGML_CUDA_CC_AMPERE). Unknown date: graphs per split assumed.
/// - ik_llama.cpp: until PR #1172 (2026-01-20, CUDA graphs with tensor overrides); its CMake option
///   GGML_CUDA_USE_GRAPHS was off by default then (ikawrakow, ik_llama.cpp issue #479, 2025-05-31). Unknown
///   date: off, as the October 2025 rows ran.
/// - any other engine: false.
struct GraphsVerdict {
  bool off = false;
  std::string why;  // the rule that decided, for the validator's `assumed` column
};
GraphsVerdict cuda_graphs_off_with_splits(const std::string& engine, const std::string& build_date,
                                          double compute_capability);

/// Whether the build's -ngl puts the output layer on the GPU first (OffloadSetup::ngl_output_first): llama.cpp
/// builds dated after PR #18148 (opened 2025-12-17) do; one dated on or before it does not. ik_llama.cpp forked
/// before that PR and is given the older rule by the same date (whether it took the change later is not checked;
/// its rows here put every layer on the GPU, where the two rules agree). Unknown date: output first.
bool llama_ngl_output_first(const std::string& engine, const std::string& build_date);

/// ggml-cuda's rule for an op whose weight lives in host memory (ggml_backend_cuda_device_offload_op): the
/// scheduler runs it on the GPU, copying the weight over PCIe, when its batch (ne[1] of MUL_MAT, ne[2] of
/// MUL_MAT_ID: the step's tokens) is at least 32; below that the CPU backend computes it.
inline constexpr int kLlamaCppOpOffloadMinBatch = 32;

struct Placement {
  std::vector<Home> home[2];  // per item, [prefill, decode]
  Seconds step[2];            // step time per phase
  Bytes gpu_bytes[2];
  int ngl = -1;  // for a layer placement: the -ngl value
};

/// Runs of host-computed items in a phase, in layer order (the CPU splits of ggml_backend_sched's graph): a block
/// with both GPU and CPU-computed items is one run of its own (--n-cpu-moe, -ot exps=CPU: one per such block);
/// consecutive blocks computed wholly on the CPU are one run together (-ngl N: one). Streamed items run on the GPU.
int host_runs(const std::vector<OffloadItem>& items, const std::vector<Home>& homes);

/// Norms and routers stay on the GPU (kilobytes each; moving one would cost two PCIe hand-offs of the hidden
/// state, which the additive step model does not charge). Their bytes come off the VRAM budget.
bool is_pinned(const WeightTensor& t);
Bytes pinned_bytes(const ServingModel& sm);

/// The items of a model (weights per tensor; KV per layer) with their per-phase times.
std::vector<OffloadItem> offload_items(const OffloadSetup& s);

/// llama.cpp -ngl N: the output layer and the last N - 1 blocks (weights and KV) on the GPU (llama.cpp counts the
/// output layer as one: N = blocks + 1 puts everything there), or the older rule (OffloadSetup::ngl_output_first);
/// the token embedding stays in host memory.
Placement layer_placement(const std::vector<OffloadItem>& items, const OffloadSetup& s, int ngl);
/// A placement given as llama.cpp flags: -ngl N, then --n-cpu-moe K (the routed experts of blocks 0..K-1 in host
/// memory) and -ot REGEX=CPU overrides (every tensor whose name matches goes to host memory; names as
/// model_tensors() gives them, GGUF style: blk.7.ffn_up_exps). Throws ConfigError for a bad regex.
Placement flags_placement(const std::vector<OffloadItem>& items, const OffloadSetup& s, int ngl, int n_cpu_moe,
                          const std::vector<std::string>& cpu_regexes);
/// The fastest -ngl split that fits in s.vram, per phase.
Placement best_layer_placement(const std::vector<OffloadItem>& items, const OffloadSetup& s);
/// Tensor-level placement under the same VRAM.
Placement tensor_placement(const std::vector<OffloadItem>& items, const OffloadSetup& s);

/// llama.cpp flags for a placement's phase: -ngl 999 with -ot regexes sending the host tensors to CPU, or
/// --n-cpu-moe N when those are exactly the experts of the first N blocks.
std::string llama_cpp_flags(const std::vector<OffloadItem>& items, const Placement& p, int phase);

}  // namespace shardplan::serving
