// Progress on stderr for long searches, and Ctrl-C handling. The progress line appears only when stderr is a
// terminal, --quiet is off, and the work has run for more than a second. SIGINT sets a flag the search polls, so
// it stops between plans and the command exits without writing any file (every output is written atomically at
// the end).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>

namespace shardplan::cli {

class Progress {
 public:
  Progress(std::string label, bool quiet);
  ~Progress();
  void update(uint64_t done, uint64_t total);
  void finish();  // clears the line

 private:
  std::string label_;
  bool enabled_;
  bool shown_ = false;
  std::chrono::steady_clock::time_point start_;
};

/// Installs a SIGINT handler for its lifetime (the previous one is restored after).
class InterruptGuard {
 public:
  InterruptGuard();
  ~InterruptGuard();
  InterruptGuard(const InterruptGuard&) = delete;
  InterruptGuard& operator=(const InterruptGuard&) = delete;
  /// The flag the handler sets.
  static const std::atomic<bool>* flag();
  static bool interrupted();

 private:
  void (*previous_)(int) = nullptr;
};

/// Exit code of a command stopped by Ctrl-C (128 + SIGINT, the shell convention).
constexpr int kInterruptedExit = 130;

}  // namespace shardplan::cli
