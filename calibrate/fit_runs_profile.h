// Writing the profile of a fit to measured runs (calibrate fit-runs): a cluster that inherits the base and states
// only what was fitted, YAML through yaml-cpp's Emitter, written by the one atomic writer (io::write_file_atomic).
//
//   schema_version, kind: cluster, name, inherits, provenance (what was fitted from which runs, the residuals),
//   gpu_overrides.efficiency.{kernel_overhead_us, kernel_overhead_source}   (when fitted)
//   fitted: {gemm_scale: {dtype: k}, attention_scale, memory_bw_scale, busbw_scale: {tier: k},
//            overlap_efficiency, memory_reserve_gib, loo_errors_pct: [...], source}
// with a comment block listing each parameter's prior, value and 95% interval.
#pragma once

#include <string>
#include <vector>

#include "calibrate/fit_runs.h"

namespace shardplan::calibrate {

struct FitRunsProfileSpec {
  std::string name;       // the new cluster's name
  std::string inherits;   // the --base cluster as the profile refers to it
  std::string runs_file;  // the runs it was fitted to
  std::string date;       // YYYY-MM-DD
  std::vector<std::string> accepted_despite;  // out-of-range parameters written under --accept-anyway
};

/// "gemm_scale.bf16 0.912 [0.871, 0.955]" per parameter, joined by "; ".
std::string parameters_text(const RunsFit& fit);
std::string emit_fit_runs_profile(const FitRunsProfileSpec& spec, const RunsFit& fit);

}  // namespace shardplan::calibrate
