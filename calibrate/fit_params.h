// The parameters `calibrate fit-runs` may fit (docs/fit-runs.md), as the fit sees them: which ones a set of runs
// can inform, and how a value of each is applied to a system. Each parameter's range and prior width are in
// modeler/fit_parameters.h; the fit itself is calibrate/fit_runs.h.
#pragma once

#include <string>
#include <vector>

#include "modeler/fit_parameters.h"
#include "modeler/io/published_runs.h"
#include "modeler/system.h"

namespace shardplan::calibrate {

/// One run as the fit sees it: the published-runs entry and its system before any fitted parameter (its standard
/// system, with a base profile's tables applied where one is given).
struct RunCase {
  const io::PublishedRun* run = nullptr;
  System base;
};

/// One parameter of the fit: its kind, and the dtype (gemm_scale) or tier name (busbw_scale) it belongs to.
struct ParamRef {
  FitParameter kind = FitParameter::gemm_scale;
  Dtype dtype = Dtype::bf16;
  std::string tier;
  /// busbw_scale only: the tier's all-to-all has a parameter of its own (alltoall_scale), which this one leaves
  /// alone (fit_parameters.h).
  bool alltoall_apart = false;
  /// "gemm_scale.bf16", "busbw_scale.nvlink", "alltoall_scale.infiniband", "overlap_efficiency", ...
  std::string label() const;
};

/// The parameters the runs could inform: gemm_scale of each dtype the runs' GEMMs use (bf16 always: the LM head
/// and the bf16 fallback), attention_scale, memory_bw_scale, busbw_scale of each tier, alltoall_scale of each tier
/// when a run is a mixture of experts with expert parallelism (its dispatch and combine are all-to-alls),
/// overlap_efficiency, kernel_overhead_us, host_layer_pass_ms.
std::vector<ParamRef> candidate_params(const std::vector<RunCase>& runs);

/// Applies one parameter value to a system.
void apply_param(System* s, const ParamRef& p, double value);
/// The parameter's value in a system before any fit (the prior): 1 for a scale, the system's overlap efficiency,
/// kernel overhead and host time per layer pass.
double base_value(const System& s, const ParamRef& p);

}  // namespace shardplan::calibrate
