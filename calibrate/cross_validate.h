// Validating the fit honestly (validate --fit-on, docs/fit-runs.md): fit the parameters of calibrate fit-runs on
// some published runs, per GPU x framework group, and measure the error on the others, which the fit never saw.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "calibrate/fit_runs.h"
#include "modeler/io/validation_run.h"

namespace shardplan::calibrate {

/// A run the fit did not see, predicted with its group's fitted parameters (or the base profile when its group
/// had no run to fit on).
struct HeldOutRow {
  const io::PublishedRun* run = nullptr;
  std::string group;
  std::string fold;  // the held-out source under leave-one-source-out; "" otherwise
  double measured = 0, base_predicted = 0, predicted = 0;
  bool calibrated = true;
  double error_pct() const { return 100.0 * (predicted - measured) / measured; }
  double base_error_pct() const { return 100.0 * (base_predicted - measured) / measured; }
};

/// One group's fit within a fold.
struct GroupFit {
  std::string group, fold;
  std::vector<const io::PublishedRun*> fitted_on;
  RunsFit fit;
  bool refused() const { return !fit.out_of_range.empty(); }
};

struct HeldOutStats {
  int runs = 0;
  double mape = 0, base_mape = 0;
};

struct CrossValidation {
  std::string scheme;  // how the runs were split, in words (seed included)
  std::vector<HeldOutRow> held_out;
  std::vector<GroupFit> fits;
  HeldOutStats all, dense, moe, uncalibrated;
  std::map<std::string, HeldOutStats> by_fold;  // leave-one-source-out: per held-out source
};

/// The group a run is fitted in: its GPU profile and framework family ("h100-sxm5-80gb megatron-lm").
std::string fit_group(const io::PublishedRun& run);

/// Per group, fits on the runs ranked in the lower half (the larger half of an odd count) by FNV-1a of
/// "<seed>:<id>" and tests on the rest; the group's dense and MoE runs are halved apart (stratified).
CrossValidation cross_validate_half(const std::vector<io::PublishedRun>& runs, uint64_t seed);
/// For each source, fits every group on the runs of the other sources and tests on that source's runs.
CrossValidation cross_validate_sources(const std::vector<io::PublishedRun>& runs);
/// Fits every group on the runs whose `field` (id, source, framework, gpu, precision) matches `regex` (ECMAScript,
/// anywhere in the value) and tests on the others. Throws ConfigError for an unknown field or a bad regex.
CrossValidation cross_validate_filter(const std::vector<io::PublishedRun>& runs, const std::string& field,
                                      const std::string& regex);

}  // namespace shardplan::calibrate
