#include "calibrate/lm_solver.h"

#include <doctest/doctest.h>

#include <cmath>

using namespace shardplan::calibrate;

namespace {

/// A linear problem, r_i(u) = u0 + u1 x_i - y_i: Levenberg-Marquardt must land on the closed-form ridge solution
/// (J'J / s^2 + P)^-1 (J'y / s^2 + P prior), P the prior precision.
struct Linear {
  std::vector<double> x = {0, 1, 2, 3, 4}, y = {1.1, 2.9, 5.2, 7.0, 8.9};
  LmProblem problem(double sigma_y, double prior_sigma) const {
    return {{0.0, 0.0}, {prior_sigma, prior_sigma}, sigma_y,
            [this](size_t i, const std::vector<double>& u) { return u[0] + u[1] * x[i] - y[i]; }};
  }
  Eigen::Vector2d ridge(double sigma_y, double prior_sigma) const {
    Eigen::MatrixXd J(5, 2);
    Eigen::VectorXd yy(5);
    for (int i = 0; i < 5; ++i) J(i, 0) = 1, J(i, 1) = x[i], yy[i] = y[i];
    const double wy = 1 / (sigma_y * sigma_y), wp = 1 / (prior_sigma * prior_sigma);
    const Eigen::Matrix2d A = J.transpose() * J * wy + Eigen::Matrix2d::Identity() * wp;
    return A.ldlt().solve(J.transpose() * yy * wy);
  }
};

const std::vector<size_t> kAll = {0, 1, 2, 3, 4};

}  // namespace

TEST_SUITE("lm_solver") {

TEST_CASE("a linear problem lands on the closed-form ridge solution") {
  const Linear lin;
  for (double prior_sigma : {100.0, 0.5}) {
    const LmSolution s = lm_solve(lin.problem(0.1, prior_sigma), kAll, {0, 0}, {false, false});
    const Eigen::Vector2d want = lin.ridge(0.1, prior_sigma);
    CHECK(s.u[0] == doctest::Approx(want[0]).epsilon(1e-4));
    CHECK(s.u[1] == doctest::Approx(want[1]).epsilon(1e-4));
    REQUIRE(s.residuals.size() == 5);
    CHECK(s.residuals[2] == doctest::Approx(s.u[0] + 2 * s.u[1] - 5.2));
    // The Jacobian is in prior-sigma units: d r / d z = d r / d u * sigma.
    CHECK(s.jacobian(3, 1) == doctest::Approx(3 * prior_sigma).epsilon(1e-6));
    CHECK(s.iterations >= 1);
  }
  // Wide priors: the least-squares line itself (by hand from the five points: mean x 2, mean y 5.02, Sxy 19.7,
  // Sxx 10, so slope 1.97 and intercept 5.02 - 2 * 1.97 = 1.08).
  const LmSolution wide = lm_solve(lin.problem(0.1, 1e4), kAll, {0, 0}, {false, false});
  CHECK(wide.u[1] == doctest::Approx(1.97).epsilon(1e-3));
  CHECK(wide.u[0] == doctest::Approx(1.08).epsilon(1e-3));
}

TEST_CASE("a fixed parameter keeps its value, and a subset of rows is fitted alone") {
  const Linear lin;
  const LmSolution s = lm_solve(lin.problem(0.1, 1e4), kAll, {1.0, 0}, {true, false});
  CHECK(s.u[0] == 1.0);
  CHECK(s.jacobian.cols() == 1);
  // Slope through the fixed intercept: sum x (y - 1) / sum x^2 = (1.9 + 8.4 + 18 + 31.6) / 30 = 59.9 / 30.
  CHECK(s.u[1] == doctest::Approx(59.9 / 30).epsilon(1e-4));
  const LmSolution two = lm_solve(lin.problem(0.1, 1e4), {0, 4}, {0, 0}, {false, false});
  CHECK(two.residuals.size() == 2);
  CHECK(two.u[1] == doctest::Approx((8.9 - 1.1) / 4).epsilon(1e-3));
}

TEST_CASE("the covariance is (J'J / s^2 + I)^-1 and narrows with the data") {
  Eigen::MatrixXd J(2, 1);
  J << 1, 1;
  const Eigen::MatrixXd c = lm_covariance(J, 0.5);
  REQUIRE(c.rows() == 1);
  CHECK(c(0, 0) == doctest::Approx(1.0 / (2 / 0.25 + 1)));
  CHECK(lm_covariance(Eigen::MatrixXd(3, 0), 0.5).size() == 0);
}

}
