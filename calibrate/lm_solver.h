// Prior-centred (regularised) nonlinear least squares by Levenberg-Marquardt, the solver behind calibrate fit-runs
// (calibrate/fit_runs.h, docs/fit-runs.md). It minimises, over the parameters u,
//     sum_i r_i(u)^2 / sigma_y^2 + sum_j ((u_j - prior_j) / sigma_j)^2
// with a forward-difference Jacobian in prior-sigma units (z_j = (u_j - prior_j) / sigma_j), so that the damping
// and the step are the same for a log scale and a linear value. It knows nothing of runs or systems: the residual
// of a row is a callback.
#pragma once

#include <Eigen/Dense>

#include <cstddef>
#include <functional>
#include <vector>

namespace shardplan::calibrate {

/// The problem: each parameter's prior mean and width (in u), the per-row scatter, and the residual of a row.
struct LmProblem {
  std::vector<double> prior_u, sigma;
  double sigma_y = 0;
  std::function<double(size_t row, const std::vector<double>& u)> residual;
  size_t size() const { return prior_u.size(); }
};

struct LmSolution {
  std::vector<double> u;
  Eigen::MatrixXd jacobian;  // rows x free parameters, d residual / d z (z = (u - prior) / sigma)
  Eigen::VectorXd residuals;
  int iterations = 0;
};

/// Forward-difference step of the Jacobian, in prior-sigma units.
inline constexpr double kLmStepZ = 0.02;

/// Levenberg-Marquardt on the rows `rows` over the parameters not in `fixed` (whose u stays as given), from `u`.
/// At most 60 iterations; stops when a step changes no z by 1e-4 or the cost by 1e-10, or no damping improves it.
/// The returned Jacobian is taken at the solution.
LmSolution lm_solve(const LmProblem& pb, const std::vector<size_t>& rows, std::vector<double> u,
                    const std::vector<bool>& fixed);

/// Posterior covariance of the free parameters' z: (J'J / s_y^2 + I)^-1 (the identity is the unit prior in z).
Eigen::MatrixXd lm_covariance(const Eigen::MatrixXd& jacobian, double s_y);

}  // namespace shardplan::calibrate
