#include "calibrate/fit_runs.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>

#include "calibrate/fit_problem.h"
#include "calibrate/lm_solver.h"
#include "modeler/evaluate.h"
#include "modeler/io/validation_run.h"
#include "modeler/problems.h"

namespace shardplan::calibrate {

namespace {

// Memory reserve: a prior of 0 +- 2 GiB around the base's, against a per-run scatter of 2 GiB (validate's memory
// MAPE of ~7% on 60-80 GiB peaks is 4-5 GiB of absolute error before calibration; half of it after).
constexpr double kMemoryPriorSigmaGiB = 2.0, kMemorySigmaGiB = 2.0;
// The sensitivity below which a parameter is left at its prior: a 1-sigma change moving no run's log step time by
// 0.1%.
constexpr double kMinSensitivity = 1e-3;
// The eager-dispatch prior width of kernel_overhead_us: in eager PyTorch each op's host dispatch is ~5-15 us
// (pytorch/pytorch#41383, TransformerEngine#2053; fit_parameters.h), above the GPU-side launch of ~2-5 us the
// base's +-4 us states; a GPU that waits on the host pays the larger of the two per kernel. Chosen only where the
// runs' inner leave-one-out prefers it, and only with enough runs for that to mean something.
constexpr double kEagerDispatchSigmaUs = 15.0;
constexpr size_t kMinRunsToChoosePrior = 6;
constexpr double kZ95 = 1.959964;

std::string pct(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%+.1f%%", v);
  return buf;
}

/// The rows that push parameter k (a column of the solution's Jacobian) beyond `upper` or below the range: those
/// whose share of the data gradient points outwards, largest first.
std::string pushing_rows(const std::vector<RunCase>& runs, const std::vector<size_t>& rows, const LmSolution& s,
                         Eigen::Index k, bool upper) {
  std::vector<std::pair<double, size_t>> push;
  for (Eigen::Index i = 0; i < s.jacobian.rows(); ++i) {
    // Descent direction of row i's squared residual along z_k: -J_ik r_i; positive raises the parameter.
    const double d = -s.jacobian(i, k) * s.residuals[i];
    if ((upper ? d : -d) > 0) push.push_back({upper ? d : -d, rows[static_cast<size_t>(i)]});
  }
  std::sort(push.begin(), push.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  std::string out;
  for (size_t q = 0; q < push.size() && q < 4; ++q) {
    const io::PublishedRun& run = *runs[push[q].second].run;
    const double err = 100.0 * (std::exp(-s.residuals[static_cast<Eigen::Index>(
                                    std::find(rows.begin(), rows.end(), push[q].second) - rows.begin())]) -
                                1.0);
    out += (out.empty() ? "" : ", ") + run.id + " (line " + std::to_string(run.line) + ", predicted " + pct(err) +
           ")";
  }
  return out.empty() ? "no single row (the priors of the other parameters)" : out;
}

/// Inner leave-one-out score of fitting `params` (parameter `widened`, if < params.size(), with prior width
/// `wide_sigma`) to the runs with their completions fixed: the mean absolute log
/// error of each run predicted by the fit to the others (each value clipped to its range). Only the runs fitted
/// on enter it, so choosing parameters by it never looks at a run held out of the fit.
double inner_loo_score(const std::vector<RunCase>& runs, const std::vector<ParamRef>& params,
                       const std::vector<Completion>& comp, double sigma_y, size_t widened, double wide_sigma) {
  RunsProblem pb(runs, params, sigma_y);
  pb.set_completions(comp);
  if (widened < pb.size()) pb.set_sigma(widened, wide_sigma);
  std::vector<double> u;
  for (size_t j = 0; j < pb.size(); ++j) u.push_back(pb.prior_u(j));
  const std::vector<bool> fixed(pb.size(), false);
  std::vector<size_t> rows(runs.size());
  for (size_t i = 0; i < rows.size(); ++i) rows[i] = i;
  const LmSolution whole = lm_solve(pb.lm(), rows, u, fixed);
  for (size_t j = 0; j < pb.size(); ++j) {  // a model that needs a value out of range is not a candidate
    const FitParameterSpec& sp = spec(pb.param(j));
    const double v = from_u(pb.param(j), whole.u[j]);
    if (v < sp.lo || v > sp.hi) return std::numeric_limits<double>::infinity();
  }
  double sum = 0;
  for (size_t i : rows) {
    std::vector<size_t> others;
    for (size_t q : rows)
      if (q != i) others.push_back(q);
    std::vector<double> uu = lm_solve(pb.lm(), others, whole.u, fixed).u;
    for (size_t j = 0; j < pb.size(); ++j) {
      const FitParameterSpec& sp = spec(pb.param(j));
      uu[j] = to_u(pb.param(j), std::clamp(from_u(pb.param(j), uu[j]), sp.lo, sp.hi));
    }
    sum += std::fabs(pb.residual(i, uu));
  }
  return sum / static_cast<double>(rows.size());
}

double mean_abs(const std::vector<double>& v) {
  if (v.empty()) return 0;
  double s = 0;
  for (double x : v) s += std::fabs(x);
  return s / static_cast<double>(v.size());
}

}  // namespace

std::optional<double> RunFitRow::loo_error_pct() const {
  if (!loo_predicted) return std::nullopt;
  return 100.0 * (*loo_predicted - measured) / measured;
}

System run_case_system(const io::PublishedRun& run, const io::GpuProfile& gpu, const System* profile) {
  System s = io::run_system(gpu, run);
  return profile ? io::apply_calibration(std::move(s), *profile) : s;
}

RunsFit fit_runs(const std::vector<RunCase>& runs, const FitOptions& opt) {
  if (runs.empty()) throw ConfigError("fit-runs: no runs to fit");
  for (const RunCase& c : runs)
    if (c.base.gpu.name != runs.front().base.gpu.name)
      throw ConfigError("fit-runs: run " + c.run->id + " ran on " + c.base.gpu.name + ", run " +
                        runs.front().run->id + " on " + runs.front().base.gpu.name + ": fit one GPU at a time");
  RunsFit fit;
  std::vector<ParamRef> cands = candidate_params(runs);
  RunsProblem all(runs, cands, opt.sigma_log);
  std::vector<double> u0;
  for (size_t j = 0; j < all.size(); ++j) u0.push_back(all.prior_u(j));
  const double reserve0 = to_GiB(runs.front().base.memory_reserve);

  // Base predictions, and the sensitivity of each candidate at the prior: one no run responds to stays unfitted.
  const io::ValidationReport base_rep = resolve(runs, all, u0, reserve0);
  all.set_completions(completions(runs, base_rep));
  std::vector<size_t> rows(runs.size());
  for (size_t i = 0; i < rows.size(); ++i) rows[i] = i;
  std::vector<ParamRef> kept;
  {
    std::vector<double> r0;
    for (size_t i : rows) r0.push_back(all.residual(i, u0));
    for (size_t j = 0; j < all.size(); ++j) {
      std::vector<double> up = u0;
      up[j] += all.sigma(j);
      double most = 0;
      for (size_t i : rows) most = std::max(most, std::fabs(all.residual(i, up) - r0[i]));
      if (most >= kMinSensitivity)
        kept.push_back(all.param(j));
      else
        fit.not_fitted.push_back(all.param(j).label() + " (no run's step time depends on it)");
    }
  }
  // The prior width of kernel_overhead_us, chosen by the runs fitted on (docs/fit-runs.md): the base's launch
  // width, or the eager-dispatch width where that lowers their inner leave-one-out error.
  size_t overhead = kept.size();
  for (size_t j = 0; j < kept.size(); ++j)
    if (kept[j].kind == FitParameter::kernel_overhead_us) overhead = j;
  bool wide_overhead = false;
  if (opt.choose_overhead_prior && overhead < kept.size() && runs.size() >= kMinRunsToChoosePrior) {
    const std::vector<Completion> comp0 = completions(runs, base_rep);
    const double narrow = inner_loo_score(runs, kept, comp0, opt.sigma_log, kept.size(), 0);
    const double wide = inner_loo_score(runs, kept, comp0, opt.sigma_log, overhead, kEagerDispatchSigmaUs);
    wide_overhead = wide < narrow;
    // "kernel_overhead_us prior +-15 us (eager dispatch): inner leave-one-out 5.80% with it, 6.31% with +-4 us".
    const auto pct_or_range = [](double loo) {
      char b[64];
      if (std::isinf(loo)) return std::string("a value outside the range");
      std::snprintf(b, sizeof b, "%.2f%%", 100 * (std::exp(loo) - 1));
      return std::string(b);
    };
    const double launch = spec(kept[overhead]).prior_sigma;
    char buf[300];
    const std::string with = pct_or_range(wide_overhead ? wide : narrow),
                      without = pct_or_range(wide_overhead ? narrow : wide);
    std::snprintf(buf, sizeof buf, "kernel_overhead_us prior +-%g us (%s): inner leave-one-out %s with it, %s with "
                  "+-%g us", wide_overhead ? kEagerDispatchSigmaUs : launch,
                  wide_overhead ? "eager dispatch" : "launch", with.c_str(), without.c_str(),
                  wide_overhead ? launch : kEagerDispatchSigmaUs);
    fit.prior_choices.push_back(buf);
  }
  RunsProblem pb(runs, kept, opt.sigma_log);
  if (wide_overhead) pb.set_sigma(overhead, kEagerDispatchSigmaUs);
  std::vector<double> u;
  for (size_t j = 0; j < pb.size(); ++j) u.push_back(pb.prior_u(j));
  std::vector<bool> fixed(pb.size(), false);
  double reserve = reserve0;
  std::vector<Completion> comp = completions(runs, base_rep);
  io::ValidationReport rep = base_rep;
  LmSolution sol;
  for (int round = 0; round < std::max(1, opt.resolution_rounds); ++round) {
    pb.set_completions(comp);
    // Fit, pinning a parameter that leaves its range at that end when accepted anyway, else stopping there.
    for (;;) {
      sol = lm_solve(pb.lm(), rows, u, fixed);
      fit.iterations += sol.iterations;
      bool pinned = false;
      Eigen::Index k = 0;
      for (size_t j = 0; j < pb.size(); ++j) {
        if (fixed[j]) continue;
        const FitParameterSpec& sp = spec(pb.param(j));
        const double v = from_u(pb.param(j), sol.u[j]);
        if (v < sp.lo && sp.pin_at_lo) {
          char buf[256];
          std::snprintf(buf, sizeof buf, "%s (the runs show none: they push it to %.3g, pinned at %g)",
                        pb.param(j).label().c_str(), v, sp.lo);
          fit.not_fitted.push_back(buf);
          sol.u[j] = to_u(pb.param(j), sp.lo);
          fixed[j] = true;
          pinned = true;
          ++k;
          continue;
        }
        if (v > sp.hi || v < sp.lo) {
          const bool upper = v > sp.hi;
          char buf[512];
          std::snprintf(buf, sizeof buf, "%s: the runs need %.4g, outside [%g, %g] (%s); pushed %s by: ",
                        pb.param(j).label().c_str(), v, sp.lo, sp.hi, sp.why, upper ? "up" : "down");
          fit.out_of_range.push_back(buf + pushing_rows(runs, rows, sol, k, upper));
          if (opt.accept_anyway) {
            sol.u[j] = to_u(pb.param(j), upper ? sp.hi : sp.lo);
            fixed[j] = true;
            pinned = true;
          }
        }
        ++k;
      }
      u = sol.u;
      if (!fit.out_of_range.empty() && !opt.accept_anyway) return fit;  // refused: the caller reports why
      if (!pinned) break;
    }
    // Memory reserve, linear in the prediction: the predicted peak without the current reserve, then the
    // posterior mean of the reserve that closes the gap.
    std::vector<double> gap;
    for (const io::RunResult& r : rep.results)
      if (r.predicted_memory_gib && r.run->measured_peak_memory_gib)
        gap.push_back(*r.run->measured_peak_memory_gib - (*r.predicted_memory_gib - reserve));
    if (!gap.empty()) {
      const double wd = 1 / (kMemorySigmaGiB * kMemorySigmaGiB), wp = 1 / (kMemoryPriorSigmaGiB * kMemoryPriorSigmaGiB);
      double sum = 0;
      for (double g : gap) sum += g;
      reserve = (sum * wd + reserve0 * wp) / (static_cast<double>(gap.size()) * wd + wp);
      fit.memory_runs = static_cast<int>(gap.size());
      const double sd = 1 / std::sqrt(static_cast<double>(gap.size()) * wd + wp);
      fit.memory_lo95 = reserve - kZ95 * sd;
      fit.memory_hi95 = reserve + kZ95 * sd;
      if (reserve < kMemoryReserveMinGiB || reserve > kMemoryReserveMaxGiB) {
        std::string who;
        for (const io::RunResult& r : rep.results)
          if (r.predicted_memory_gib && r.run->measured_peak_memory_gib)
            who += (who.empty() ? "" : ", ") + r.run->id + " (measured " +
                   pct(100 * (*r.run->measured_peak_memory_gib / *r.predicted_memory_gib - 1)) + " vs predicted)";
        char buf[512];
        std::snprintf(buf, sizeof buf, "memory_reserve_gib: the runs need %.3g, outside [%g, %g] (beyond it the "
                      "runs hold memory the model does not know); by: ", reserve, kMemoryReserveMinGiB,
                      kMemoryReserveMaxGiB);
        fit.out_of_range.push_back(buf + who);
        if (!opt.accept_anyway) return fit;
        reserve = std::clamp(reserve, kMemoryReserveMinGiB, kMemoryReserveMaxGiB);
      }
      fit.memory_reserve_gib = reserve;
    }
    rep = resolve(runs, pb, u, reserve);
    std::vector<Completion> next = completions(runs, rep);
    const bool stable = same_completions(next, comp);
    comp = std::move(next);
    if (stable) break;
  }
  pb.set_completions(comp);

  // Intervals: the covariance of z is (J'J / s^2 + I)^-1 with s the larger of sigma_y and the residuals' RMS.
  const Eigen::Index n = sol.residuals.size();
  const double rms = n ? std::sqrt(sol.residuals.squaredNorm() / static_cast<double>(n)) : 0;
  const double s_y = std::max(opt.sigma_log, rms);
  const Eigen::MatrixXd cov = lm_covariance(sol.jacobian, s_y);
  Eigen::Index k = 0;
  for (size_t j = 0; j < pb.size(); ++j) {
    ParamValue v;
    v.ref = pb.param(j);
    v.prior = from_u(v.ref, pb.prior_u(j));
    v.value = from_u(v.ref, u[j]);
    if (fixed[j]) {
      v.at_bound = true;
      v.lo95 = v.hi95 = v.value;
    } else {
      const double half = kZ95 * pb.sigma(j) * std::sqrt(cov(k, k));
      // Clipped to the physical range: a value outside it is not a possible one (kernel_overhead_us >= 0).
      const FitParameterSpec& range = spec(v.ref);
      v.lo95 = std::clamp(from_u(v.ref, u[j] - half), range.lo, range.hi);
      v.hi95 = std::clamp(from_u(v.ref, u[j] + half), range.lo, range.hi);
      v.data_share = 1.0 - cov(k, k);
      const FitParameterSpec& sp = spec(v.ref);
      v.at_bound = v.value <= sp.lo || v.value >= sp.hi;
      ++k;
    }
    fit.params.push_back(v);
  }

  // Rows: base and fitted predictions (validate's full resolution), and each run predicted by the fit on the
  // others (its completion kept, the parameters refitted from the full fit's values).
  std::vector<double> base_err, fit_err, loo_err;
  for (size_t i = 0; i < runs.size(); ++i) {
    RunFitRow row;
    row.run = runs[i].run;
    row.measured = runs[i].run->measured_tokens_per_s_per_gpu;
    row.base_predicted = base_rep.results[i].predicted_tokens_per_s_per_gpu;
    row.fitted_predicted = rep.results[i].predicted_tokens_per_s_per_gpu;
    row.base_memory_gib = base_rep.results[i].predicted_memory_gib;
    row.fitted_memory_gib = rep.results[i].predicted_memory_gib;
    if (opt.leave_one_out && runs.size() >= 2) {
      std::vector<size_t> others;
      for (size_t q : rows)
        if (q != i) others.push_back(q);
      const LmSolution s = lm_solve(pb.lm(), others, u, fixed);
      std::vector<double> uu = s.u;
      for (size_t j = 0; j < pb.size(); ++j) {  // a value the others push out of range stays at the range's end
        const FitParameterSpec& sp = spec(pb.param(j));
        uu[j] = to_u(pb.param(j), std::clamp(from_u(pb.param(j), uu[j]), sp.lo, sp.hi));
      }
      row.loo_predicted = pb.predict(i, uu);
      loo_err.push_back(*row.loo_error_pct());
    }
    base_err.push_back(row.base_error_pct());
    fit_err.push_back(row.error_pct());
    fit.rows.push_back(row);
  }
  fit.base_mape = mean_abs(base_err);
  fit.fit_mape = mean_abs(fit_err);
  fit.loo_mape = mean_abs(loo_err);
  return fit;
}

System apply_fit(System base, const RunsFit& fit) {
  for (const ParamValue& v : fit.params) apply_param(&base, v.ref, v.value);
  if (fit.memory_reserve_gib) base.memory_reserve = GiB(*fit.memory_reserve_gib);
  base.fit_loo_errors_pct.clear();
  for (const RunFitRow& r : fit.rows)
    if (const auto e = r.loo_error_pct()) base.fit_loo_errors_pct.push_back(*e);
  return base;
}

}  // namespace shardplan::calibrate
