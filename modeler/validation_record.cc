#include "modeler/validation_record.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>

namespace shardplan {

std::string gpu_generation(const std::string& gpu) {
  auto starts = [&gpu](const char* p) { return gpu.rfind(p, 0) == 0; };
  if (starts("a100")) return "A100";
  if (starts("h100") || starts("h800") || starts("h200") || starts("gh200")) return "H100";
  if (starts("b200") || starts("gb200") || starts("b300") || starts("gb300")) return "Blackwell";
  if (starts("v100")) return "V100";
  std::string s = gpu;
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

std::string framework_family(const std::string& profile) {
  if (profile == "megatron-lm-legacy") return "megatron-lm";
  if (profile == "nemo-2024") return "nemo";
  return profile;
}

RecordMatch nearest_record(const ValidationRecord& record, const std::string& gpu, const std::string& framework) {
  const std::string gen = gpu_generation(gpu), fam = framework_family(framework);
  const RecordGroup *same_gen = nullptr, *same_fw = nullptr;
  for (const RecordGroup& g : record.groups) {
    if (g.runs <= 0) continue;
    if (g.generation == gen && g.framework == fam) return {&g, true};
    if (g.generation == gen && (!same_gen || g.runs > same_gen->runs)) same_gen = &g;
    if (g.framework == fam && (!same_fw || g.runs > same_fw->runs)) same_fw = &g;
  }
  return {same_gen ? same_gen : same_fw, false};
}

std::string record_text(const RecordMatch& m, const std::string& gpu, const std::string& framework) {
  const std::string gen = gpu_generation(gpu), fam = framework_family(framework);
  if (!m.group) return "not validated: no published " + gen + " or " + fam + " runs in the validation record";
  const RecordGroup& g = *m.group;
  char buf[256];
  std::snprintf(buf, sizeof buf, "%d %s %s runs: MAPE %.0f%%, bias %+.0f%%", g.runs, g.generation.c_str(),
                g.framework.c_str(), g.mape_pct, g.bias_pct);
  if (m.exact) return std::string("validated on ") + buf;
  return "no published " + gen + " " + fam + " runs; nearest validation record: " + buf;
}

namespace {
ThroughputInterval interval(double predicted, double lo_pct, double hi_pct) {
  ThroughputInterval iv;
  // A measured run 90% slower than predicted or worse is outside any calibration; the bound keeps 1 + e > 0.
  lo_pct = std::max(lo_pct, -90.0);
  hi_pct = std::max(hi_pct, lo_pct);
  iv.error_low_pct = lo_pct;
  iv.error_high_pct = hi_pct;
  iv.low = predicted / (1 + hi_pct / 100);
  iv.high = predicted / (1 + lo_pct / 100);
  return iv;
}

double quantile(const std::vector<double>& sorted, double q) {
  const double pos = q * static_cast<double>(sorted.size() - 1);
  const size_t i = static_cast<size_t>(pos);
  if (i + 1 >= sorted.size()) return sorted.back();
  return sorted[i] + (pos - static_cast<double>(i)) * (sorted[i + 1] - sorted[i]);
}
}  // namespace

std::optional<ThroughputInterval> interval_from_errors(double predicted, const std::vector<double>& errors_pct) {
  if (errors_pct.empty()) return std::nullopt;
  std::vector<double> e = errors_pct;
  std::sort(e.begin(), e.end());
  double lo = 0, hi = 0;
  std::string how;
  if (e.size() >= 10) {
    lo = quantile(e, 0.1);
    hi = quantile(e, 0.9);
    how = "10th-90th percentile of";
  } else {
    const double m = std::max(std::fabs(e.front()), std::fabs(e.back()));
    lo = -m;
    hi = m;
    how = "+/- the largest of";
  }
  ThroughputInterval iv = interval(predicted, lo, hi);
  iv.runs = static_cast<int>(e.size());
  iv.basis = "fit_leave_one_out";
  char buf[256];
  std::snprintf(buf, sizeof buf, "%.0f-%.0f tokens/s/GPU (%s the fit's %d leave-one-out errors, %+.1f%%..%+.1f%%)",
                iv.low, iv.high, how.c_str(), iv.runs, lo, hi);
  iv.text = buf;
  return iv;
}

ThroughputInterval interval_from_record(double predicted, const RecordGroup& g, bool exact) {
  ThroughputInterval iv = interval(predicted, g.bias_pct - g.mape_pct, g.bias_pct + g.mape_pct);
  iv.runs = g.runs;
  iv.basis = "validation_record";
  char buf[256];
  std::snprintf(buf, sizeof buf, "%.0f-%.0f tokens/s/GPU (bias %+.0f%% -/+ MAPE %.0f%% of the %s %d %s %s runs)",
                iv.low, iv.high, g.bias_pct, g.mape_pct, exact ? "record's" : "nearest record's", g.runs,
                g.generation.c_str(), g.framework.c_str());
  iv.text = buf;
  return iv;
}

}  // namespace shardplan
