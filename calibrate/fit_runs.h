// Fitting a few named, physical parameters to measured training steps (calibrate fit-runs, docs/fit-runs.md).
//
// Each run is predicted by the real modeler on its own system with the parameters applied (scales on the base
// profile's GEMM, attention, HBM streaming and bus-bandwidth tables, the overlap efficiency, the per-kernel overhead;
// see modeler/fit_parameters.h for each range and why). The fit minimises, over the parameters u (log of a scale, or
// the value itself),
//     sum_i (log predicted step_i(u) - log measured step_i)^2 / sigma_y^2 + sum_j ((u_j - prior_j) / sigma_j)^2,
// a prior-centred (regularised) least squares solved by Levenberg-Marquardt with a forward-difference Jacobian
// through evaluate(). The unknown plan fields of each run take the completion validate would choose (the fastest
// that fits, io::run_validation) on the current parameters; the fit re-resolves them until they stop changing.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "modeler/fit_parameters.h"
#include "modeler/framework.h"
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

struct ParamValue {
  ParamRef ref;
  double prior = 0;             // the base profile's value (1 for a scale)
  double value = 0;             // fitted
  double lo95 = 0, hi95 = 0;    // 95% interval from the fit's covariance (normal in u), clipped to the range
  double data_share = 0;        // 1 - posterior/prior variance: 0 = the prior alone, 1 = the runs alone
  bool at_bound = false;        // pinned at its range's end (only with accept_anyway)
};

struct FitOptions {
  /// Per-run scatter of log step time the model is expected to leave after calibration: the weight of the data
  /// against the priors. 0.06 is the MAPE of the best-validated groups of the shipped record (A100 llm-foundry and
  /// megatron-lm, 6.6-6.8%, hwprofiles/validation_record.yaml): what a well-calibrated group still scatters.
  double sigma_log = 0.06;
  /// Write a fit whose parameters need values outside their ranges, pinning them at the range's end.
  bool accept_anyway = false;
  bool leave_one_out = true;
  /// Re-resolve the runs' unknown plan fields with the fitted parameters and refit, at most this many times.
  int resolution_rounds = 3;
};

/// One run's outcome: predictions on the base system and with the fitted parameters, and the leave-one-out
/// prediction (fitted on the other runs), as tokens/s/GPU.
struct RunFitRow {
  const io::PublishedRun* run = nullptr;
  double measured = 0, base_predicted = 0, fitted_predicted = 0;
  std::optional<double> loo_predicted;
  std::optional<double> base_memory_gib, fitted_memory_gib;
  double error_pct() const { return 100.0 * (fitted_predicted - measured) / measured; }
  double base_error_pct() const { return 100.0 * (base_predicted - measured) / measured; }
  std::optional<double> loo_error_pct() const;
};

struct RunsFit {
  std::vector<ParamValue> params;
  std::vector<std::string> not_fitted;  // parameters no run is sensitive to (left at the base's value), with why
  std::vector<RunFitRow> rows;
  double base_mape = 0, fit_mape = 0, loo_mape = 0;  // throughput, percent
  /// Memory reserve fitted from the runs with a measured peak: value, 95% interval, runs used.
  std::optional<double> memory_reserve_gib;
  double memory_lo95 = 0, memory_hi95 = 0;
  int memory_runs = 0;
  /// Parameters that would leave their physical range, each with the rows that push it there. Non-empty: the
  /// fit is refused unless accept_anyway (then they are pinned at the bound and listed here all the same).
  std::vector<std::string> out_of_range;
  int iterations = 0;
};

/// The parameters the runs could inform: gemm_scale of each dtype the runs' GEMMs use (bf16 always: the LM head
/// and the bf16 fallback), attention_scale, memory_bw_scale, busbw_scale of each tier, alltoall_scale of each tier
/// when a run is a mixture of experts with expert parallelism (its dispatch and combine are all-to-alls),
/// overlap_efficiency, kernel_overhead_us.
std::vector<ParamRef> candidate_params(const std::vector<RunCase>& runs);

/// Fits the parameters to the runs (all on one GPU). Throws ConfigError when there is no run or a run's plan is
/// invalid on its system.
RunsFit fit_runs(const std::vector<RunCase>& runs, const FitOptions& options = {});

/// `base` with the fitted parameters (and memory reserve) applied.
System apply_fit(System base, const RunsFit& fit);
/// Applies one parameter value to a system.
void apply_param(System* s, const ParamRef& p, double value);
/// The parameter's value in a system before any fit (the prior): 1 for a scale, the system's overlap efficiency
/// and kernel overhead.
double base_value(const System& s, const ParamRef& p);

/// The run's system as validate builds it (its standard system; with `profile` a base cluster of the same GPU,
/// that profile's tables applied, as `validate --system` does).
System run_case_system(const io::PublishedRun& run, const io::GpuProfile& gpu, const System* profile);

}  // namespace shardplan::calibrate
