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

/// Lower index and weight of the upper neighbour of xq on an increasing axis, clamped to the ends.
std::pair<size_t, double> axis_position(const std::vector<double>& axis, double xq) {
  if (axis.size() == 1 || xq <= axis.front()) return {0, 0.0};
  if (xq >= axis.back()) return {axis.size() - 2, 1.0};
  const size_t i = static_cast<size_t>(std::upper_bound(axis.begin(), axis.end(), xq) - axis.begin()) - 1;
  return {i, (std::log(xq) - std::log(axis[i])) / (std::log(axis[i + 1]) - std::log(axis[i]))};
}

}  // namespace

double Grid3::at(double mq, double nq, double kq) const {
  SHARDPLAN_CHECK(!values.empty() && values.size() == m.size() * n.size() * k.size());
  const auto [i, ti] = axis_position(m, mq);
  const auto [j, tj] = axis_position(n, nq);
  const auto [l, tl] = axis_position(k, kq);
  const size_t nn = n.size(), nk = k.size();
  const size_t di = m.size() > 1 ? 1 : 0, dj = nn > 1 ? 1 : 0, dl = nk > 1 ? 1 : 0;
  const auto v = [&](size_t a, size_t b, size_t c) { return values[(a * nn + b) * nk + c]; };
  const auto along_k = [&](size_t a, size_t b) { return v(a, b, l) + tl * (v(a, b, l + dl) - v(a, b, l)); };
  const auto along_n = [&](size_t a) { return along_k(a, j) + tj * (along_k(a, j + dj) - along_k(a, j)); };
  return along_n(i) + ti * (along_n(i + di) - along_n(i));
}

Curve Curve::constant(double value, std::string src) {
  Curve c;
  c.x = {1.0};
  c.y = {value};
  c.source = std::move(src);
  return c;
}

}  // namespace shardplan
