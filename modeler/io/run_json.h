// JSON of a run's time, cost and energy (the "run" object of predict and search reports; schema_version 1,
// consumers ignore unknown keys).
#pragma once

#include <nlohmann/json.hpp>

#include "modeler/run_cost.h"

namespace shardplan::io {

/// {tokens, steps, compute_s, wall_s, wall_days, goodput, gpu_hours, cost, gpu_hour_price, gpu_power_w, pue,
///  node_overhead, it_energy_kwh, facility_energy_kwh, failures: null | {...}, checkpoint: null | {...}}
nlohmann::json run_json(const RunCost& r, const RunSpec& spec);

}  // namespace shardplan::io
