#include "calibrate/runner.h"

#include <sys/wait.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>

#include "modeler/problems.h"

namespace shardplan::calibrate {

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (const char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string benchmark_binary(const std::string& benchmark, const RunOptions& opts) {
  if (benchmark == "gemm" || benchmark == "attention" || benchmark == "memory") return "shardplan_bench_" + benchmark;
  if (benchmark == "collectives") {
    if (opts.collective_backend != "nccl" && opts.collective_backend != "mpi")
      throw ConfigError("--backend: expected nccl or mpi, got '" + opts.collective_backend + "'");
    return "shardplan_bench_" + opts.collective_backend;
  }
  throw ConfigError("--benchmarks: unknown benchmark '" + benchmark +
                    "' (expected gemm, attention, memory or collectives)");
}

std::string benchmark_command(const std::string& benchmark, const RunOptions& opts) {
  const std::string binary = opts.bench_dir.empty() ? benchmark_binary(benchmark, opts)
                                                    : opts.bench_dir + "/" + benchmark_binary(benchmark, opts);
  std::string cmd;
  // Only the collectives span ranks; the single-GPU benchmarks run once, on the local GPU.
  if (benchmark == "collectives" && !opts.launcher.empty()) cmd = opts.launcher + " ";
  cmd += shell_quote(binary) + " --skip-done " + shell_quote(opts.out);
  for (const auto& a : opts.extra_args) cmd += " " + shell_quote(a);
  return cmd;
}

int run_appending(const std::string& command, const std::string& out, std::string* error) {
  std::ofstream file(out, std::ios::app);
  if (!file) {
    *error = out + ": cannot open for appending: " + std::strerror(errno);
    return -1;
  }
  FILE* pipe = ::popen(command.c_str(), "r");
  if (!pipe) {
    *error = "cannot start '" + command + "': " + std::strerror(errno);
    return -1;
  }
  std::string line;
  char buf[4096];
  while (std::fgets(buf, sizeof(buf), pipe)) {
    line += buf;
    if (line.empty() || line.back() != '\n') continue;
    // Only JSON lines go to the file; anything else a launcher prints (banners, warnings) is passed through.
    if (line[0] == '{') file << line << std::flush;
    else std::fputs(line.c_str(), stderr);
    line.clear();
  }
  const int status = ::pclose(pipe);
  if (status == -1) {
    *error = "waiting for '" + command + "' failed";
    return -1;
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace shardplan::calibrate
