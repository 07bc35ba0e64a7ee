// FlexGen (Sheng et al., ICML 2023, arXiv:2303.06865): throughput-oriented offloaded generation on one GPU.
// Weights, KV cache and activations each live in fixed shares on GPU, CPU and disk (the "policy"); a block of
// num_gpu_batches x gpu_batch_size sequences is run layer by layer ("zig-zag block schedule"), and while the GPU
// computes one GPU batch of one layer, the next layer's weights, the next batch's cache and activations load and
// the previous batch's results store. This file times that schedule from physical bandwidths; nothing is fitted.
// Source of the schedule: FlexGen's flexgen/flex_opt.py (generation_loop_overlap_multi_batch: per layer j and GPU
// batch k, load_weight(j+1) [copies only at k == 0], load_cache(j, k+1), store_hidden(j, k-1), load_hidden(j, k+1),
// compute_layer(j, k), store_cache(j, k-1), then a full sync), with attention and MLP as separate layers
// (sep_layer, the default) and CPU attention over CPU-resident cache when cpu_cache_compute is set.
#pragma once

#include <string>
#include <vector>

#include "modeler/model_desc.h"
#include "modeler/units.h"

namespace shardplan::serving {

/// FlexGen's Policy (flex_opt.py), field for field. Percentages are shares of each layer's bytes; what GPU and
/// CPU leave goes to disk.
struct FlexgenPolicy {
  int gpu_batch_size = 0;
  int num_gpu_batches = 0;
  double w_gpu_percent = 0, w_cpu_percent = 0;
  double cache_gpu_percent = 0, cache_cpu_percent = 0;
  double act_gpu_percent = 0, act_cpu_percent = 0;
  bool cpu_cache_compute = false;  // attention over CPU/disk-resident cache runs on the CPU
  bool compress_weight = false;    // 4-bit group-wise (group 64, fp16 scale and min), decompressed on the GPU
  bool compress_cache = false;     // the same for the KV cache
  bool overlap = true;             // FlexGen's --overlap (default true): I/O overlaps compute
  bool pin_weight = true;          // FlexGen's --pin-weight (default true): CPU weights in pinned memory
  /// FlexGen's --debug fewer_batch, which benchmark/flexgen/bench_suite.py passes for its offloaded cases: the
  /// decode is projected from ten sub-layer steps of the first decode token, and the overlapped loops run
  /// whatever --overlap says (flex_opt.py generate, generation_loop_debug_{single,multi}_batch).
  bool debug_fewer_batch = false;
  int block_size() const { return gpu_batch_size * num_gpu_batches; }
};

/// The machine FlexGen runs on: sustained rates, each from a datasheet or a published measurement (the profile
/// cites them).
struct FlexgenMachine {
  std::string name;
  FlopsPerSec gpu_gemm;       // sustained fp16 tensor-core GEMM
  BytesPerSec gpu_memory_bw;  // sustained device-memory bandwidth
  Bytes gpu_memory;
  BytesPerSec pcie_h2d, pcie_d2h;  // pinned copies
  BytesPerSec host_memory_bw;      // sustained DRAM bandwidth of the cores the process uses
  Bytes host_memory;
  BytesPerSec disk_read, disk_write;
  Bytes disk;
};

struct FlexgenWorkload {
  int prompt_len = 0;
  int gen_len = 0;  // tokens generated per sequence, the first one by the prefill
};

struct FlexgenPrediction {
  Seconds prefill, decode;
  double throughput_tokens_per_s = 0;   // block x gen_len / (prefill + decode): FlexGen's "generation throughput"
  double decode_tokens_per_s = 0;       // block x (gen_len - 1) / decode (flex_opt.py run_flexgen)
  double prefill_tokens_per_s = 0;      // block x prompt_len / prefill
  Bytes gpu_home, cpu_home, disk_home;  // resident weights + cache (+ activations) per device
};

/// Throws ConfigError for a policy FlexGen rejects, Infeasible when the homes exceed a device's memory.
FlexgenPrediction flexgen_predict(const ModelDesc& model, const FlexgenPolicy& policy, const FlexgenMachine& machine,
                                  const FlexgenWorkload& workload);

}  // namespace shardplan::serving
