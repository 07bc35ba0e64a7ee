// serve validate for FlexGen rows: the row's policy (plan.offload.flexgen_policy) on the row's machine profile
// (system.machine) through modeler/serving/flexgen.h.
#pragma once

#include "modeler/io/serving_validation.h"

namespace shardplan::io {

/// Fills `out` (predicted throughput and decode tokens/s, or a skip reason).
void predict_flexgen_row(const ServingRun& r, ServeRowResult* out);

}  // namespace shardplan::io
