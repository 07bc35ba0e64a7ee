// Measured decode-GEMM rates (m < 128): bytes of weight streamed per second vs the weight matrix's size, per GPU
// profile name, dtype (bf16 or fp8) and row count m. Derived from AIConfigurator's measured kernels
// (decode_gemm_table.cc).
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "modeler/curve.h"
#include "modeler/system.h"

namespace shardplan::serving {

/// The rate curve of m <= 16 rows (x: weight bytes, y: bytes/s, kernel overhead included) for `gpu` (a profile
/// name) and dtype; nullptr when the table has no such GPU (then the generic GEMM formula applies). fp4 and
/// weight-only formats use the bf16 curve on their own bytes.
const Curve* decode_gemm_rate(const std::string& gpu, Dtype d);

/// The measured rate (bytes/s) of a GEMM of `rows` rows over `weight_bytes` of weights: the m <= 16 curve up to 16
/// rows, between measured m the time per byte interpolated linearly in m, above the largest measured m (112) that
/// row's curve; nullopt when the table has no such GPU and dtype.
std::optional<double> decode_gemm_bytes_per_s(const std::string& gpu, Dtype d, double rows, double weight_bytes);

/// Rate curves measured at a few row counts m, by ascending m (this table's rows; moe_table.h's per rows per expert).
using CurvesByRows = std::vector<std::pair<double, Curve>>;

/// The rate at `rows` rows and `x` (the curves' x) from curves measured at a few m: at or below the smallest m its
/// curve, at or above the largest m that one's, between two measured m the time per unit of x (1 / rate)
/// interpolated linearly in m. `c` must not be empty.
double rate_between_rows(const CurvesByRows& c, double rows, double x);

/// What one small kernel costs in a CUDA-graph replay on `gpu` (a profile name): the median latency of the
/// smallest GEMMs the table measured (decode_gemm_table.cc); nullopt where the table has no such GPU.
std::optional<Seconds> small_kernel_latency(const std::string& gpu);

}  // namespace shardplan::serving
