// serve validate: predicts every row of a serving-runs file and reports each measured metric's error, with
// summaries per source, engine, GPU and row family. The model is not fitted to these rows.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "modeler/io/serving_runs.h"
#include "modeler/serving/serve_predict.h"

namespace shardplan::io {

/// Metrics a row can measure; each is compared where the row states it.
enum class ServeMetric { ttft, tpot, decode, prefill, throughput };
constexpr int kNumServeMetrics = 5;
inline constexpr const char* kServeMetricNames[kNumServeMetrics] = {"TTFT", "TPOT", "decode", "prefill",
                                                                    "throughput"};

struct ServeRowResult {
  const ServingRun* run = nullptr;
  bool skipped = false;
  std::string skip_reason;
  std::vector<std::string> assumed;  // what the validator chose for null fields
  std::string family;                // datacenter | llama.cpp full-GPU | offload | flexgen
  std::optional<double> measured[kNumServeMetrics];
  std::optional<double> predicted[kNumServeMetrics];
  std::optional<double> error_pct[kNumServeMetrics];  // (predicted - measured) / measured
  std::optional<serving::ServePrediction> prediction;
};

struct ServeStats {
  int runs = 0;
  double mape = 0;
};

struct ServeValidationReport {
  std::vector<ServeRowResult> rows;
  ServeStats overall[kNumServeMetrics];
  // key: group name; per metric
  std::map<std::string, std::array<ServeStats, kNumServeMetrics>> by_source, by_engine, by_gpu, by_family;
};

/// Why the ShareGPT rows are not predicted (the skip reason serve validate prints).
inline constexpr const char* kShareGptSkip =
    "ShareGPT lengths not carried: the benchmark draws each request's input and output from the ShareGPT JSON "
    "through the model's tokenizer, and no per-request list under that tokenizer was found to cite";

ServeValidationReport run_serve_validation(const std::vector<ServingRun>& runs);

}  // namespace shardplan::io
