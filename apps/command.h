// A shardplan subcommand. Each lives in its own file (predict_cmd.cc, validate_cmd.cc, ...) and is listed once in
// main.cc's table, ninja-tool style, so help text and "did you mean" come from one place.
#pragma once

#include <CLI/CLI.hpp>

#include <memory>

namespace shardplan::cli {

class Command {
 public:
  virtual ~Command() = default;
  /// Adds the subcommand (and its options) to `app`; returns it so main can tell which one was selected.
  virtual CLI::App* setup(CLI::App& app) = 0;
  /// Runs after parsing succeeded; returns the exit code. Throws ConfigError/Infeasible for bad input (exit 2).
  virtual int run() = 0;
};

std::unique_ptr<Command> make_predict_command();
std::unique_ptr<Command> make_validate_command();
std::unique_ptr<Command> make_search_command();
std::unique_ptr<Command> make_sweep_command();
std::unique_ptr<Command> make_calibrate_command();
std::unique_ptr<Command> make_profile_command();
std::unique_ptr<Command> make_list_command();
std::unique_ptr<Command> make_serve_command();

}  // namespace shardplan::cli
