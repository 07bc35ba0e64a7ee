// `shardplan calibrate fit-runs RUNS --base SYSTEM --out PROFILE`: fit named physical parameters to measured
// training runs and write a profile that inherits the base (docs/fit-runs.md).
#pragma once

#include <CLI/CLI.hpp>

#include <string>

namespace shardplan::cli {

struct FitRunsFlags {
  std::string runs, base, out;
  bool force = false, accept_anyway = false;
};

/// Adds the fit-runs subcommand under `calibrate`.
CLI::App* add_fit_runs_subcommand(CLI::App* calibrate, FitRunsFlags* flags);
int run_fit_runs(const FitRunsFlags& flags);

}  // namespace shardplan::cli
