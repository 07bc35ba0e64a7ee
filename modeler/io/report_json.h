// JSON reports (the design.md contract, schema_version 1): the only nlohmann/json writer. Consumers ignore unknown
// keys; keys carry their units (_bytes, _s).
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <utility>
#include <vector>

#include "modeler/estimate.h"
#include "modeler/model_desc.h"

namespace shardplan::io {

struct ReportContext {
  std::string command;    // "predict", "search", ...
  std::string model;      // name or file
  std::string system;     // name or file
  std::string gpu;
  int gpus = 0;
  std::string framework;
  std::string provenance; // where the system's efficiency tables come from
};

nlohmann::json context_json(const ReportContext& ctx);
/// One key of the plan object and how it is written from a Plan. The one list of plan keys: plan_json writes
/// these, and the plan-file reader (plan_json.cc) reads exactly these (it checks so on every read).
struct PlanKey {
  const char* name;
  nlohmann::json (*write)(const Plan&);
  bool derived = false;  // computed from other fields (microbatches_per_step): checked on reading, not a setting
};
const std::vector<PlanKey>& plan_keys();
/// The plan object: every key of plan_keys().
nlohmann::json plan_json(const Plan& p);
/// One estimate: {plan, memory, time, throughput, feasible, problems}.
nlohmann::json estimate_json(const Estimate& e);
/// The model's size: {name, layers, hidden, total_params, active_params, non_embedding_params, moe}. Active
/// parameters are those one token passes through (model_desc.h activated_params); equal to the total when dense.
nlohmann::json model_json(const ModelDesc& m);
/// One row of `shardplan list`: a shipped file's name, its one-line description and the numbers behind it.
struct ListEntry {
  std::string name;
  std::string description;
  std::vector<std::pair<std::string, double>> numbers;  // unit-suffixed keys: "total_params", "hbm_bytes"
  std::vector<std::pair<std::string, std::string>> strings;
};
/// {"schema_version": 1, "kind": "models", "items": [{"name", "description", <numbers>, <strings>}, ...]}.
nlohmann::json list_json(const std::string& kind, const std::vector<ListEntry>& rows);

/// The predict report: {schema_version, context, plan, memory, time, throughput}.
nlohmann::json predict_json(const ReportContext& ctx, const Estimate& e);

}  // namespace shardplan::io
