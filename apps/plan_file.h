// --plan FILE (predict) and --compare FILE (search): a plan read back from shardplan's JSON (docs/plan-json.md)
// becomes the flags' values. The rule, stated in predict --help and docs/plan-json.md: a flag given beside --plan
// replaces the file's value of that field; fields derived from others (dp from the GPU count and the degrees, etp
// and sequence parallelism from tp) are derived again when a flag replaces what they derive from, unless given
// too. Everything replaced is listed in the output, so a re-prediction never passes for the file's plan.
#pragma once

#include <string>
#include <vector>

#include "apps/plan_flags.h"
#include "modeler/estimate.h"
#include "modeler/io/plan_json.h"

namespace shardplan::cli {

/// Fills the flags the command line left unset from `file`; returns the flags given that replaced one of the
/// file's values (in the order of the flag table). `model` is the --model value; `cli` says which flags were given.
std::vector<std::string> apply_plan_file(const io::PlanFile& file, const CLI::App& cli, std::string* model,
                                         SystemFlags* system, PlanFlags* plan);

/// The inputs a report records so its plan can be predicted again (predict --json "inputs", search --emit json).
io::PlanInputs plan_inputs(const std::string& model, const SystemFlags& system, int gpus, const std::string& framework);

/// "step 1.234 s (file 1.230 s, +0.3%), 12,345 tokens/s/GPU (...), 61.2 GiB (...)": now against the file's
/// prediction; "" when the file has none.
std::string compare_with_file(const io::PredictedNumbers& file, const Estimate& now);

}  // namespace shardplan::cli
