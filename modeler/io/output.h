// One output of a command (an emitted launcher file, a trace, a sweep table or chart): standard output when the
// flag is omitted (where the command says so) or given as "-", a file otherwise, written by write_file_atomic.
// Commands check every destination before any work, so a refusal (file exists, directory missing, a device) comes
// before a long search, not after it.
#pragma once

#include <iostream>
#include <streambuf>
#include <string>
#include <utility>

namespace shardplan::io {

class Output {
 public:
  Output() = default;
  /// `path` "" or "-" means standard output.
  Output(std::string path, bool force) : path_(std::move(path)), force_(force) {}

  /// "", "-", and the names of descriptor 1 (/dev/stdout, /dev/fd/1, /proc/self/fd/1).
  bool to_stdout() const {
    return path_.empty() || path_ == "-" || path_ == "/dev/stdout" || path_ == "/dev/fd/1" ||
           path_ == "/proc/self/fd/1";
  }
  const std::string& path() const { return path_; }
  /// "standard output" or the path, for messages.
  std::string where() const { return to_stdout() ? "standard output" : path_; }

  /// Throws ConfigError when the file cannot be written (see check_destination); standard output always can.
  void check() const;
  /// Writes `content` to standard output (the process's descriptor 1, even while ReportToStderr is active) or to
  /// the file, atomically.
  void write(const std::string& content) const;

 private:
  std::string path_;
  bool force_ = false;
};

/// While alive, std::cout goes to standard error, so a command whose file goes to standard output can still show
/// its human report: `shardplan search ... --emit megatron > train.sh` leaves only the script in train.sh.
class ReportToStderr {
 public:
  explicit ReportToStderr(bool active) : saved_(active ? std::cout.rdbuf(std::cerr.rdbuf()) : nullptr) {}
  ~ReportToStderr() {
    if (saved_) std::cout.rdbuf(saved_);
  }
  ReportToStderr(const ReportToStderr&) = delete;
  ReportToStderr& operator=(const ReportToStderr&) = delete;

 private:
  std::streambuf* saved_;
};

}  // namespace shardplan::io
