// serve validate for llama.cpp / ik_llama.cpp rows with layers or tensors in host memory: the row's flags
// (-ngl, --n-cpu-moe, -ot) evaluated as a placement (modeler/serving/offload.h) on a host built from the row.
#pragma once

#include <optional>
#include <string>

#include "modeler/io/serving_validation.h"
#include "modeler/io/system_io.h"
#include "modeler/serving/host_rates.h"

namespace shardplan::io {

/// A CPU's memory platform and ISA, for the host rule (modeler/serving/host_rates.h).
struct CpuPlatform {
  int channels = 2;
  double mega_transfers_per_s = 0;  // the vendor's rated DDR data rate
  serving::CpuIsa isa = serving::CpuIsa::avx2;
};
/// The platform of a CPU the offload rows name, looked up by its exact name (a row's host.cpu); nullopt for any
/// other name, a neighbouring part of the same family included.
std::optional<CpuPlatform> cpu_platform(const std::string& cpu);

/// Peak memory bandwidth (GB/s) of a CPU in the table: serving::dram_peak_gbps of its channels and data rate.
std::optional<double> cpu_peak_memory_gbps(const std::string& cpu);

/// llama.cpp's default physical micro-batch (common/common.h: n_ubatch = 512): the prefill step size when a
/// row does not state plan.offload.n_ubatch.
inline constexpr int kLlamaCppDefaultUbatch = 512;

/// The host's line in a row's assumptions: its DRAM, CPU matmul and pinned-copy rates, each labelled by where it
/// comes from: the DRAM rate is the named machine's measured decode rate or the host rule's, the others the rule's.
std::string host_assumption(const serving::Host& host, bool measured_dram);

/// Fills `out` (predicted decode and prefill tokens/s, or a skip reason).
void predict_llama_offload_row(const ServingRun& r, const GpuProfile& gpu, ServeRowResult* out);

}  // namespace shardplan::io
