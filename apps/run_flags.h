// Flags of a whole run (tokens or steps, price, power, failures, checkpoints) shared by predict and search, and
// the text report of its time, cost and energy. The arithmetic lives in modeler/run_cost.
#pragma once

#include <CLI/CLI.hpp>

#include <optional>
#include <string>

#include "modeler/estimate.h"
#include "modeler/framework.h"
#include "modeler/model_desc.h"
#include "modeler/run_cost.h"
#include "modeler/run_objective.h"

namespace shardplan::cli {

struct RunFlags {
  std::string train_tokens;  // "15.6T", "2e12", "300B"
  std::optional<double> steps, price, pue, node_overhead, gpu_power_w, restart_min, checkpoint_gbps,
      checkpoint_interval_min;
  std::string mtbf;  // hours per GPU, or "llama3"
  bool async_checkpoint = false;
  // search only
  std::string objective = "step";
  std::optional<int> max_gpus;
  std::optional<double> max_cost;
};

void add_run_flags(CLI::App* app, RunFlags* f);
/// --objective, --max-gpus, --max-cost (search).
void add_objective_flags(CLI::App* app, RunFlags* f);

/// Whether a run was asked for (--train-tokens or --steps).
bool wants_run(const RunFlags& f);
/// Token counts with an optional K, M, B (or G) or T suffix: "15.6T" = 15.6e12; ConfigError naming the flag.
double parse_token_count(const std::string& flag, const std::string& text);
/// The run spec; ConfigError when run flags come without --train-tokens or --steps, or a value is out of range.
RunSpec resolve_run_spec(const RunFlags& f);
RunObjective resolve_objective(const RunFlags& f);
ObjectiveCaps resolve_caps(const RunFlags& f);

/// Checkpoint bytes of the model under the framework's state bytes per parameter, then run_cost.
RunCost run_cost_for(const Estimate& e, const System& sys, const ModelDesc& model, const Framework& fw,
                     const RunSpec& spec);

/// "54.2 d", "3.1 h", "12.0 min", "2.8 s".
std::string format_duration(double seconds);
/// The run block of predict's report.
std::string format_run(const RunCost& r, const RunSpec& spec, int gpus);

}  // namespace shardplan::cli
