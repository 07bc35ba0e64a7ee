// Chrome trace-event JSON (the format chrome://tracing and ui.perfetto.dev open) of a Timeline: one process per
// pipeline stage, one thread per track (compute, bubble, each communication kind), complete events ("ph": "X")
// in microseconds.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

#include "modeler/timeline.h"

namespace shardplan::io {

/// {"traceEvents": [metadata "M" events naming stages and tracks, then "X" events], "displayTimeUnit": "ms",
///  "otherData": {shardplan_version, title, step_us, pipeline_us}}.
nlohmann::json trace_json(const Timeline& t, const std::string& title);

}  // namespace shardplan::io
