// Efficiency tables: piecewise-linear curves in log(x), with a named out-of-range policy.
// The same form is written by calibration (`shardplan calibrate fit`) and by hand in hwprofiles/.
#pragma once

#include <string>
#include <vector>

namespace shardplan {

/// What a curve returns outside its measured range.
enum class OutOfRange {
  clamp,  // the nearest end point (default: efficiencies saturate at both ends)
  error,  // a lookup outside the table throws ConfigError naming the table (for strict calibrated runs)
};

/// y(x) through measured points, interpolated linearly in log(x). x must be positive and increasing.
struct Curve {
  std::vector<double> x;
  std::vector<double> y;
  OutOfRange policy = OutOfRange::clamp;
  std::string source;  // where the points come from: a datasheet, a paper table, a calibration run

  bool empty() const { return x.empty(); }
  double at(double xq) const;
  static Curve constant(double y, std::string source);
};

}  // namespace shardplan
