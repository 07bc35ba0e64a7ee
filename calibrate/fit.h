// Fitting cost tables from measurements, by inverting the same formulas the predictor uses
// (modeler/gemm_model.h for GEMMs, modeler/collectives.h for collectives), so that predicting the
// measured cases reproduces the measurements up to the smoothing reported in the residuals.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "calibrate/measurements.h"
#include "modeler/curve.h"
#include "modeler/system.h"

namespace shardplan::calibrate {

/// How well a fit explains the rows it was fitted on: |predicted - measured| / measured.
struct Residuals {
  int rows = 0;
  double median_rel = 0, max_rel = 0;
};
Residuals residuals(const std::vector<double>& predicted, const std::vector<double>& measured);

/// Least squares t = alpha + x / bw over (x, t) pairs, weighted by 1/t so every size counts by its relative
/// error (an unweighted fit would ignore the latency-bound small messages). Throws ConfigError when the data
/// do not determine a positive bandwidth.
struct AlphaBeta {
  double alpha_s = 0;
  double bw_Bps = 0;
};
AlphaBeta fit_alpha_beta(const std::vector<double>& x, const std::vector<double>& t);
/// Same with the latency counted `steps[i]` times per row: t = alpha * steps + x / bw (a ring's sequential steps).
AlphaBeta fit_alpha_beta(const std::vector<double>& x, const std::vector<double>& t, const std::vector<double>& steps);

/// A curve through binned medians of (x, y) (bins one octave wide), made non-decreasing in x by pool-adjacent-
/// violators isotonic regression weighted by bin counts: efficiencies grow with problem size, and measurement
/// noise must not make the predictor prefer a smaller problem. Points with y <= 0 are dropped; y is capped at
/// 1.2, the most a profile may state.
Curve monotone_curve(std::vector<double> x, std::vector<double> y, const std::string& source);

struct TierFit {
  int tier = 0;              // index into System::tiers
  AlphaBeta ab;              // alpha per latency step (modeler latency_steps), x = bus bytes = S * bus_bw_factor
  Curve busbw_eff;           // fraction of the tier's bw_per_gpu, vs S
  std::optional<Curve> p2p_eff;
  Residuals res;
};

struct GpuFit {
  std::optional<double> kernel_overhead_s;
  std::optional<Curve> memory;
  std::map<Dtype, Curve> gemm;
  std::map<std::pair<std::string, bool>, Curve> attention;  // (kernel generation, backward) -> curve
  std::map<std::string, Residuals> res;                      // "memory", "gemm bf16", "attention flash2 fwd", ...
  std::vector<std::string> notes;                            // rows skipped and why
};

struct Fit {
  GpuFit gpu;
  std::vector<TierFit> tiers;
};

/// Fits everything present in `rows` against the base system's peaks and tiers. `source` names the calibration
/// run in every curve it writes.
Fit fit_all(const std::vector<Measurement>& rows, const System& base, const std::string& source);

}  // namespace shardplan::calibrate
