// serve validate for llama.cpp / ik_llama.cpp rows with layers or tensors in host memory: the row's flags
// (-ngl, --n-cpu-moe, -ot) evaluated as a placement (modeler/serving/offload.h) on a host built from the row.
#pragma once

#include <optional>
#include <string>

#include "modeler/io/serving_validation.h"
#include "modeler/io/system_io.h"

namespace shardplan::io {

/// Peak memory bandwidth (GB/s) of a CPU the offload rows name without a figure: channels x data rate x 8 bytes
/// of the platform's specification; nullopt for a CPU not in the table.
std::optional<double> cpu_peak_memory_gbps(const std::string& cpu);

/// llama.cpp's default physical micro-batch (common/common.h: n_ubatch = 512): the prefill step size when a
/// row does not state plan.offload.n_ubatch.
inline constexpr int kLlamaCppDefaultUbatch = 512;

/// Fills `out` (predicted decode and prefill tokens/s, or a skip reason).
void predict_llama_offload_row(const ServingRun& r, const GpuProfile& gpu, ServeRowResult* out);

}  // namespace shardplan::io
