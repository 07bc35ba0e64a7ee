// Measured prefill-GEMM rates (m >= 128 rows): FLOP/s achieved vs the GEMM's FLOPs, per GPU profile name and
// weight format (bf16, fp8 per-tensor, fp8 128x128 blocks). Derived from AIConfigurator's measured kernels
// (prefill_gemm_table.cc).
#pragma once

#include <string>

#include "modeler/curve.h"
#include "modeler/serving/formats.h"

namespace shardplan::serving {

/// Fewest rows the table was derived from; smaller GEMMs keep the generic formula (they are memory-bound).
inline constexpr double kPrefillGemmMinRows = 128;

/// The rate curve (x: 2 m n k FLOPs, y: FLOP/s, the kernel's fixed cost included) for `gpu` (a profile name) and
/// the weight format's GEMM; nullptr when the table has no such GPU or format (then the GEMM table of the GPU
/// profile applies).
const Curve* prefill_gemm_rate(const std::string& gpu, WeightFormat f);

}  // namespace shardplan::serving
