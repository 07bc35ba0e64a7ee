// Converting NVIDIA AIConfigurator's measured kernel database (the compact export described in
// ../shared/data/measured_kernels/README.md; the rows the shipped tables use are in hwprofiles/measured/) into the
// JSON lines `shardplan calibrate fit` reads, so the shipped GPU tables come out of the same calibration path as a
// user's own measurements.
//
// One measurement method for every GPU: `latency_us_median`, AIC's median over its framework/version directories
// of each version's mean of a short burst of CUDA-graph replays (6 for GEMM, 6-20 for attention), with
// `latency_us_min` / `latency_us_max` as the row's range. It is the only latency column present for every GPU and
// dtype; the ~1 s power-mode column (`latency_us_sustained`) exists for B200, GB200 and H200 only, so using it
// where present would make differences between GPUs partly a difference of method. Collectives: nccl-tests'
// out-of-place time, the median over AIC's NCCL version directories per (collective, GPUs, bytes).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace shardplan::calibrate {

/// AIC's system directory name for a shardplan GPU profile name (h100-sxm5-80gb -> h100_sxm); nullopt if AIC has
/// no measurements of that GPU.
std::optional<std::string> aic_system(const std::string& gpu);

/// The CSV texts of one export directory; empty strings for files not present.
struct AicTables {
  std::string gemm, attention_prefill, nccl;
  std::string gemm_file, attention_file, nccl_file;  // names for messages
};

struct AicImport {
  std::vector<std::string> lines;  // JSON lines: one context record, then result records
  int gemm = 0, attention = 0, collectives = 0;
};

/// Converts the rows of `system` (AIC's name). GEMM: dtypes bf16, fp8 (E4M3 with per-call activation
/// quantisation), fp8_block (E4M3, 128x128 weight blocks, 1x128 activation groups quantised per call; kept as
/// fp8_block) and nvfp4 (written as fp4), y = x W^T with the CSV's m, n, k. Attention: causal prefill, scope
/// `kernel` (the framework's attention kernel and K/V cache write, no RoPE), bf16, head_dim 128, written as
/// forward rows of the kernel generation `attention_kernel` (flash2 for A100, flash3 for Hopper and Blackwell)
/// with FLOPs 2 b h d s^2. Collectives: kind nccl, fp16. Throws ConfigError naming file:line for malformed rows
/// and when the tables hold no row of `system`.
AicImport import_aic(const AicTables& tables, const std::string& system, const std::string& attention_kernel);

}  // namespace shardplan::calibrate
