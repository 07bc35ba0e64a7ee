// The open-loop workload flags of `serve predict` (--request-rate, --num-prompts, --seed, --lengths):
// registration, the request-lengths file, and the open-loop report (text and JSON). open_loop.h simulates it.
#pragma once

#include <CLI/CLI.hpp>
#include <istream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "modeler/serving/open_loop.h"

namespace shardplan::cli {

struct WorkloadFlags {
  std::string request_rate;  // "" (closed loop), a positive number or "inf"
  int num_prompts = 0;       // 0: 1000 with fixed lengths, every row of --lengths
  uint64_t seed = 0;
  std::string lengths;  // file of (input, output) pairs
};

/// Registers the flags on `app`; --request-rate excludes `concurrency` and --lengths excludes the fixed lengths.
void add_workload_flags(CLI::App* app, WorkloadFlags* f, CLI::Option* concurrency, CLI::Option* input_len,
                        CLI::Option* output_len);

/// "4", "0.5" or "inf" (any case): requests per second. Throws ConfigError naming --request-rate otherwise.
double parse_request_rate(const std::string& s);

/// One request a line: input and output tokens, separated by blanks or a comma; blank lines and lines starting
/// with '#' are skipped. Throws ConfigError naming `name` and the line for anything else, or for no rows.
std::vector<serving::LengthPair> parse_lengths(std::istream& is, const std::string& name);

/// The workload the flags describe: the lengths file's rows (the first --num-prompts of them), or num_prompts
/// copies of (input_len, output_len). Throws ConfigError for a flag that needs --request-rate without it, or
/// more prompts than the file has.
serving::OpenLoopWorkload make_open_loop_workload(const WorkloadFlags& f, int input_len, int output_len);

void print_open_loop(const serving::OpenLoopWorkload& wl, const WorkloadFlags& f, const serving::OpenLoopPrediction& p);
nlohmann::json open_loop_json(const serving::OpenLoopWorkload& wl, const WorkloadFlags& f,
                              const serving::OpenLoopPrediction& p);

}  // namespace shardplan::cli
