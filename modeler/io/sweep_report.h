// Sweep outputs: one row per point (the best plan found there), as CSV, JSON and an SVG chart of tokens/s/GPU
// and MFU per point with the points where the best plan's layout changes annotated.
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

#include "modeler/estimate.h"
#include "modeler/io/report_json.h"

namespace shardplan::io {

struct SweepPoint {
  std::string value;              // the varied quantity at this point, as given ("1024", "h100-sxm5-80gb")
  int gpus = 0;
  std::optional<Estimate> best;   // empty when no plan fits
  uint64_t evaluated = 0, feasible = 0;
};

/// "tp8 cp1 pp2 vpp4 z1": the layout of a plan without dp (which follows the GPU count), whose change the chart
/// annotates.
std::string layout_label(const Plan& p);

std::string sweep_csv(const std::string& vary, const std::vector<SweepPoint>& points);
nlohmann::json sweep_json(const ReportContext& ctx, const std::string& vary, const std::vector<SweepPoint>& points);
std::string sweep_svg(const std::string& vary, const std::string& title, const std::vector<SweepPoint>& points);

}  // namespace shardplan::io
