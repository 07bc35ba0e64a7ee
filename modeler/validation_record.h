// How far to trust a prediction: the validation record of the published runs nearest to it (same GPU generation
// and framework family), as `shardplan validate --write-record` generates it from the published-runs file. predict
// and search quote it beside their throughput. Pure data and lookup; the file lives in hwprofiles/ (modeler/io).
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace shardplan {

/// One group of validated runs: GPU generation x framework family.
struct RecordGroup {
  std::string generation;  // gpu_generation()
  std::string framework;   // framework_family()
  int runs = 0;
  double mape_pct = 0;
  double bias_pct = 0;  // mean signed error: + means predictions ran faster than the measured runs
};

struct ValidationRecord {
  std::string runs_file;  // the published-runs file it was generated from
  std::string command;    // the command that regenerates it
  std::vector<RecordGroup> groups;
};

/// The generation validation groups a GPU profile under: "A100", "H100" (H100, H800, H200, GH200: one Hopper
/// tensor-core design), "Blackwell" (B200, GB200, B300, GB300), "V100"; else the profile name upper-cased.
std::string gpu_generation(const std::string& gpu);
/// The framework family of a profile: its published-runs name (megatron-lm-legacy is megatron-lm, nemo-2024 nemo).
std::string framework_family(const std::string& profile);

/// The record group nearest a prediction: the same generation and framework family; else the same generation
/// (the group with most runs); else the same framework on another generation (most runs). None when the record
/// has neither.
struct RecordMatch {
  const RecordGroup* group = nullptr;
  bool exact = false;
};
RecordMatch nearest_record(const ValidationRecord& record, const std::string& gpu, const std::string& framework);

/// One line for the reports: "validated on 9 H100 megatron-lm runs: MAPE 7%, bias +2%", with "nearest record"
/// wording when the match is not exact, or "not validated: ..." when there is none.
std::string record_text(const RecordMatch& match, const std::string& gpu, const std::string& framework);

/// The range a measured throughput is expected to fall in, given a prediction and the errors of past predictions
/// of its kind: error e = (predicted - measured) / measured, so measured = predicted / (1 + e).
struct ThroughputInterval {
  double low = 0, high = 0;              // tokens/s/GPU (same unit as the prediction)
  double error_low_pct = 0, error_high_pct = 0;  // the error range it was built from
  int runs = 0;                          // errors behind it
  std::string basis;                     // "fit_leave_one_out" or "validation_record"
  std::string text;                      // one line for the reports
};

/// From a fitted profile's leave-one-out errors (System::fit_loo_errors_pct): their 10th and 90th percentiles
/// (linear interpolation) with 10 or more runs; with fewer, the symmetric range of the largest one, since a few
/// errors say little about the tails. Null without errors.
std::optional<ThroughputInterval> interval_from_errors(double predicted, const std::vector<double>& errors_pct);
/// From the nearest validation record group: bias -/+ MAPE, the spread a typical prediction of the group had.
ThroughputInterval interval_from_record(double predicted, const RecordGroup& group, bool exact);

}  // namespace shardplan
