// `search --json` and `sweep` JSON (design.md contract): {"schema_version", "context", "results": [estimate
// objects as predict prints them, each with "gpus"], "rejected": {code: count}, "rejected_labels", "pareto",
// "nearest_misses", "evaluated", "feasible", "space_size", "cancelled"}. Consumers ignore unknown keys.
#pragma once

#include <nlohmann/json.hpp>

#include <vector>

#include "modeler/io/report_json.h"
#include "modeler/search.h"

namespace shardplan::io {

struct SearchPoint {
  int gpus = 0;
  const SearchResult* result = nullptr;
};

/// One search (one point) or a GPU-count range (several points: results concatenated, rejections summed, and
/// "pareto" the fastest plan of each GPU count that is faster than every smaller count's).
nlohmann::json search_json(const ReportContext& ctx, const std::vector<SearchPoint>& points);

}  // namespace shardplan::io
