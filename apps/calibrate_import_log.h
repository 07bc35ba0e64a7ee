// `shardplan calibrate import-log FILE... --framework F`: training logs to runs of the published-runs schema
// (calibrate/log_import.h, docs/import-log.md). A verb of `calibrate`, kept in its own file.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace shardplan::cli {

class ImportLogVerb {
 public:
  /// Adds the verb to the `calibrate` subcommand.
  void setup(CLI::App* calibrate);
  bool parsed() const { return app_ && app_->parsed(); }
  int run();

 private:
  CLI::App* app_ = nullptr;
  std::vector<std::string> files_;
  std::string framework_, model_, system_, out_, id_;
  int gpus_ = 0, seq_ = 0, warmup_ = 10;
  bool force_ = false;
};

}  // namespace shardplan::cli
