// Text for a plan's optimizer offload: host memory, link traffic, the CPU step and what the GPU waits for.
#pragma once

#include <string>

#include "modeler/estimate.h"
#include "modeler/system.h"

namespace shardplan::cli {

/// Empty when the plan offloads nothing.
std::string format_offload(const Estimate& e, const System& sys);

}  // namespace shardplan::cli
