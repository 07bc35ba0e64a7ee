#include "calibrate/fit_problem.h"

namespace shardplan::calibrate {

io::ValidationReport resolve(const std::vector<RunCase>& runs, const RunsProblem& pb, const std::vector<double>& u,
                             double reserve_gib) {
  std::vector<io::PublishedRun> copies;
  for (const RunCase& c : runs) copies.push_back(*c.run);
  const System calibrated = pb.system(0, u, reserve_gib);
  io::ValidationReport rep = io::run_validation(copies, &calibrated);
  for (size_t i = 0; i < rep.results.size(); ++i) {
    if (rep.results[i].skipped)
      throw ConfigError("run " + runs[i].run->id + " (line " + std::to_string(runs[i].run->line) +
                        "): " + rep.results[i].skip_reason);
    rep.results[i].run = runs[i].run;  // the copies die here
  }
  return rep;
}

std::vector<Completion> completions(const std::vector<RunCase>& runs, const io::ValidationReport& rep) {
  std::vector<Completion> out;
  for (size_t i = 0; i < runs.size(); ++i) {
    const io::RunResult& r = rep.results[i];
    const Framework* fw = find_framework(r.framework);
    SHARDPLAN_CHECK(fw != nullptr);
    // Whether the chosen completion ran compiled: the run's own statement, else the resolution's choice, else
    // the framework's default (fastest_fitting's candidates start from it, validation.cc).
    bool is_compiled = fw->compiled_by_default;
    if (runs[i].run->plan.compiled) is_compiled = *runs[i].run->plan.compiled;
    for (const Choice& c : r.resolution.choices)
      if (c.field == "compiled") is_compiled = c.value == "yes";
    out.push_back({r.resolution.estimate.plan, is_compiled ? compiled(*fw) : *fw, r.resolution.chosen});
  }
  return out;
}

bool same_completions(const std::vector<Completion>& a, const std::vector<Completion>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].chosen != b[i].chosen) return false;
  return true;
}

}  // namespace shardplan::calibrate
