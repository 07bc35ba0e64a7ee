#include "apps/progress.h"

#include <doctest/doctest.h>
#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>

using namespace shardplan::cli;

namespace {

/// Points stderr at `fd` for its lifetime (flushing around the switch).
class StderrTo {
 public:
  explicit StderrTo(int fd) : saved_(::dup(STDERR_FILENO)) {
    std::fflush(stderr);
    ::dup2(fd, STDERR_FILENO);
  }
  ~StderrTo() {
    std::fflush(stderr);
    ::dup2(saved_, STDERR_FILENO);
    ::close(saved_);
  }
  StderrTo(const StderrTo&) = delete;
  StderrTo& operator=(const StderrTo&) = delete;

 private:
  int saved_;
};

/// Everything readable from `fd` now.
std::string drain(int fd) {
  std::string out;
  char buf[256];
  pollfd p{fd, POLLIN, 0};
  while (::poll(&p, 1, 100) > 0 && (p.revents & POLLIN)) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

int g_previous_handler_calls = 0;
extern "C" void count_sigint(int) { ++g_previous_handler_calls; }

}  // namespace

TEST_SUITE("progress") {

TEST_CASE("Progress writes only to a terminal, not when quiet, and only after a second") {
  // A pseudo-terminal stands in for the user's terminal, a file for a redirected stderr.
  const int master = ::posix_openpt(O_RDWR | O_NOCTTY);
  REQUIRE(master >= 0);
  REQUIRE(::grantpt(master) == 0);
  REQUIRE(::unlockpt(master) == 0);
  const int tty = ::open(::ptsname(master), O_RDWR | O_NOCTTY);
  REQUIRE(tty >= 0);
  const std::filesystem::path file_path =
      std::filesystem::temp_directory_path() / ("shardplan_progress_test_" + std::to_string(::getpid()));
  const int file = ::open(file_path.c_str(), O_RDWR | O_CREAT | O_TRUNC, 0600);
  REQUIRE(file >= 0);

  std::string tty_output;
  {
    StderrTo to_file(file);
    Progress redirected("redirected", false);  // stderr is not a terminal: never shown
    {
      StderrTo to_tty(tty);
      Progress shown("search", false);
      Progress quiet("quiet", true);
      Progress early("early", false);
      early.update(1, 2);  // under a second: nothing yet
      std::this_thread::sleep_for(std::chrono::milliseconds(1100));
      redirected.update(1, 2);
      quiet.update(1, 2);
      shown.update(1, 0);  // no total: nothing
      CHECK(drain(master).empty());
      shown.update(1, 4);
      shown.finish();
      shown.finish();  // already cleared: nothing more
      tty_output = drain(master);
    }
    redirected.finish();
  }
  // "\r<label>: <pct>% (<done> / <total> plans, <elapsed> s)", then "\r" + erase-line when finished.
  const std::string head = "\rsearch:  25% (1 / 4 plans, ";
  const std::string tail = " s)\r\033[K";
  CHECK(tty_output.rfind(head, 0) == 0);
  REQUIRE(tty_output.size() > head.size() + tail.size());
  CHECK(tty_output.substr(tty_output.size() - tail.size()) == tail);
  CHECK(std::filesystem::file_size(file_path) == 0);
  ::close(file);
  std::filesystem::remove(file_path);
  ::close(tty);
  ::close(master);
}

TEST_CASE("InterruptGuard: SIGINT sets the flag; the previous handler is restored") {
  const auto before = std::signal(SIGINT, count_sigint);
  g_previous_handler_calls = 0;
  {
    InterruptGuard guard;
    CHECK_FALSE(InterruptGuard::interrupted());
    std::raise(SIGINT);
    CHECK(InterruptGuard::interrupted());
    CHECK(InterruptGuard::flag()->load());
    CHECK(g_previous_handler_calls == 0);
  }
  {
    InterruptGuard again;  // a new guard starts uninterrupted
    CHECK_FALSE(InterruptGuard::interrupted());
  }
  std::raise(SIGINT);
  CHECK(g_previous_handler_calls == 1);
  std::signal(SIGINT, before);
  CHECK(kInterruptedExit == 130);
}

}
