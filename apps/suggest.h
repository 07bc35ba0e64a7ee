// "Did you mean": CLI11 2.1 reports a misspelled subcommand as "A subcommand is required" and a misspelled flag as
// "The following arguments were not expected", or as a missing required flag. On a parse error, main asks this
// for the argument the command tree does not know, and prints it with the nearest known name.
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

namespace shardplan::cli {

/// "unknown command 'predcit', did you mean 'predict'?" or "predict: unknown flag '--tpp', did you mean '--tp'?"
/// for the first argument of `args` (argv without the program) that names no subcommand or flag where it stands;
/// "" when every name is known.
std::string unknown_argument_hint(const CLI::App& app, const std::vector<std::string>& args);

}  // namespace shardplan::cli
