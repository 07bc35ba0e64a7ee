#include "modeler/curve.h"

#include <doctest/doctest.h>

#include <array>

#include "modeler/problems.h"

using namespace shardplan;

namespace {
Curve two_points(OutOfRange policy) {
  Curve c;
  c.x = {1e3, 1e6};
  c.y = {0.2, 0.8};
  c.policy = policy;
  c.source = "test table";
  return c;
}
}  // namespace

TEST_CASE("Curve::at interpolates linearly in log(x)") {
  const Curve c = two_points(OutOfRange::clamp);
  CHECK(c.at(1e3) == doctest::Approx(0.2));
  CHECK(c.at(1e6) == doctest::Approx(0.8));
  CHECK(c.at(1e4) == doctest::Approx(0.4));     // a third of the way in log10: 3 -> 4 of 3 -> 6
  CHECK(c.at(1e5) == doctest::Approx(0.6));
  CHECK(c.at(31622.776601683792) == doctest::Approx(0.5));  // 10^4.5, the log midpoint
}

TEST_CASE("Curve::powers_of_two bins a measured table at 2^k in the stated unit") {
  const std::array<double, 3> tflops = {10, 20, 40};
  const Curve c = Curve::powers_of_two(30, tflops, 1e12, "test table");
  REQUIRE(c.x.size() == 3);
  CHECK(c.x[0] == 1073741824.0);  // 2^30
  CHECK(c.x[2] == 4294967296.0);  // 2^32
  CHECK(c.y[1] == 20e12);
  CHECK(c.source == "test table");
  CHECK(c.at(2147483648.0) == doctest::Approx(20e12).scale(0));
}

TEST_CASE("Curve::at with three points uses the bracketing segment") {
  Curve c;
  c.x = {1, 100, 10000};
  c.y = {0.1, 0.5, 0.7};
  CHECK(c.at(10) == doctest::Approx(0.3));
  CHECK(c.at(1000) == doctest::Approx(0.6));
}

TEST_CASE("clamp policy returns the end points outside the table") {
  const Curve c = two_points(OutOfRange::clamp);
  CHECK(c.at(1) == doctest::Approx(0.2));
  CHECK(c.at(1e9) == doctest::Approx(0.8));
}

TEST_CASE("error policy throws outside the table and names it") {
  const Curve c = two_points(OutOfRange::error);
  CHECK(c.at(1e3) == doctest::Approx(0.2));  // the end points themselves are inside
  CHECK(c.at(1e6) == doctest::Approx(0.8));
  CHECK_THROWS_WITH_AS(c.at(10),
                       "efficiency table (test table) has no point for 10.000000 (range 1000.000000..1000000.000000, "
                       "policy 'error')",
                       ConfigError);
  CHECK_THROWS_WITH_AS(c.at(2e6),
                       "efficiency table (test table) has no point for 2000000.000000 (range "
                       "1000.000000..1000000.000000, policy 'error')",
                       ConfigError);
}

TEST_CASE("a single point is a constant, whatever the policy") {
  Curve c = Curve::constant(0.75, "datasheet");
  CHECK(c.at(1e-3) == doctest::Approx(0.75));
  CHECK(c.at(1e12) == doctest::Approx(0.75));
  c.policy = OutOfRange::error;
  CHECK(c.at(1e12) == doctest::Approx(0.75));
  CHECK(c.source == "datasheet");
}

TEST_SUITE("grid3") {

TEST_CASE("a grid returns its points, interpolates in log space per axis and clamps at every edge") {
  Grid3 g;
  g.m = {1, 4};
  g.n = {10};
  g.k = {2, 8};
  g.values = {0.1, 0.3,   // m = 1: k = 2, 8
              0.5, 0.9};  // m = 4
  CHECK(g.at(1, 10, 2) == doctest::Approx(0.1));
  CHECK(g.at(4, 10, 8) == doctest::Approx(0.9));
  CHECK(g.at(2, 10, 2) == doctest::Approx(0.3));   // log-midpoint of m: (0.1 + 0.5) / 2
  CHECK(g.at(2, 10, 4) == doctest::Approx(0.45));  // both midpoints: mean of the four corners
  CHECK(g.at(0.5, 99, 1) == doctest::Approx(0.1)); // below m and k, above the single n: clamped
  CHECK(g.at(100, 1, 100) == doctest::Approx(0.9));
  Grid3 indexed = g;
  indexed.index();
  for (const double m : {0.5, 1.5, 2.0, 3.9, 9.0})
    for (const double k : {1.0, 2.5, 5.0, 8.0}) CHECK(indexed.at(m, 10, k) == doctest::Approx(g.at(m, 10, k)));
}

}
