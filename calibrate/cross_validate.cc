#include "calibrate/cross_validate.h"

#include <algorithm>
#include <cmath>
#include <regex>

#include "modeler/problems.h"

namespace shardplan::calibrate {

namespace {

/// FNV-1a, 64 bits (Fowler, Noll, Vo): a split that depends only on the seed and the run's id, not on the file
/// order or the standard library's shuffle.
uint64_t fnv1a(const std::string& s) {
  uint64_t h = 14695981039346656037ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

void add(HeldOutStats* s, const HeldOutRow& r) {
  s->mape = (s->mape * s->runs + std::fabs(r.error_pct())) / (s->runs + 1);
  s->base_mape = (s->base_mape * s->runs + std::fabs(r.base_error_pct())) / (s->runs + 1);
  ++s->runs;
}

/// Base predictions of every run (validate without calibration), by id.
std::map<std::string, double> base_predictions(const std::vector<io::PublishedRun>& runs) {
  std::map<std::string, double> out;
  const io::ValidationReport rep = io::run_validation(runs);
  for (const io::RunResult& r : rep.results)
    if (!r.skipped) out[r.run->id] = r.predicted_tokens_per_s_per_gpu;
  return out;
}

/// One fold: fits each group on `fit` and predicts `test` (indices into runs) with its group's fit.
void run_fold(const std::vector<io::PublishedRun>& runs, const std::vector<size_t>& fit,
              const std::vector<size_t>& test, const std::string& fold, const std::map<std::string, double>& base,
              std::map<std::string, io::GpuProfile>* gpus, CrossValidation* cv) {
  std::map<std::string, std::vector<size_t>> fit_by_group, test_by_group;
  for (size_t i : fit)
    if (base.count(runs[i].id)) fit_by_group[fit_group(runs[i])].push_back(i);
  for (size_t i : test)
    if (base.count(runs[i].id)) test_by_group[fit_group(runs[i])].push_back(i);
  for (const auto& [group, tests] : test_by_group) {
    std::optional<System> fitted;
    const auto f = fit_by_group.find(group);
    if (f != fit_by_group.end()) {
      std::vector<RunCase> cases;
      GroupFit gf;
      gf.group = group;
      gf.fold = fold;
      for (size_t i : f->second) {
        const io::PublishedRun& run = runs[i];
        auto g = gpus->find(run.gpu);
        if (g == gpus->end()) g = gpus->emplace(run.gpu, io::load_gpu_profile(run.gpu)).first;
        cases.push_back({&run, run_case_system(run, g->second, nullptr)});
        gf.fitted_on.push_back(&run);
      }
      FitOptions opt;
      opt.leave_one_out = false;  // the held-out runs are the test here
      opt.accept_anyway = true;   // a refused fit is reported (GroupFit::refused), its pinned values still tested
      gf.fit = fit_runs(cases, opt);
      fitted = apply_fit(cases.front().base, gf.fit);
      cv->fits.push_back(std::move(gf));
    }
    std::vector<io::PublishedRun> copies;
    for (size_t i : tests) copies.push_back(runs[i]);
    const io::ValidationReport rep = io::run_validation(copies, fitted ? &*fitted : nullptr);
    for (size_t q = 0; q < tests.size(); ++q) {
      const io::RunResult& r = rep.results[q];
      if (r.skipped) continue;
      HeldOutRow row;
      row.run = &runs[tests[q]];
      row.group = group;
      row.fold = fold;
      row.measured = row.run->measured_tokens_per_s_per_gpu;
      row.base_predicted = base.at(row.run->id);
      row.predicted = r.predicted_tokens_per_s_per_gpu;
      row.calibrated = fitted.has_value();
      cv->held_out.push_back(row);
    }
  }
}

void summarise(CrossValidation* cv) {
  for (const HeldOutRow& r : cv->held_out) {
    if (!r.calibrated) {
      add(&cv->uncalibrated, r);
      continue;
    }
    add(&cv->all, r);
    add(r.run->moe ? &cv->moe : &cv->dense, r);
    if (!r.fold.empty()) add(&cv->by_fold[r.fold], r);
  }
}

}  // namespace

std::string fit_group(const io::PublishedRun& run) {
  return run.gpu + " " + framework_family(io::framework_for(run)->name);
}

CrossValidation cross_validate_half(const std::vector<io::PublishedRun>& runs, uint64_t seed) {
  CrossValidation cv;
  cv.scheme = "per GPU x framework group and within it per stratum (dense, MoE), fitted on the larger half of "
              "the stratum's runs by FNV-1a(\"" + std::to_string(seed) + ":<id>\") (seed " + std::to_string(seed) +
              "), tested on the other half";
  // Stratified: the dense and the MoE rows of a group are halved apart, so that both halves hold both kinds
  // wherever a group has two of a kind (the MAPEs are reported per kind, and the MoE-only parameters need MoE
  // rows to fit on).
  std::map<std::string, std::vector<size_t>> groups;
  for (size_t i = 0; i < runs.size(); ++i)
    groups[fit_group(runs[i]) + (runs[i].moe ? " moe" : " dense")].push_back(i);
  std::vector<size_t> fit, test;
  for (auto& [group, idx] : groups) {
    std::sort(idx.begin(), idx.end(), [&](size_t a, size_t b) {
      const uint64_t ha = fnv1a(std::to_string(seed) + ":" + runs[a].id),
                     hb = fnv1a(std::to_string(seed) + ":" + runs[b].id);
      return ha != hb ? ha < hb : runs[a].id < runs[b].id;
    });
    const size_t half = (idx.size() + 1) / 2;
    for (size_t q = 0; q < idx.size(); ++q) (q < half ? fit : test).push_back(idx[q]);
  }
  std::map<std::string, io::GpuProfile> gpus;
  run_fold(runs, fit, test, "", base_predictions(runs), &gpus, &cv);
  summarise(&cv);
  return cv;
}

CrossValidation cross_validate_sources(const std::vector<io::PublishedRun>& runs) {
  CrossValidation cv;
  cv.scheme = "each source's runs predicted by their groups fitted on the other sources' runs";
  const std::map<std::string, double> base = base_predictions(runs);
  std::map<std::string, std::vector<size_t>> by_source;
  for (size_t i = 0; i < runs.size(); ++i) by_source[io::source_label(runs[i].source)].push_back(i);
  std::map<std::string, io::GpuProfile> gpus;
  for (const auto& [source, test] : by_source) {
    std::vector<size_t> fit;
    for (size_t i = 0; i < runs.size(); ++i)
      if (io::source_label(runs[i].source) != source) fit.push_back(i);
    run_fold(runs, fit, test, source, base, &gpus, &cv);
  }
  summarise(&cv);
  return cv;
}

CrossValidation cross_validate_filter(const std::vector<io::PublishedRun>& runs, const std::string& field,
                                      const std::string& regex) {
  static const std::vector<std::string> kFields = {"id", "source", "framework", "gpu", "precision"};
  if (std::find(kFields.begin(), kFields.end(), field) == kFields.end())
    throw ConfigError("--fit-on " + field + "=...: unknown field '" + field +
                      "' (one of id, source, framework, gpu, precision)");
  std::regex re;
  try {
    re = std::regex(regex, std::regex::ECMAScript);
  } catch (const std::regex_error& e) {
    throw ConfigError("--fit-on " + field + "=" + regex + ": not a regular expression (" + e.what() + ")");
  }
  CrossValidation cv;
  cv.scheme = "per GPU x framework group, fitted on the runs whose " + field + " matches /" + regex +
              "/, tested on the others";
  std::vector<size_t> fit, test;
  for (size_t i = 0; i < runs.size(); ++i) {
    const io::PublishedRun& r = runs[i];
    const std::string& v = field == "id"          ? r.id
                           : field == "source"    ? r.source
                           : field == "framework" ? r.framework
                           : field == "gpu"       ? r.gpu
                                                  : r.precision_name;
    (std::regex_search(v, re) ? fit : test).push_back(i);
  }
  if (fit.empty()) throw ConfigError("--fit-on " + field + "=" + regex + ": no run matches");
  if (test.empty()) throw ConfigError("--fit-on " + field + "=" + regex + ": every run matches, none is left to test");
  std::map<std::string, io::GpuProfile> gpus;
  run_fold(runs, fit, test, "", base_predictions(runs), &gpus, &cv);
  summarise(&cv);
  return cv;
}

}  // namespace shardplan::calibrate
