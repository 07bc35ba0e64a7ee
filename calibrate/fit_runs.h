// Fitting a few named, physical parameters to measured training steps (calibrate fit-runs, docs/fit-runs.md).
//
// Each run is predicted by the real modeler on its own system with the parameters applied (scales on the base
// profile's GEMM, attention, HBM streaming and bus-bandwidth tables, the overlap efficiency, the per-kernel overhead,
// the host time per layer pass;
// see modeler/fit_parameters.h for each range and why). The fit minimises, over the parameters u (log of a scale, or
// the value itself),
//     sum_i (log predicted step_i(u) - log measured step_i)^2 / sigma_y^2 + sum_j ((u_j - prior_j) / sigma_j)^2,
// a prior-centred (regularised) least squares solved by Levenberg-Marquardt with a forward-difference Jacobian
// through evaluate() (calibrate/lm_solver.h; the parameters and how each is applied: calibrate/fit_params.h). The
// unknown plan fields of each run take the completion validate would choose (the fastest that fits,
// io::run_validation) on the current parameters; the fit re-resolves them until they stop changing.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "calibrate/fit_params.h"
#include "modeler/framework.h"

namespace shardplan::calibrate {

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
  /// Choose kernel_overhead_us's prior width by the runs' inner leave-one-out error: the base's launch width
  /// (+-4 us) or an eager host-dispatch width (+-15 us), whichever predicts each run from the others better
  /// (docs/fit-runs.md). Needs 6 runs or more; the choice is recorded in RunsFit::prior_choices.
  bool choose_overhead_prior = true;
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
  std::vector<std::string> prior_choices;  // priors chosen by the runs (choose_overhead_prior), with the scores
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

/// Fits the parameters to the runs (all on one GPU). Throws ConfigError when there is no run or a run's plan is
/// invalid on its system.
RunsFit fit_runs(const std::vector<RunCase>& runs, const FitOptions& options = {});

/// `base` with the fitted parameters (and memory reserve) applied.
System apply_fit(System base, const RunsFit& fit);
/// The run's system as validate builds it (its standard system; with `profile` a base cluster of the same GPU,
/// that profile's tables applied, as `validate --system` does).
System run_case_system(const io::PublishedRun& run, const io::GpuProfile& gpu, const System* profile);

}  // namespace shardplan::calibrate
