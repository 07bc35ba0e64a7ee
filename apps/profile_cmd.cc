// `shardplan profile diff A B`: what a calibration changed, table by table, old vs new and the change in percent.
#include <cstdio>
#include <iostream>

#include "apps/command.h"
#include "calibrate/profile_diff.h"
#include "modeler/io/system_io.h"

namespace shardplan::cli {
namespace {

class ProfileCommand final : public Command {
 public:
  CLI::App* setup(CLI::App& app) override {
    cmd_ = app.add_subcommand("profile", "Inspect hardware profiles");
    cmd_->require_subcommand(1);
    diff_ = cmd_->add_subcommand("diff", "Compare two cluster profiles (e.g. base vs calibrated)");
    diff_->add_option("a", a_, "Cluster name or path (before)")->required();
    diff_->add_option("b", b_, "Cluster name or path (after)")->required();
    diff_->add_flag("--all", all_, "Also list unchanged values");
    return cmd_;
  }

  int run() override {
    const System a = io::load_system(a_, 0);
    const System b = io::load_system(b_, 0);
    const auto rows = calibrate::diff_systems(a, b);
    std::printf("# %s -> %s\n# %-28s %-28s %12s %12s %9s\n", a_.c_str(), b_.c_str(), "table", "value", "before",
                "after", "change");
    int unchanged = 0;
    for (const auto& r : rows) {
      const bool same = r.before == r.after;
      unchanged += same;
      if (same && !all_) continue;
      char change[32] = "-";
      if (r.before != 0) std::snprintf(change, sizeof(change), "%+.1f%%", 100 * (r.after - r.before) / r.before);
      std::printf("  %-28s %-28s %12.4g %12.4g %9s\n", r.table.c_str(), r.key.c_str(), r.before, r.after, change);
    }
    std::printf("# %zu values compared, %zu changed\n", rows.size(), rows.size() - static_cast<size_t>(unchanged));
    return 0;
  }

 private:
  CLI::App *cmd_ = nullptr, *diff_ = nullptr;
  std::string a_, b_;
  bool all_ = false;
};

}  // namespace

std::unique_ptr<Command> make_profile_command() { return std::make_unique<ProfileCommand>(); }

}  // namespace shardplan::cli
