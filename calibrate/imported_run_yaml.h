// Writing imported runs (calibrate import-log) as a published-runs file.
#pragma once

#include <string>
#include <vector>

#include "calibrate/log_import.h"

namespace shardplan::calibrate {

/// The runs as a published-runs file (schema 1), with a header comment saying where they came from; optional
/// values the log did not state are written as null ("not stated"), never as a default.
std::string runs_yaml(const std::vector<ImportedRun>& runs);

}  // namespace shardplan::calibrate
