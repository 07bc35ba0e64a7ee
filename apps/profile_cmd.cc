// `shardplan profile diff A B`: what a calibration changed, table by table, old vs new and the change in percent.
// `shardplan profile gemm S --shapes FILE`: the predicted time of exact GEMM shapes (modeler/gemm_model.h), to
// check a profile against GEMMs measured outside its fit (kernels/device_check.sh).
// `shardplan profile framework [NAME]`: the software profiles, or one profile's traits and their sources.
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "apps/command.h"
#include "apps/plan_flags.h"
#include "calibrate/profile_diff.h"
#include "modeler/gemm_model.h"
#include "modeler/io/system_io.h"
#include "modeler/problems.h"

namespace shardplan::cli {
namespace {

class ProfileCommand final : public Command {
 public:
  CLI::App* setup(CLI::App& app) override {
    cmd_ = app.add_subcommand("profile", "Inspect hardware and framework profiles");
    cmd_->require_subcommand(1);
    diff_ = cmd_->add_subcommand("diff", "Compare two cluster profiles (e.g. base vs calibrated)");
    diff_->add_option("a", a_, "Cluster name or path (before)")->required();
    diff_->add_option("b", b_, "Cluster name or path (after)")->required();
    diff_->add_flag("--all", all_, "Also list unchanged values");
    gemm_ = cmd_->add_subcommand("gemm", "Predicted time of GEMM shapes on a system's GPU");
    gemm_->add_option("system", a_, "Cluster name or path")->required();
    gemm_->add_option("--shapes", shapes_, "File of 'm,n,k' lines")->required()->check(CLI::ExistingFile);
    gemm_->add_option("--dtype", dtype_, "GEMM dtype")
        ->check(CLI::IsMember({"fp32", "tf32", "bf16", "fp16", "fp8", "fp4"}));
    framework_ =
        cmd_->add_subcommand("framework", "The training software profiles, or one profile's traits and sources");
    framework_->add_option("name", a_, "Framework name (omit to list them)");
    framework_->add_flag("--json", json_, "print the traits as JSON");
    return cmd_;
  }

  int run() override {
    if (gemm_->parsed()) return run_gemm();
    if (framework_->parsed()) return run_framework();
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

  int run_framework() {
    if (a_.empty()) {
      std::printf("# framework profiles (shardplan profile framework NAME for one's traits)\n");
      for (const std::string& name : framework_names())
        std::printf("  %-20s %s\n", name.c_str(), find_framework(name)->description.c_str());
      return 0;
    }
    const Framework& fw = resolve_framework(a_);
    if (json_) {
      nlohmann::json traits = nlohmann::json::object();
      for (const FrameworkTrait& t : framework_traits(fw)) traits[t.name] = t.value;
      const nlohmann::json j{{"schema_version", 1}, {"name", fw.name},     {"description", fw.description},
                             {"traits", traits},   {"sources", fw.sources}};
      std::printf("%s\n", j.dump(2).c_str());
      return 0;
    }
    std::printf("# framework %s: %s\n# traits (each cited where it is set, modeler/framework_profiles_*.cc)\n", fw.name.c_str(),
                fw.description.c_str());
    for (const FrameworkTrait& t : framework_traits(fw))
      std::printf("  %-62s %s\n", t.name.c_str(), t.value.c_str());
    std::printf("# sources\n");
    for (const std::string& s : fw.sources) std::printf("  %s\n", s.c_str());
    return 0;
  }

  int run_gemm() {
    const System s = io::load_system(a_, 0);
    Dtype dtype = Dtype::bf16;
    for (int i = 0; i < kNumDtypes; ++i)
      if (dtype_ == kDtypeNames[i]) dtype = static_cast<Dtype>(i);
    std::ifstream in(shapes_);
    std::string line;
    std::printf("# m n k predicted_us (%s, %s)\n", s.name.c_str(), dtype_.c_str());
    for (int no = 1; std::getline(in, line); ++no) {
      if (line.empty() || line[0] == '#') continue;
      double m = 0, n = 0, k = 0;
      int used = 0;
      // Whole numbers in [1, 2^31): inf, nan, 1.5 and trailing text are refused, not printed as nan.
      auto whole = [](double v) { return v >= 1 && v < 2147483648.0 && v == std::floor(v); };
      if (std::sscanf(line.c_str(), "%lf,%lf,%lf%n", &m, &n, &k, &used) != 3 ||
          line.find_first_not_of(" \t\r", static_cast<size_t>(used)) != std::string::npos || !whole(m) ||
          !whole(n) || !whole(k))
        throw ConfigError(shapes_ + ":" + std::to_string(no) + ": expected m,n,k (integers from 1 to 2^31 - 1), got '" +
                          line + "'");
      std::printf("%.0f %.0f %.0f %.3f\n", m, n, k, gemm_time(s.gpu, dtype, m, n, k).v * 1e6);
    }
    return 0;
  }

 private:
  CLI::App *cmd_ = nullptr, *diff_ = nullptr, *gemm_ = nullptr, *framework_ = nullptr;
  std::string a_, b_, shapes_, dtype_ = "bf16";
  bool all_ = false, json_ = false;
};

}  // namespace

std::unique_ptr<Command> make_profile_command() { return std::make_unique<ProfileCommand>(); }

}  // namespace shardplan::cli
