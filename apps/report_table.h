// Human-readable reports: units in the headers, time parts that add up to the step.
#pragma once

#include <string>

#include "modeler/estimate.h"
#include "modeler/system.h"

namespace shardplan::cli {

/// The plan in one or two lines; the expert-parallel line only for a mixture-of-experts model.
std::string format_plan(const Plan& p, bool moe_model);
std::string format_memory(const MemoryBreakdown& m);
std::string format_time(const TimeBreakdown& t);
std::string format_throughput(const Estimate& e);
/// "12,345" style thousands separators.
std::string with_commas(double v);

}  // namespace shardplan::cli
