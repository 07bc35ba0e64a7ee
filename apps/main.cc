// shardplan: the command-line front end. Thin: parse flags, call the library, print. Exit codes: 0 success,
// 2 bad input or infeasible request, 1 internal error or output that could not be written.
#include <CLI/CLI.hpp>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <memory>
#include <vector>

#include "apps/command.h"
#include "apps/suggest.h"
#include "modeler/problems.h"

namespace {

/// Whether standard output is a pipe or socket whose reader has gone: Linux's poll reports POLLERR on the write end
/// of a pipe without readers (fs/pipe.c pipe_poll).
bool stdout_reader_gone() {
  pollfd p{STDOUT_FILENO, POLLOUT, 0};
  return ::poll(&p, 1, 0) == 1 && (p.revents & POLLERR) != 0;
}

/// The exit status once the command is done. `shardplan search ... | head -1` closes the pipe early: SIGPIPE is
/// ignored (main), the writes fail with EPIPE, and the command's own status stands without a message, the reader
/// having taken what it wanted. Any other failed write (a full disk, /dev/full) is an error: the output is lost.
int finish_output(int rc) {
  errno = 0;
  std::cout.flush();
  const bool cout_failed = !std::cout;
  const bool stdio_failed = std::fflush(stdout) != 0 || std::ferror(stdout) != 0;
  if (!cout_failed && !stdio_failed) return rc;
  if (stdout_reader_gone()) return rc;
  const int err = errno;
  std::cerr << "error: could not write standard output" << (err != 0 ? std::string(": ") + std::strerror(err) : "")
            << "; the output is incomplete\n";
  return 1;
}

int run_cli(int argc, char** argv) {
  using namespace shardplan;
  CLI::App app{"shardplan: performance modeler and parallelism planner for transformer training"};
  app.set_version_flag("--version", SHARDPLAN_VERSION);
  app.require_subcommand(1);
  // The subcommand table: one line per command.
  std::vector<std::unique_ptr<cli::Command>> commands;
  commands.push_back(cli::make_predict_command());
  commands.push_back(cli::make_validate_command());
  commands.push_back(cli::make_search_command());
  commands.push_back(cli::make_sweep_command());
  commands.push_back(cli::make_calibrate_command());
  commands.push_back(cli::make_profile_command());
  commands.push_back(cli::make_list_command());
  commands.push_back(cli::make_serve_command());
  std::vector<CLI::App*> subs;
  for (auto& c : commands) subs.push_back(c->setup(app));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() != 0) {  // not --help or --version
      const std::string hint = cli::unknown_argument_hint(app, std::vector<std::string>(argv + 1, argv + argc));
      if (!hint.empty()) {
        std::cerr << "error: " << hint << "\nRun with --help for more information.\n";
        return 2;
      }
    }
    const int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }
  try {
    for (size_t i = 0; i < commands.size(); ++i)
      if (subs[i]->parsed()) return commands[i]->run();
  } catch (const ConfigError& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 2;
  } catch (const Infeasible& e) {
    std::cerr << "infeasible: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "internal error: " << e.what() << "\n";
    return 1;
  }
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  std::signal(SIGPIPE, SIG_IGN);  // a closed stdout is a failed write (finish_output), not a death by signal
  return finish_output(run_cli(argc, argv));
}
