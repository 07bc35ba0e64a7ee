// Runs the validation: predicts every published run and collects per-run errors and per-group MAPE.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "modeler/io/published_runs.h"
#include "modeler/validation_record.h"

namespace shardplan::io {

struct RunResult {
  const PublishedRun* run = nullptr;
  std::string framework;  // the profile used (megatron-lm-legacy for pre-2023 Megatron-LM runs)
  bool skipped = false;
  std::string skip_reason;
  Resolution resolution;
  double predicted_tokens_per_s_per_gpu = 0;
  double error_pct = 0;  // (predicted - measured) / measured x 100
  /// The bracket over the settings the source leaves open, as errors (best: the fastest completion).
  double best_error_pct = 0, worst_error_pct = 0;
  std::optional<double> predicted_memory_gib, memory_error_pct;
};

struct GroupStats {
  int runs = 0;
  double mape = 0;
  double bias = 0;  // mean signed error in percent (+: predicted faster than measured)
};

struct ValidationReport {
  std::vector<RunResult> results;
  std::map<std::string, GroupStats> by_source, by_framework;
  std::map<std::string, GroupStats> by_moe_model;  // mixture-of-experts runs, by model name
  std::map<std::string, GroupStats> by_gpu, by_precision;
  /// By GPU generation x framework profile family ("H100 megatron-lm"): the groups predict and search quote.
  std::map<std::string, GroupStats> by_generation_framework;
  GroupStats throughput, memory;
};

/// Predicts each run on its GPU's standard system (GPU profiles loaded once each). With `calibrated`, runs on the
/// calibrated GPU use its efficiency tables, and each tier of the run's standard system takes the fitted latency
/// and bus-bandwidth curves of the calibrated tier of the same name; the run keeps its own topology and sizes.
/// Unknown plan fields the run's framework sets by default take that default (see fastest_fitting); with
/// `fastest_fit`, the fastest setting that fits instead.
ValidationReport run_validation(const std::vector<PublishedRun>& runs, const System* calibrated = nullptr,
                                bool fastest_fit = false);

/// How validation reads a run, shared with the search-quality test so both predict the same thing:
/// the framework profile (megatron-lm-legacy for Megatron-LM runs whose source cites a year before 2023),
/// the run's standard system on `gpu` (with its power cap), and its plan (a split that pp x vpp does not divide
/// ran uneven).
const Framework* framework_for(const PublishedRun& run);
System run_system(const GpuProfile& gpu, const PublishedRun& run);
OpenPlan run_plan(const PublishedRun& run);

/// The run's standard system with a calibrated profile's tables applied (see run_validation).
System apply_calibration(System base, const System& calibrated);

/// A short source label: the text before the first " (" or ",".
std::string source_label(const std::string& source);

}  // namespace shardplan::io
