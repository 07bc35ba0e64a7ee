// What a calibration changed: the efficiency tables, overhead and tiers of two systems side by side.
#pragma once

#include <string>
#include <vector>

#include "modeler/system.h"

namespace shardplan::calibrate {

struct DiffRow {
  std::string table;  // "gemm bf16", "memory", "tier nvlink", ...
  std::string key;    // "eff @ 1.07e+09 FLOPs", "latency_us", ...
  double before = 0, after = 0;
};

/// Every compared value, changed or not. Curves are compared at the union of both curves' points; a curve
/// present on one side only is compared against its fallback (1 for a missing table).
std::vector<DiffRow> diff_systems(const System& a, const System& b);

}  // namespace shardplan::calibrate
