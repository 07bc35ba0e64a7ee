#include "calibrate/lm_solver.h"

#include <algorithm>

namespace shardplan::calibrate {

LmSolution lm_solve(const LmProblem& pb, const std::vector<size_t>& rows, std::vector<double> u,
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
      z[k] = (at[j] - pb.prior_u[j]) / pb.sigma[j];
    }
    return z;
  };
  const double wy = 1.0 / (pb.sigma_y * pb.sigma_y);
  const auto cost = [&](const Eigen::VectorXd& r, const Eigen::VectorXd& z) {
    return r.squaredNorm() * wy + z.squaredNorm();
  };

  LmSolution s;
  Eigen::VectorXd r = residuals(u);
  Eigen::VectorXd z = prior_z(u);
  double c = cost(r, z), lambda = 1e-3;
  Eigen::MatrixXd J(n, p);
  for (int it = 0; it < 60; ++it) {
    s.iterations = it + 1;
    for (Eigen::Index k = 0; k < p; ++k) {
      const size_t j = free[static_cast<size_t>(k)];
      std::vector<double> up = u;
      up[j] += kLmStepZ * pb.sigma[j];
      J.col(k) = (residuals(up) - r) / kLmStepZ;
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
        trial[j] += dz[k] * pb.sigma[j];
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
    up[j] += kLmStepZ * pb.sigma[j];
    J.col(k) = (residuals(up) - r) / kLmStepZ;
  }
  s.u = std::move(u);
  s.jacobian = std::move(J);
  s.residuals = std::move(r);
  return s;
}

Eigen::MatrixXd lm_covariance(const Eigen::MatrixXd& jacobian, double s_y) {
  const Eigen::Index p = jacobian.cols();
  Eigen::MatrixXd cov = Eigen::MatrixXd::Identity(p, p);
  if (p > 0) cov = (jacobian.transpose() * jacobian / (s_y * s_y) + Eigen::MatrixXd::Identity(p, p)).inverse();
  return cov;
}

}  // namespace shardplan::calibrate
