// --plan FILE (predict) and --compare FILE (search): a plan read back from shardplan's JSON (docs/plan-json.md)
// becomes the flags' values. The rule, stated in predict --help and docs/plan-json.md: a flag given beside --plan
// replaces the file's value of that field; fields derived from others (dp from the GPU count and the degrees, etp
// and sequence parallelism from tp) are derived again when a flag replaces what they derive from, unless given
// too. Everything replaced is listed in the output, so a re-prediction never passes for the file's plan.
#pragma once

#include <string>
#include <vector>

#include "apps/plan_flags.h"
#include "apps/search_flags.h"
#include "modeler/estimate.h"
#include "modeler/framework.h"
#include "modeler/search.h"
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

/// A plan file evaluated beside a search's results (search --compare).
struct Comparison {
  std::string file;
  Estimate estimate;
  uint64_t rank = 0;     // among the search's fitting plans: 1 + those strictly faster (0: the plan does not fit)
  uint64_t fitting = 0;  // the search's fitting plans
  std::vector<std::string> notes;  // where the file's own inputs differ from the search's, harmlessly
};

/// Evaluates the plan of `file` in the search's problem: its model, system, framework, batch and sequence. A file
/// planned for another model, GPU count, global batch or sequence length is a ConfigError naming both values
/// (such a plan answers another question); another system or framework is allowed and noted. `r` must have
/// been searched with keep_fit_steps.
Comparison compare_plan(const io::PlanFile& file, const SearchFlags& f, const ModelDesc& model, const System& sys,
                        const Framework& fw, const SearchResult& r);
/// The comparison in words: the plan, its numbers, its rank, and its difference to rank 1.
std::string format_comparison(const Comparison& c, const SearchResult& r);

}  // namespace shardplan::cli
