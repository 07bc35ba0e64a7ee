// The fit's problem over runs (calibrate/fit_runs.cc's internals, apart so that the fit itself stays one idea):
// each run's completion (its resolved plan and framework), the parameters with their priors, and the residual of
// a run as the solver (calibrate/lm_solver.h) sees it. Not a public interface: only fit_runs.cc and its tests.
#pragma once

#include <cmath>
#include <string>
#include <vector>

#include "calibrate/fit_params.h"
#include "calibrate/lm_solver.h"
#include "modeler/evaluate.h"
#include "modeler/framework.h"
#include "modeler/io/validation_run.h"
#include "modeler/problems.h"

namespace shardplan::calibrate {

/// A parameter's range and prior width, and its value in the fit's coordinate u (the log of a scale, else itself).
inline const FitParameterSpec& spec(const ParamRef& p) { return fit_parameter_spec(p.kind); }
inline double to_u(const ParamRef& p, double value) { return spec(p).log ? std::log(value) : value; }
inline double from_u(const ParamRef& p, double u) { return spec(p).log ? std::exp(u) : u; }

/// A run's resolved plan and the framework it runs under: what the fit evaluates while the parameters move.
struct Completion {
  Plan plan;
  Framework fw;
  std::vector<std::string> chosen;
};

/// The fit's state: runs, their completions, the parameters and priors.
class RunsProblem {
 public:
  RunsProblem(const std::vector<RunCase>& runs, std::vector<ParamRef> params, double sigma_y)
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
  /// A prior width other than the parameter's spec (the eager-dispatch width of kernel_overhead_us, chosen by
  /// choose_overhead_prior).
  void set_sigma(size_t j, double sigma) { sigma_[j] = sigma; }

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
  /// The least-squares problem the solver sees (calibrate/lm_solver.h): rows are runs.
  LmProblem lm() const {
    return {prior_u_, sigma_, sigma_y_, [this](size_t i, const std::vector<double>& u) { return residual(i, u); }};
  }

 private:
  const std::vector<RunCase>& runs_;
  std::vector<ParamRef> params_;
  std::vector<double> prior_u_, sigma_;
  double sigma_y_;
  std::vector<Completion> comp_;
};

/// Resolves the runs' unknown plan fields on the system with parameters `u` as validate does, returning the
/// validation results (one per run, in order). Throws ConfigError naming a run that does not resolve.
io::ValidationReport resolve(const std::vector<RunCase>& runs, const RunsProblem& pb, const std::vector<double>& u,
                             double reserve_gib);
/// Each run's completion from a resolution: its resolved plan and framework (compiled where it ran compiled).
std::vector<Completion> completions(const std::vector<RunCase>& runs, const io::ValidationReport& rep);
/// Whether two resolutions chose the same unknown plan fields for every run.
bool same_completions(const std::vector<Completion>& a, const std::vector<Completion>& b);

}  // namespace shardplan::calibrate
