#include "modeler/curve.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "modeler/problems.h"

namespace shardplan {

double Curve::at(double xq) const {
  SHARDPLAN_CHECK(!x.empty() && x.size() == y.size());
  if (x.size() == 1) return y[0];
  if (xq <= x.front() || xq >= x.back()) {
    const bool inside = xq == x.front() || xq == x.back();
    if (!inside && policy == OutOfRange::error)
      throw ConfigError("efficiency table (" + source + ") has no point for " + std::to_string(xq) +
                        " (range " + std::to_string(x.front()) + ".." + std::to_string(x.back()) +
                        ", policy 'error')");
    return xq <= x.front() ? y.front() : y.back();
  }
  const auto hi = std::upper_bound(x.begin(), x.end(), xq);
  const size_t i = static_cast<size_t>(hi - x.begin());
  const double t = (std::log(xq) - std::log(x[i - 1])) / (std::log(x[i]) - std::log(x[i - 1]));
  return y[i - 1] + t * (y[i] - y[i - 1]);
}

namespace {

/// Lower index and weight of the upper neighbour of xq on an increasing axis, clamped to the ends. `logs` holds
/// log(axis) when indexed (else empty).
std::pair<size_t, double> axis_position(const std::vector<double>& axis, const std::vector<double>& logs, double xq) {
  if (axis.size() == 1 || xq <= axis.front()) return {0, 0.0};
  if (xq >= axis.back()) return {axis.size() - 2, 1.0};
  const size_t i = static_cast<size_t>(std::upper_bound(axis.begin(), axis.end(), xq) - axis.begin()) - 1;
  const double lo = logs.empty() ? std::log(axis[i]) : logs[i], hi = logs.empty() ? std::log(axis[i + 1]) : logs[i + 1];
  return {i, (std::log(xq) - lo) / (hi - lo)};
}

std::vector<double> logs_of(const std::vector<double>& axis) {
  std::vector<double> out;
  for (double v : axis) out.push_back(std::log(v));
  return out;
}

}  // namespace

double Grid3::at(double mq, double nq, double kq) const {
  SHARDPLAN_CHECK(!values.empty() && values.size() == m.size() * n.size() * k.size());
  const bool indexed = log_m.size() == m.size() && log_n.size() == n.size() && log_k.size() == k.size();
  static const std::vector<double> kNone;
  const auto [i, ti] = axis_position(m, indexed ? log_m : kNone, mq);
  const auto [j, tj] = axis_position(n, indexed ? log_n : kNone, nq);
  const auto [l, tl] = axis_position(k, indexed ? log_k : kNone, kq);
  const size_t nn = n.size(), nk = k.size();
  const size_t di = m.size() > 1 ? 1 : 0, dj = nn > 1 ? 1 : 0, dl = nk > 1 ? 1 : 0;
  const auto v = [&](size_t a, size_t b, size_t c) { return values[(a * nn + b) * nk + c]; };
  // Lambdas capture copies, not the structured bindings: clang before 16 cannot capture those (P1091).
  const auto along_k = [&, l = l, tl = tl](size_t a, size_t b) {
    return v(a, b, l) + tl * (v(a, b, l + dl) - v(a, b, l));
  };
  const auto along_n = [&, j = j, tj = tj](size_t a) {
    return along_k(a, j) + tj * (along_k(a, j + dj) - along_k(a, j));
  };
  return along_n(i) + ti * (along_n(i + di) - along_n(i));
}

void Grid3::index() {
  log_m = logs_of(m);
  log_n = logs_of(n);
  log_k = logs_of(k);
}

Curve Curve::powers_of_two(int first_log2, std::span<const double> values, double unit, std::string src) {
  Curve c;
  for (size_t i = 0; i < values.size(); ++i) {
    c.x.push_back(static_cast<double>(1ULL << (first_log2 + static_cast<int>(i))));
    c.y.push_back(values[i] * unit);
  }
  c.source = std::move(src);
  return c;
}

Curve Curve::constant(double value, std::string src) {
  Curve c;
  c.x = {1.0};
  c.y = {value};
  c.source = std::move(src);
  return c;
}

}  // namespace shardplan
