// Human-readable reports: units in the headers, time parts that add up to the step.
#pragma once

#include <string>

#include "modeler/estimate.h"
#include "modeler/framework.h"
#include "modeler/model_desc.h"
#include "modeler/system.h"

namespace shardplan::cli {

/// A parameter count with a decimal suffix: "70.55 B", "8.03 B", "124.4 M", "5,120".
std::string format_params(double n);
/// "model: NAME, 80 layers, hidden 8192: 70.55 B parameters" (", 37.45 B active per token" for MoE models).
std::string format_model(const ModelDesc& m);
/// The plan in one or two lines; the expert-parallel line only for a mixture-of-experts model.
/// The plan line(s) of predict's table. With `fw`, an fp8 plan names the recipe it runs (the plan's own, else the
/// framework's: effective_fp8_recipe), since the recipe decides the GEMM table and the quantization kernels.
std::string format_plan(const Plan& p, bool moe_model, const Framework* fw = nullptr);
std::string format_memory(const MemoryBreakdown& m);
std::string format_time(const TimeBreakdown& t);
std::string format_throughput(const Estimate& e);
/// "12,345" style thousands separators.
std::string with_commas(double v);

}  // namespace shardplan::cli
