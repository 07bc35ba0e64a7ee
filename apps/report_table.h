// Human-readable reports: units in the headers, time parts that add up to the step.
#pragma once

#include <string>

#include "modeler/estimate.h"
#include "modeler/model_desc.h"
#include "modeler/system.h"

namespace shardplan::cli {

/// A parameter count with a decimal suffix: "70.55 B", "8.03 B", "124.4 M", "5,120".
std::string format_params(double n);
/// "model: NAME, 80 layers, hidden 8192: 70.55 B parameters" (", 37.45 B active per token" for MoE models).
std::string format_model(const ModelDesc& m);
/// The plan in one or two lines; the expert-parallel line only for a mixture-of-experts model.
std::string format_plan(const Plan& p, bool moe_model);
std::string format_memory(const MemoryBreakdown& m);
std::string format_time(const TimeBreakdown& t);
std::string format_throughput(const Estimate& e);
/// "12,345" style thousands separators.
std::string with_commas(double v);

}  // namespace shardplan::cli
