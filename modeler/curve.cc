#include "modeler/curve.h"

#include <algorithm>
#include <cmath>

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

Curve Curve::constant(double value, std::string src) {
  Curve c;
  c.x = {1.0};
  c.y = {value};
  c.source = std::move(src);
  return c;
}

}  // namespace shardplan
