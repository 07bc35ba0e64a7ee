#include "kernels/harness.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <iostream>

#include "kernels/resume.h"

namespace shardplan::bench {

Args::Args(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("--", 0) != 0) {
      std::fprintf(stderr, "unexpected argument '%s' (flags are --name value)\n", a.c_str());
      std::exit(2);
    }
    a = a.substr(2);
    const bool has_value = i + 1 < argc && std::string(argv[i + 1]).rfind("--", 0) != 0;
    values_[a] = has_value ? argv[++i] : "1";
  }
}

std::string Args::str(const std::string& name, const std::string& def) const {
  const auto it = values_.find(name);
  return it == values_.end() ? def : it->second;
}

long long Args::integer(const std::string& name, long long def) const {
  const auto it = values_.find(name);
  if (it == values_.end()) return def;
  try {
    return static_cast<long long>(parse_size(it->second));
  } catch (...) {
    std::fprintf(stderr, "--%s: expected an integer, got '%s'\n", name.c_str(), it->second.c_str());
    std::exit(2);
  }
}

double Args::number(const std::string& name, double def) const {
  const auto it = values_.find(name);
  if (it == values_.end()) return def;
  try {
    return std::stod(it->second);
  } catch (...) {
    std::fprintf(stderr, "--%s: expected a number, got '%s'\n", name.c_str(), it->second.c_str());
    std::exit(2);
  }
}

void Args::check_known(const std::vector<std::string>& known, const std::string& usage) const {
  if (has("help")) {
    std::printf("%s", usage.c_str());
    std::exit(0);
  }
  for (const auto& [k, v] : values_) {
    if (std::find(known.begin(), known.end(), k) != known.end()) continue;
    std::fprintf(stderr, "unknown flag --%s\n%s", k.c_str(), usage.c_str());
    std::exit(2);
  }
}

// NOTE: binary multiples, as nccl-tests: K = 2^10, M = 2^20, G = 2^30.
std::uint64_t parse_size(const std::string& s) {
  size_t pos = 0;
  const double v = std::stod(s, &pos);
  double mult = 1;
  const std::string suffix = s.substr(pos);
  if (suffix == "K" || suffix == "k") mult = 1024.0;
  else if (suffix == "M" || suffix == "m") mult = 1024.0 * 1024;
  else if (suffix == "G" || suffix == "g") mult = 1024.0 * 1024 * 1024;
  else if (!suffix.empty()) throw std::invalid_argument(s);
  if (v < 0) throw std::invalid_argument(s);
  return static_cast<std::uint64_t>(v * mult);
}

std::vector<std::uint64_t> size_sweep(std::uint64_t min, std::uint64_t max, double factor) {
  // Bad sweeps are usage errors, never silent substitutes (a factor <= 1 would loop forever or measure one size).
  if (!(factor > 1.0)) {
    std::fprintf(stderr, "--factor: expected a size multiplier above 1, got %g\n", factor);
    std::exit(2);
  }
  if (min < 1 || min > max) {
    std::fprintf(stderr, "--min-bytes (%llu) must be at least 1 and at most --max-bytes (%llu)\n",
                 static_cast<unsigned long long>(min), static_cast<unsigned long long>(max));
    std::exit(2);
  }
  std::vector<std::uint64_t> out;
  for (double s = static_cast<double>(min); s <= static_cast<double>(max) * 1.0000001; s *= factor)
    out.push_back(static_cast<std::uint64_t>(s));
  return out;
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    const size_t end = s.find(sep, start);
    const std::string part = s.substr(start, end == std::string::npos ? std::string::npos : end - start);
    if (!part.empty()) out.push_back(part);
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return out;
}

Timing summarize(std::vector<double> samples_s, int iters) {
  Timing t;
  if (samples_s.empty()) return t;
  std::sort(samples_s.begin(), samples_s.end());
  const size_t n = samples_s.size();
  t.median_s = n % 2 ? samples_s[n / 2] : 0.5 * (samples_s[n / 2 - 1] + samples_s[n / 2]);
  t.min_s = samples_s.front();
  t.max_s = samples_s.back();
  t.reps = static_cast<int>(n);
  t.iters = iters;
  return t;
}

int iters_for(double one_launch_s, double target_s) {
  if (!(one_launch_s > 0)) return 1;
  return static_cast<int>(std::clamp(std::ceil(target_s / one_launch_s), 1.0, 10000.0));
}

Reporter::Reporter(std::string benchmark, std::string backend, const Args& args, bool enabled)
    : benchmark_(std::move(benchmark)), backend_(std::move(backend)), enabled_(enabled) {
  const std::string skip = args.str("skip-done", "");
  if (skip.empty()) return;
  std::ifstream in(skip);
  if (in) done_ = done_keys(in);  // a missing file means nothing is done yet
}

bool Reporter::done(const nlohmann::json& params) const { return done_.count(row_key(benchmark_, params)) > 0; }

void Reporter::context(nlohmann::json fields) const {
  if (!enabled_) return;
  fields["record"] = "context";
  fields["schema_version"] = 1;
  fields["benchmark"] = benchmark_;
  fields["backend"] = backend_;
  fields["date"] = utc_date();
  std::cout << fields.dump() << std::endl;
}

void Reporter::result(const nlohmann::json& params, const Timing& t, double flops, double bytes, long long wrong,
                      const nlohmann::json& extra) const {
  if (!enabled_) return;
  nlohmann::json j = {{"record", "result"}, {"benchmark", benchmark_}, {"backend", backend_},
                            {"params", params},   {"time_s", t.median_s},  {"time_min_s", t.min_s},
                            {"time_max_s", t.max_s}, {"reps", t.reps},     {"iters", t.iters},
                            {"flops", flops},     {"bytes", bytes},        {"wrong", wrong}};
  j.update(extra);
  std::cout << j.dump() << std::endl;
}

std::string hostname() {
  char buf[256] = {};
  if (gethostname(buf, sizeof(buf) - 1) != 0) return "unknown";
  return buf;
}

std::string utc_date() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace shardplan::bench
