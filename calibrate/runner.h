// `shardplan calibrate run`: runs the benchmark binaries (locally, or behind a launcher prefix such as
// "mpirun -np 16 -H a:8,b:8" or "srun -N2 --ntasks-per-node=8" for the collectives) and appends their JSON lines
// to one file as they arrive. Each benchmark gets --skip-done <file>, so a re-run after an interruption measures
// only the (benchmark, params) rows the file does not hold yet.
#pragma once

#include <string>
#include <vector>

namespace shardplan::calibrate {

struct RunOptions {
  std::vector<std::string> benchmarks;  // gemm, attention, memory, collectives
  std::string launcher;                 // prefix for the collective benchmark; "" = run it directly
  std::string collective_backend;       // nccl or mpi
  std::string bench_dir;                // where the shardplan_bench_* binaries are
  std::string out;                      // the JSON-lines file (appended)
  std::vector<std::string> extra_args;  // passed to every benchmark (e.g. --max-bytes 1G)
};

/// The shell command for one benchmark. Throws ConfigError for an unknown benchmark name.
std::string benchmark_command(const std::string& benchmark, const RunOptions& opts);
/// Binary name for a benchmark ("shardplan_bench_gemm", "shardplan_bench_nccl", ...).
std::string benchmark_binary(const std::string& benchmark, const RunOptions& opts);

/// Runs one command, appending its JSON lines to `out` (flushed per line; a launcher's tag such as
/// "[1,0]<stdout>:" removed) and passing other lines to stderr. Returns the command's exit status.
int run_appending(const std::string& command, const std::string& out, std::string* error);

/// Checks that `out` can be appended to before anything runs: a regular file (links followed: appending replaces
/// nothing) or a new name in an existing directory. Throws ConfigError naming the path.
void check_append_target(const std::string& out);

/// An interrupted run can leave the file's last line cut mid-record; appending onto it would glue the next record
/// to the fragment and make the file unreadable. Truncates the file after its last newline and returns how many
/// bytes were removed (0 when the file ends in a newline, is empty, or does not exist).
long long trim_partial_last_line(const std::string& out);

/// Quotes a string for /bin/sh.
std::string shell_quote(const std::string& s);

}  // namespace shardplan::calibrate
