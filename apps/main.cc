// shardplan: the command-line front end. Thin: parse flags, call the library, print. Exit codes: 0 success,
// 2 bad input or infeasible request, 1 internal error.
#include <CLI/CLI.hpp>

#include <iostream>
#include <memory>
#include <vector>

#include "apps/command.h"
#include "apps/suggest.h"
#include "modeler/problems.h"

int main(int argc, char** argv) {
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
