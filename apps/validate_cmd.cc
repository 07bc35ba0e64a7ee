// shardplan validate: predict published, measured runs and report the error as it is, per run and per source.
#include <cstdio>
#include <optional>
#include <iostream>

#include "apps/text.h"
#include "apps/command.h"
#include "apps/plan_flags.h"
#include "apps/validate_fit_on.h"
#include "modeler/io/report_json.h"
#include "modeler/io/system_io.h"
#include "modeler/io/validation_run.h"
#include "modeler/io/validation_record_io.h"
#include "modeler/io/atomic_write.h"

namespace shardplan::cli {

namespace {


std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : " ") + x;
  return s;
}

class ValidateCommand final : public Command {
 public:
  CLI::App* setup(CLI::App& app) override {
    CLI::App* sub = app.add_subcommand("validate", "predict published, measured training runs and report the error");
    sub->add_option("--runs", runs_, "published-runs YAML file (schema in docs/design.md)")->required();
    sub->add_option("--system", system_,
                    "a calibrated cluster profile: runs on its GPU use its efficiency tables and tier curves");
    sub->add_flag("--fastest-fit", fastest_fit_,
                  "null plan fields the run's framework sets by default (torchtitan's pipeline micro-batch: local "
                  "batch / pp) take the fastest setting that fits, not that default. Default: the framework's "
                  "default, which a source that does not state the field ran (the bracket spans the open settings "
                  "either way)");
    sub->add_flag("--json", json_, "print a JSON report");
    sub->add_option("--write-record", record_,
                    "also write the validation record (MAPE and bias by GPU generation x framework) that predict and "
                    "search quote; the shipped one is hwprofiles/validation_record.yaml");
    sub->add_flag("--force", force_, "overwrite the --write-record file if it exists");
    sub->add_option("--fit-on", fit_on_,
                    "cross-validate calibrate fit-runs: fit per GPU x framework group on some runs, report the error "
                    "on the others. half[:SEED] (half of each group, seed 1 by default, then leave-one-source-out), "
                    "sources (leave-one-source-out alone), or FIELD=REGEX (fit on the runs whose id, source, "
                    "framework, gpu or precision matches); docs/fit-runs.md");
    return sub;
  }

  int run() override {
    const std::vector<io::PublishedRun> runs = io::load_published_runs(runs_);
    if (!fit_on_.empty()) {
      if (!system_.empty() || fastest_fit_ || !record_.empty())
        throw ConfigError("--fit-on fits on the standard systems of the runs: drop --system, --fastest-fit and "
                          "--write-record");
      return run_fit_on(runs, runs_, fit_on_, json_);
    }
    std::optional<System> calibrated;
    if (!system_.empty()) calibrated = io::load_system(system_, 0);
    const io::ValidationReport rep =
        io::run_validation(runs, calibrated ? &*calibrated : nullptr, fastest_fit_);
    if (!record_.empty()) {
      if (!system_.empty() || fastest_fit_)
        throw ConfigError("--write-record records the plain validation: drop --system and --fastest-fit");
      io::write_file_atomic(record_, io::record_yaml(io::record_from_report(rep, runs_)), force_);
    }
    if (json_) {
      print_json(rep);
    } else {
      print_table(rep);
    }
    return 0;
  }

 private:
  void print_table(const io::ValidationReport& rep) const {
    std::printf("%-52s %-28s %12s %12s %8s %17s  %s\n", "run", "source", "measured", "predicted", "error",
                "bracket", "unstated fields: value used (why)");
    std::printf("%-52s %-28s %12s %12s %8s %17s\n", "", "", "(tok/s/GPU)", "(tok/s/GPU)", "(%)", "(worst..best %)");
    for (const io::RunResult& r : rep.results) {
      const io::PublishedRun& run = *r.run;
      const std::string src = io::source_label(run.source).substr(0, 28);
      if (r.skipped) {
        std::printf("%-52s %-28s %12.1f %12s %8s %17s  skipped: %s\n", run.id.c_str(), src.c_str(),
                    run.measured_tokens_per_s_per_gpu, "-", "-", "-", r.skip_reason.c_str());
        continue;
      }
      std::string chosen = join(r.resolution.chosen);
      if (!r.resolution.fits) chosen += " (no setting fits: fastest shown)";
      if (r.memory_error_pct)
        chosen += " | memory " + fmt("%.1f", *r.predicted_memory_gib) + " vs " +
                  fmt("%.1f", *run.measured_peak_memory_gib) + " GiB (" + fmt("%+.1f", *r.memory_error_pct) + "%)";
      const std::string bracket = fmt("%+.1f", r.worst_error_pct) + ".." + fmt("%+.1f", r.best_error_pct);
      std::printf("%-52s %-28s %12.1f %12.1f %+8.1f %17s  %s\n", run.id.c_str(), src.c_str(),
                  run.measured_tokens_per_s_per_gpu, r.predicted_tokens_per_s_per_gpu, r.error_pct, bracket.c_str(),
                  chosen.c_str());
    }
    if (fastest_fit_)
      std::printf("\n(--fastest-fit: null fields the framework sets by default took the fastest setting that fits)\n");
    auto table = [](const char* title, const std::map<std::string, io::GroupStats>& groups) {
      if (groups.empty()) return;
      std::printf("throughput MAPE and bias by %s\n", title);
      for (const auto& [name, g] : groups)
        std::printf("  %-60s %4d runs  %6.1f%%  bias %+6.1f%%\n", name.c_str(), g.runs, g.mape, g.bias);
    };
    std::printf("\n");
    table("source", rep.by_source);
    table("framework", rep.by_framework);
    table("GPU", rep.by_gpu);
    table("precision", rep.by_precision);
    table("GPU generation x framework (the record predict and search quote)", rep.by_generation_framework);
    table("model, mixture-of-experts runs", rep.by_moe_model);
    int skipped = 0;
    for (const auto& r : rep.results) skipped += r.skipped ? 1 : 0;
    if (skipped) std::printf("skipped: %d runs (reasons in the table)\n", skipped);
    std::printf("\nthroughput MAPE %.1f%% over %d runs; memory MAPE %.1f%% over %d runs\n", rep.throughput.mape,
                rep.throughput.runs, rep.memory.mape, rep.memory.runs);
  }

  void print_json(const io::ValidationReport& rep) const {
    nlohmann::json j;
    j["schema_version"] = 1;
    io::ReportContext ctx;
    ctx.command = "validate";
    j["context"] = io::context_json(ctx);
    j["context"]["runs_file"] = runs_;
    j["context"]["fastest_fit"] = fastest_fit_;
    nlohmann::json rows = nlohmann::json::array();
    for (const io::RunResult& r : rep.results) {
      nlohmann::json row{{"id", r.run->id},
                         {"source", r.run->source},
                         {"framework", r.run->framework},
                         {"measured_tokens_per_s_per_gpu", r.run->measured_tokens_per_s_per_gpu},
                         {"skipped", r.skipped}};
      if (r.skipped) {
        row["skip_reason"] = r.skip_reason;
      } else {
        row["predicted_tokens_per_s_per_gpu"] = r.predicted_tokens_per_s_per_gpu;
        row["error_pct"] = r.error_pct;
        row["chosen"] = r.resolution.chosen;
        nlohmann::json unstated = nlohmann::json::array();
        for (const Choice& c : r.resolution.choices)
          unstated.push_back({{"field", c.field}, {"value", c.value}, {"why", c.why}});
        row["unstated"] = unstated;
        const Bracket& b = r.resolution.bracket;
        row["bracket"] = {{"settings", b.settings},
                          {"best_tokens_per_s_per_gpu", b.best_tokens_per_s_per_gpu},
                          {"worst_tokens_per_s_per_gpu", b.worst_tokens_per_s_per_gpu},
                          {"best_error_pct", r.best_error_pct},
                          {"worst_error_pct", r.worst_error_pct}};
        row["profile"] = r.framework;
        row["estimate"] = io::estimate_json(r.resolution.estimate);
        if (r.memory_error_pct) {
          row["measured_peak_memory_gib"] = *r.run->measured_peak_memory_gib;
          row["predicted_memory_gib"] = *r.predicted_memory_gib;
          row["memory_error_pct"] = *r.memory_error_pct;
        }
      }
      rows.push_back(row);
    }
    j["runs"] = rows;
    auto groups = [](const std::map<std::string, io::GroupStats>& m) {
      nlohmann::json g;
      for (const auto& [k, v] : m) g[k] = {{"runs", v.runs}, {"mape_pct", v.mape}, {"bias_pct", v.bias}};
      return g;
    };
    j["summary"] = {
        {"throughput",
         {{"runs", rep.throughput.runs}, {"mape_pct", rep.throughput.mape}, {"bias_pct", rep.throughput.bias}}},
        {"memory", {{"runs", rep.memory.runs}, {"mape_pct", rep.memory.mape}, {"bias_pct", rep.memory.bias}}},
        {"by_source", groups(rep.by_source)},
        {"by_framework", groups(rep.by_framework)},
        {"by_moe_model", groups(rep.by_moe_model)},
        {"by_gpu", groups(rep.by_gpu)},
        {"by_precision", groups(rep.by_precision)},
        {"by_generation_framework", groups(rep.by_generation_framework)}};
    std::cout << j.dump(2) << "\n";
  }

  std::string runs_;
  std::string system_;
  std::string record_;
  std::string fit_on_;
  bool json_ = false, fastest_fit_ = false, force_ = false;
};

}  // namespace

std::unique_ptr<Command> make_validate_command() { return std::make_unique<ValidateCommand>(); }

}  // namespace shardplan::cli
