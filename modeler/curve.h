// Efficiency tables: piecewise-linear curves in log(x), with a named out-of-range policy.
// The same form is written by calibration (`shardplan calibrate fit`) and by hand in hwprofiles/.
#pragma once

#include <span>
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
  /// A measured table binned at powers of two: x = 2^(first_log2 + i), y = values[i] * unit (the measured kernel
  /// tables of modeler/serving/, stored in the units their sources print).
  static Curve powers_of_two(int first_log2, std::span<const double> values, double unit, std::string source);
};

/// y(m, n, k) on a measured grid, interpolated trilinearly in (log m, log n, log k) and clamped to the grid at
/// every edge: a GEMM table indexed by shape rather than by FLOPs alone, so effects of one dimension (a short m,
/// a narrow n, the reduction depth k) and the fall of efficiency at the largest sizes are kept as measured.
/// Axes positive and strictly increasing; values[(i * n.size() + j) * k.size() + l] is the point (m[i], n[j], k[l]).
struct Grid3 {
  std::vector<double> m, n, k;
  std::vector<double> values;
  std::string source;
  /// log of each axis, filled by index(): a lookup then takes one log per coordinate instead of three (a plan
  /// evaluation looks GEMMs up some 30 times). Without them at() computes the logs itself.
  std::vector<double> log_m, log_n, log_k;

  bool empty() const { return values.empty(); }
  double at(double mq, double nq, double kq) const;
  void index();
};

}  // namespace shardplan
