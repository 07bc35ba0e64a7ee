// Measured decode-GEMM rates (small m): bytes of weight streamed per second vs the weight matrix's size, per GPU
// profile name and dtype (bf16 or fp8). Derived from AIConfigurator's measured kernels (decode_gemm_table.cc).
#pragma once

#include <optional>
#include <string>

#include "modeler/curve.h"
#include "modeler/system.h"

namespace shardplan::serving {

/// The rate curve (x: weight bytes, y: bytes/s, kernel overhead included) for `gpu` (a profile name) and dtype;
/// nullptr when the table has no such GPU (then the generic GEMM formula applies). fp4 and weight-only formats
/// use the bf16 curve on their own bytes.
const Curve* decode_gemm_rate(const std::string& gpu, Dtype d);

/// What one small kernel costs in a CUDA-graph replay on `gpu` (a profile name): the median latency of the
/// smallest GEMMs the table measured (decode_gemm_table.cc); nullopt where the table has no such GPU.
std::optional<Seconds> small_kernel_latency(const std::string& gpu);

}  // namespace shardplan::serving
