#include "apps/progress.h"

#include <unistd.h>

#include <csignal>
#include <cstdio>

namespace shardplan::cli {

namespace {
std::atomic<bool> g_interrupted{false};
extern "C" void on_sigint(int) { g_interrupted.store(true); }
}  // namespace

Progress::Progress(std::string label, bool quiet)
    : label_(std::move(label)), enabled_(!quiet && ::isatty(STDERR_FILENO) == 1),
      start_(std::chrono::steady_clock::now()) {}

Progress::~Progress() { finish(); }

void Progress::update(uint64_t done, uint64_t total) {
  if (!enabled_ || total == 0) return;
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  if (elapsed < 1.0) return;
  std::fprintf(stderr, "\r%s: %3.0f%% (%llu / %llu plans, %.0f s)", label_.c_str(),
               100.0 * static_cast<double>(done) / static_cast<double>(total), static_cast<unsigned long long>(done),
               static_cast<unsigned long long>(total), elapsed);
  std::fflush(stderr);
  shown_ = true;
}

void Progress::finish() {
  if (!shown_) return;
  std::fprintf(stderr, "\r\033[K");  // carriage return, erase the line
  std::fflush(stderr);
  shown_ = false;
}

InterruptGuard::InterruptGuard() {
  g_interrupted.store(false);
  previous_ = std::signal(SIGINT, on_sigint);
}

InterruptGuard::~InterruptGuard() { std::signal(SIGINT, previous_ == SIG_ERR ? SIG_DFL : previous_); }

const std::atomic<bool>* InterruptGuard::flag() { return &g_interrupted; }
bool InterruptGuard::interrupted() { return g_interrupted.load(); }

}  // namespace shardplan::cli
