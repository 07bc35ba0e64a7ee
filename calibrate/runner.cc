#include "calibrate/runner.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fstream>

#include "calibrate/nccl_tests_log.h"
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

void check_append_target(const std::string& out) {
  if (out.empty() || out == "-")
    throw ConfigError("--out: calibrate run appends to a file (and resumes from it); name one");
  struct stat st {};
  if (::stat(out.c_str(), &st) != 0) {
    if (errno != ENOENT) throw ConfigError(out + ": cannot inspect: " + std::strerror(errno));
    const size_t slash = out.rfind('/');
    const std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : out.substr(0, slash);
    struct stat dst {};
    if (::stat(dir.c_str(), &dst) != 0 || !S_ISDIR(dst.st_mode))
      throw ConfigError(out + ": directory " + dir + " does not exist");
    return;
  }
  if (!S_ISREG(st.st_mode))
    throw ConfigError(out + ": not a regular file; calibrate run appends its measurements to a regular file");
}

long long trim_partial_last_line(const std::string& out) {
  const int fd = ::open(out.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return 0;
    throw ConfigError(out + ": cannot open: " + std::strerror(errno));
  }
  struct stat st {};
  long long trimmed = 0;
  if (::fstat(fd, &st) == 0 && st.st_size > 0) {
    // Scan back from the end for the last newline, a block at a time.
    off_t end = st.st_size, keep = 0;
    char buf[4096];
    bool found = false;
    while (end > 0 && !found) {
      const off_t start = end > static_cast<off_t>(sizeof buf) ? end - static_cast<off_t>(sizeof buf) : 0;
      const ssize_t n = ::pread(fd, buf, static_cast<size_t>(end - start), start);
      if (n <= 0) break;
      for (ssize_t i = n - 1; i >= 0; --i)
        if (buf[i] == '\n') {
          keep = start + i + 1;
          found = true;
          break;
        }
      end = start;
    }
    trimmed = st.st_size - keep;
    if (trimmed > 0 && ::ftruncate(fd, keep) != 0) {
      const std::string why = std::strerror(errno);
      ::close(fd);
      throw ConfigError(out + ": cannot remove the partial last line: " + why);
    }
  }
  ::close(fd);
  return trimmed;
}

int run_appending(const std::string& command, const std::string& out, std::string* error) {
  std::ofstream file(out, std::ios::app);
  if (!file) {
    *error = out + ": cannot open for appending: " + std::strerror(errno);
    return -1;
  }
  // shardplan ignores SIGPIPE (apps/main.cc) and an ignored signal stays ignored across exec: the benchmarks get
  // the default disposition back, as they would have from a shell.
  const auto sigpipe = std::signal(SIGPIPE, SIG_DFL);
  FILE* pipe = ::popen(command.c_str(), "r");
  const int popen_errno = errno;
  std::signal(SIGPIPE, sigpipe);
  errno = popen_errno;
  if (!pipe) {
    *error = "cannot start '" + command + "': " + std::strerror(errno);
    return -1;
  }
  std::string line;
  char buf[4096];
  while (std::fgets(buf, sizeof(buf), pipe)) {
    line += buf;
    if (line.empty() || line.back() != '\n') continue;
    // Only JSON lines go to the file; anything else a launcher prints (banners, warnings) is passed through. A
    // launcher's tag (a launcher prefix such as "mpirun --tag-output") is removed first.
    const size_t tag = launcher_prefix_length(line);
    if (tag < line.size() && line[tag] == '{')
      file << line.substr(tag) << std::flush;
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
