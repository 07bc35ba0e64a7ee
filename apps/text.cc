#include "apps/text.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>

namespace shardplan::cli {

std::string fmt(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

std::string utc_date_today() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[16];
  std::strftime(buf, sizeof(buf), "%Y-%m-%d", &tm);
  return buf;
}

std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  for (size_t i = 0; i <= s.size(); ++i)
    if (i == s.size() || s[i] == ',') {
      if (i > start) out.push_back(s.substr(start, i - start));
      start = i + 1;
    }
  return out;
}

CLI::Validator positive_number() {
  return CLI::Validator(
      [](std::string& s) -> std::string {
        char* end = nullptr;
        const double v = std::strtod(s.c_str(), &end);
        if (end == s.c_str() || *end != '\0' || !(v > 0) || !std::isfinite(v))
          return "must be a positive number, got '" + s + "'";
        return std::string();
      },
      "POSITIVE");
}

CLI::Validator non_negative_number() {
  return CLI::Validator(
      [](std::string& s) -> std::string {
        char* end = nullptr;
        const double v = std::strtod(s.c_str(), &end);
        if (end == s.c_str() || *end != '\0' || !(v >= 0) || !std::isfinite(v))
          return "must be a finite number of 0 or more, got '" + s + "'";
        return std::string();
      },
      "NONNEGATIVE");
}

CLI::Validator number_in(double lo, double hi) {
  char desc[64];
  std::snprintf(desc, sizeof desc, "in [%g, %g]", lo, hi);
  return CLI::Validator(
      [lo, hi](std::string& s) -> std::string {
        char* end = nullptr;
        const double v = std::strtod(s.c_str(), &end);
        // !(v >= lo && v <= hi) also rejects nan; inf is above any bound.
        if (end == s.c_str() || *end != '\0' || !(v >= lo && v <= hi))
          return "must be a number in [" + fmt("%g", lo) + ", " + fmt("%g", hi) + "], got '" + s + "'";
        return std::string();
      },
      desc);
}

}  // namespace shardplan::cli
