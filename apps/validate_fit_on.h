// validate --fit-on EXPR: cross-validation of calibrate fit-runs on a published-runs file (docs/fit-runs.md).
#pragma once

#include <string>
#include <vector>

#include "modeler/io/published_runs.h"

namespace shardplan::cli {

/// EXPR: `half` or `half:SEED` (per group, fit on half of its runs, test on the rest; then leave-one-source-out,
/// both printed), `sources` (leave-one-source-out alone), or `FIELD=REGEX` (fit on the runs whose FIELD matches,
/// test on the others). Prints text or, with `json`, one JSON object. Throws ConfigError for a bad EXPR.
int run_fit_on(const std::vector<io::PublishedRun>& runs, const std::string& runs_file, const std::string& expr,
               bool json);

}  // namespace shardplan::cli
