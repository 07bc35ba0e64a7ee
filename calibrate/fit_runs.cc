#include "calibrate/fit_runs.h"

#include <Eigen/Dense>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "modeler/evaluate.h"
#include "modeler/io/validation_run.h"
#include "modeler/problems.h"

namespace shardplan::calibrate {

namespace {

// Memory reserve: a prior of 0 +- 2 GiB around the base's, against a per-run scatter of 2 GiB (validate's memory
// MAPE of ~7% on 60-80 GiB peaks is 4-5 GiB of absolute error before calibration; half of it after).
constexpr double kMemoryPriorSigmaGiB = 2.0, kMemorySigmaGiB = 2.0;
// Forward-difference step in prior-sigma units, and the sensitivity below which a parameter is left at its prior:
// a 1-sigma change moving no run's log step time by 0.1%.
constexpr double kStepZ = 0.02, kMinSensitivity = 1e-3;
constexpr double kZ95 = 1.959964;

const FitParameterSpec& spec(const ParamRef& p) { return fit_parameter_spec(p.kind); }

double to_u(const ParamRef& p, double value) { return spec(p).log ? std::log(value) : value; }
double from_u(const ParamRef& p, double u) { return spec(p).log ? std::exp(u) : u; }

std::string pct(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%+.1f%%", v);
  return buf;
}

/// A run's resolved plan and the framework it runs under: what the fit evaluates while the parameters move.
struct Completion {
  Plan plan;
  Framework fw;
  std::vector<std::string> chosen;
};

/// The fit's state: runs, their completions, the parameters and priors.
class Problem {
 public:
  Problem(const std::vector<RunCase>& runs, std::vector<ParamRef> params, double sigma_y)
      : runs_(runs), params_(std::move(params)), sigma_y_(sigma_y) {
    for (const ParamRef& p : params_) {
      prior_u_.push_back(to_u(p, base_value(runs_.front().base, p)));
      sigma_.push_back(spec(p).prior_sigma);
    }
  }

  size_t size() const { return params_.size(); }
  const ParamRef& param(size_t j) const { return params_[j]; }
  double prior_u(size_t j) const { return prior_u_[j]; }
  double sigma(size_t j) const { return sigma_[j]; }
  double sigma_y() const { return sigma_y_; }
  void set_completions(std::vector<Completion> c) { comp_ = std::move(c); }

  System system(size_t i, const std::vector<double>& u, double reserve_gib) const {
    System s = runs_[i].base;
    for (size_t j = 0; j < params_.size(); ++j) apply_param(&s, params_[j], from_u(params_[j], u[j]));
    s.memory_reserve = GiB(reserve_gib);
    return s;
  }
  /// Predicted tokens/s/GPU of run i with its completion fixed.
  double predict(size_t i, const std::vector<double>& u) const {
    const Estimate e = evaluate(runs_[i].run->model, system(i, u, 0), comp_[i].plan, comp_[i].fw);
    if (e.time.compute.v <= 0 || !(e.tokens_per_s_per_gpu > 0))
      throw ConfigError("run " + runs_[i].run->id + ": its plan does not evaluate with the parameters (" +
                        join_problems(e.problems) + ")");
    return e.tokens_per_s_per_gpu;
  }
  /// log predicted step time - log measured step time (= log measured / predicted throughput).
  double residual(size_t i, const std::vector<double>& u) const {
    return std::log(runs_[i].run->measured_tokens_per_s_per_gpu / predict(i, u));
  }

 private:
  const std::vector<RunCase>& runs_;
  std::vector<ParamRef> params_;
  std::vector<double> prior_u_, sigma_;
  double sigma_y_;
  std::vector<Completion> comp_;
};

struct Solution {
  std::vector<double> u;
  Eigen::MatrixXd jacobian;  // rows x free parameters, d residual / d z (z = (u - prior) / sigma)
  Eigen::VectorXd residuals;
  int iterations = 0;
};

/// Levenberg-Marquardt on the rows `rows` over the parameters not in `fixed` (whose u stays as given).
Solution solve(const Problem& pb, const std::vector<size_t>& rows, std::vector<double> u,
               const std::vector<bool>& fixed) {
  std::vector<size_t> free;
  for (size_t j = 0; j < pb.size(); ++j)
    if (!fixed[j]) free.push_back(j);
  const Eigen::Index n = static_cast<Eigen::Index>(rows.size()), p = static_cast<Eigen::Index>(free.size());
  const auto residuals = [&](const std::vector<double>& at) {
    Eigen::VectorXd r(n);
    for (Eigen::Index i = 0; i < n; ++i) r[i] = pb.residual(rows[static_cast<size_t>(i)], at);
    return r;
  };
  const auto prior_z = [&](const std::vector<double>& at) {
    Eigen::VectorXd z(p);
    for (Eigen::Index k = 0; k < p; ++k) {
      const size_t j = free[static_cast<size_t>(k)];
      z[k] = (at[j] - pb.prior_u(j)) / pb.sigma(j);
    }
    return z;
  };
  const double wy = 1.0 / (pb.sigma_y() * pb.sigma_y());
  const auto cost = [&](const Eigen::VectorXd& r, const Eigen::VectorXd& z) {
    return r.squaredNorm() * wy + z.squaredNorm();
  };

  Solution s;
  Eigen::VectorXd r = residuals(u);
  Eigen::VectorXd z = prior_z(u);
  double c = cost(r, z), lambda = 1e-3;
  Eigen::MatrixXd J(n, p);
  for (int it = 0; it < 60; ++it) {
    s.iterations = it + 1;
    for (Eigen::Index k = 0; k < p; ++k) {
      const size_t j = free[static_cast<size_t>(k)];
      std::vector<double> up = u;
      up[j] += kStepZ * pb.sigma(j);
      J.col(k) = (residuals(up) - r) / kStepZ;
    }
    if (p == 0) break;
    const Eigen::MatrixXd A = J.transpose() * J * wy + Eigen::MatrixXd::Identity(p, p);
    const Eigen::VectorXd g = J.transpose() * r * wy + z;
    bool improved = false;
    for (int tries = 0; tries < 12 && !improved; ++tries) {
      Eigen::MatrixXd damped = A;
      damped.diagonal() += lambda * A.diagonal();
      const Eigen::VectorXd dz = damped.ldlt().solve(-g);
      std::vector<double> trial = u;
      for (Eigen::Index k = 0; k < p; ++k) {
        const size_t j = free[static_cast<size_t>(k)];
        trial[j] += dz[k] * pb.sigma(j);
      }
      const Eigen::VectorXd rt = residuals(trial), zt = prior_z(trial);
      const double ct = cost(rt, zt);
      if (ct < c) {
        const bool converged = dz.lpNorm<Eigen::Infinity>() < 1e-4 || c - ct < 1e-10;
        u = trial, r = rt, z = zt, c = ct;
        lambda = std::max(1e-7, lambda / 3);
        improved = true;
        if (converged) it = 1 << 20;  // leave after the Jacobian at the solution is taken below
      } else {
        lambda *= 4;
      }
    }
    if (!improved || it >= (1 << 20)) break;
  }
  // The Jacobian at the solution, for the covariance and the row attribution.
  for (Eigen::Index k = 0; k < p; ++k) {
    const size_t j = free[static_cast<size_t>(k)];
    std::vector<double> up = u;
    up[j] += kStepZ * pb.sigma(j);
    J.col(k) = (residuals(up) - r) / kStepZ;
  }
  s.u = std::move(u);
  s.jacobian = std::move(J);
  s.residuals = std::move(r);
  return s;
}

/// Resolves the runs' unknown plan fields on the system with parameters `u` as validate does, returning the
/// validation results (one per run, in order).
io::ValidationReport resolve(const std::vector<RunCase>& runs, const Problem& pb, const std::vector<double>& u,
                             double reserve_gib) {
  std::vector<io::PublishedRun> copies;
  for (const RunCase& c : runs) copies.push_back(*c.run);
  const System calibrated = pb.system(0, u, reserve_gib);
  io::ValidationReport rep = io::run_validation(copies, &calibrated);
  for (size_t i = 0; i < rep.results.size(); ++i) {
    if (rep.results[i].skipped)
      throw ConfigError("run " + runs[i].run->id + " (line " + std::to_string(runs[i].run->line) +
                        "): " + rep.results[i].skip_reason);
    rep.results[i].run = runs[i].run;  // the copies die here
  }
  return rep;
}

std::vector<Completion> completions(const std::vector<RunCase>& runs, const io::ValidationReport& rep) {
  std::vector<Completion> out;
  for (size_t i = 0; i < runs.size(); ++i) {
    const io::RunResult& r = rep.results[i];
    const Framework* fw = find_framework(r.framework);
    SHARDPLAN_CHECK(fw != nullptr);
    // Whether the chosen completion ran compiled: the run's own statement, else the resolution's choice, else
    // the framework's default (fastest_fitting's candidates start from it, validation.cc).
    bool is_compiled = fw->compiled_by_default;
    if (runs[i].run->plan.compiled) is_compiled = *runs[i].run->plan.compiled;
    for (const Choice& c : r.resolution.choices)
      if (c.field == "compiled") is_compiled = c.value == "yes";
    out.push_back({r.resolution.estimate.plan, is_compiled ? compiled(*fw) : *fw, r.resolution.chosen});
  }
  return out;
}

bool same_completions(const std::vector<Completion>& a, const std::vector<Completion>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].chosen != b[i].chosen) return false;
  return true;
}

/// The rows that push parameter k (a column of the solution's Jacobian) beyond `upper` or below the range: those
/// whose share of the data gradient points outwards, largest first.
std::string pushing_rows(const std::vector<RunCase>& runs, const std::vector<size_t>& rows, const Solution& s,
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

double mean_abs(const std::vector<double>& v) {
  if (v.empty()) return 0;
  double s = 0;
  for (double x : v) s += std::fabs(x);
  return s / static_cast<double>(v.size());
}

}  // namespace

std::string ParamRef::label() const {
  std::string s = fit_parameter_spec(kind).name;
  if (kind == FitParameter::gemm_scale) s += std::string(".") + kDtypeNames[static_cast<size_t>(dtype)];
  if (kind == FitParameter::busbw_scale || kind == FitParameter::alltoall_scale) s += "." + tier;
  return s;
}

std::optional<double> RunFitRow::loo_error_pct() const {
  if (!loo_predicted) return std::nullopt;
  return 100.0 * (*loo_predicted - measured) / measured;
}

void apply_param(System* s, const ParamRef& p, double value) {
  switch (p.kind) {
    case FitParameter::gemm_scale: scale_gemm_efficiency(&s->gpu, p.dtype, value); break;
    case FitParameter::attention_scale: scale_attention_efficiency(&s->gpu, value); break;
    case FitParameter::memory_bw_scale: scale_memory_efficiency(&s->gpu, value); break;
    case FitParameter::busbw_scale:
      for (Tier& t : s->tiers)
        if (t.name == p.tier) {
          scale_busbw(&t, value);
          if (p.alltoall_apart) scale_alltoall_busbw(&t, 1.0 / value);  // all-to-all is alltoall_scale's
        }
      break;
    case FitParameter::alltoall_scale:
      for (Tier& t : s->tiers)
        if (t.name == p.tier) scale_alltoall_busbw(&t, value);
      break;
    case FitParameter::overlap_efficiency: s->overlap_efficiency = value; break;
    case FitParameter::kernel_overhead_us: s->gpu.eff.kernel_overhead = us(value); break;
  }
}

double base_value(const System& s, const ParamRef& p) {
  switch (p.kind) {
    case FitParameter::overlap_efficiency: return s.overlap_efficiency;
    case FitParameter::kernel_overhead_us: return s.gpu.eff.kernel_overhead.v * 1e6;
    default: return 1.0;
  }
}

std::vector<ParamRef> candidate_params(const std::vector<RunCase>& runs) {
  std::vector<ParamRef> out;
  if (runs.empty()) return out;
  const System& s = runs.front().base;
  std::vector<Dtype> dtypes = {Dtype::bf16};
  for (const RunCase& c : runs) {
    const Dtype d = c.run->plan.plan.precision;
    if (std::find(dtypes.begin(), dtypes.end(), d) == dtypes.end() && s.gpu.peak_for(d).v > 0) dtypes.push_back(d);
  }
  // bf16 last: a dtype without tables of its own takes a copy of bf16's before either is scaled (system.h), so
  // applying the parameters in this order keeps each scale its own.
  std::rotate(dtypes.begin(), dtypes.begin() + 1, dtypes.end());
  for (Dtype d : dtypes) out.push_back({FitParameter::gemm_scale, d, ""});
  out.push_back({FitParameter::attention_scale, Dtype::bf16, ""});
  out.push_back({FitParameter::memory_bw_scale, Dtype::bf16, ""});
  std::vector<std::string> tiers;
  for (const RunCase& c : runs)
    for (const Tier& t : c.base.tiers)
      if (std::find(tiers.begin(), tiers.end(), t.name) == tiers.end()) tiers.push_back(t.name);
  // Expert-parallel MoE runs dispatch and combine their tokens with all-to-alls, whose achieved bandwidth is not
  // the ring collectives' (fit_parameters.h): each tier's all-to-all then has a scale of its own.
  bool all_to_all = false;
  for (const RunCase& c : runs) all_to_all = all_to_all || (c.run->moe && c.run->plan.plan.ep > 1);
  for (const std::string& t : tiers) out.push_back({FitParameter::busbw_scale, Dtype::bf16, t, all_to_all});
  if (all_to_all)
    for (const std::string& t : tiers) out.push_back({FitParameter::alltoall_scale, Dtype::bf16, t, false});
  out.push_back({FitParameter::overlap_efficiency, Dtype::bf16, ""});
  out.push_back({FitParameter::kernel_overhead_us, Dtype::bf16, ""});
  return out;
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
  Problem all(runs, cands, opt.sigma_log);
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
  Problem pb(runs, kept, opt.sigma_log);
  std::vector<double> u;
  for (size_t j = 0; j < pb.size(); ++j) u.push_back(pb.prior_u(j));
  std::vector<bool> fixed(pb.size(), false);
  double reserve = reserve0;
  std::vector<Completion> comp = completions(runs, base_rep);
  io::ValidationReport rep = base_rep;
  Solution sol;
  for (int round = 0; round < std::max(1, opt.resolution_rounds); ++round) {
    pb.set_completions(comp);
    // Fit, pinning a parameter that leaves its range at that end when accepted anyway, else stopping there.
    for (;;) {
      sol = solve(pb, rows, u, fixed);
      fit.iterations += sol.iterations;
      bool pinned = false;
      Eigen::Index k = 0;
      for (size_t j = 0; j < pb.size(); ++j) {
        if (fixed[j]) continue;
        const FitParameterSpec& sp = spec(pb.param(j));
        const double v = from_u(pb.param(j), sol.u[j]);
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
  const Eigen::Index p = sol.jacobian.cols();
  Eigen::MatrixXd cov = Eigen::MatrixXd::Identity(p, p);
  if (p > 0)
    cov = (sol.jacobian.transpose() * sol.jacobian / (s_y * s_y) + Eigen::MatrixXd::Identity(p, p)).inverse();
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
      const Solution s = solve(pb, others, u, fixed);
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
