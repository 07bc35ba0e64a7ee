#include "modeler/problems.h"

#include <cstdio>
#include <stdexcept>

namespace shardplan {

std::string num(double v, const char* format) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

std::string join_problems(const Problems& problems) {
  std::string out;
  for (const Problem& p : problems) {
    if (!out.empty()) out += '\n';
    out += p.message;
  }
  return out;
}

void check_invariant(bool ok, const char* what, const char* file, int line) {
  if (ok) return;
  throw std::logic_error(std::string("internal error: invariant '") + what + "' failed at " + file + ":" +
                         std::to_string(line));
}

}  // namespace shardplan
