// shardplan serve validate: predict measured serving runs (design.md serving-runs schema) and report each
// measured metric's error as it is, per row, per source, engine, GPU and row family.
#include <cstdio>
#include <iostream>

#include <nlohmann/json.hpp>

#include "apps/serve_command.h"
#include "modeler/io/serving_validation.h"
#include "modeler/io/validation_run.h"

namespace shardplan::cli {

namespace {

std::string cell(const std::optional<double>& v, const char* f = "%.4g") {
  if (!v) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, f, *v);
  return buf;
}

class ServeValidateCommand final : public Command {
 public:
  CLI::App* setup(CLI::App& app) override {
    CLI::App* sub = app.add_subcommand("validate", "predict measured serving runs and report the error");
    sub->add_option("--runs", runs_, "serving-runs YAML file (schema in design.md)")->required();
    sub->add_flag("--json", json_, "print a JSON report");
    return sub;
  }

  int run() override {
    const auto runs = io::load_serving_runs(runs_);
    const io::ServeValidationReport rep = io::run_serve_validation(runs);
    if (json_) print_json(rep);
    else print_table(rep);
    return 0;
  }

 private:
  static void print_groups(const char* title,
                           const std::map<std::string, std::array<io::ServeStats, io::kNumServeMetrics>>& g) {
    std::printf("%s\n", title);
    for (const auto& [name, s] : g) {
      std::printf("  %-56s", name.c_str());
      for (int k = 0; k < io::kNumServeMetrics; ++k)
        if (s[k].runs) std::printf("  %s %5.1f%% (%d)", io::kServeMetricNames[k], s[k].mape, s[k].runs);
      std::printf("\n");
    }
  }

  void print_table(const io::ServeValidationReport& rep) const {
    std::printf("%-64s %-10s %-16s %s\n", "run", "engine", "gpu", "metric: measured / predicted (error %)");
    int skipped = 0;
    for (const auto& r : rep.rows) {
      std::printf("%-64s %-10s %-16s", r.run->id.c_str(), r.run->engine.c_str(), r.run->gpu.c_str());
      if (r.skipped) {
        ++skipped;
        std::printf(" skipped: %s\n", r.skip_reason.c_str());
        continue;
      }
      for (int k = 0; k < io::kNumServeMetrics; ++k)
        if (r.measured[k])
          std::printf(" %s %s / %s (%s%%)", io::kServeMetricNames[k], cell(r.measured[k]).c_str(),
                      cell(r.predicted[k]).c_str(), cell(r.error_pct[k], "%+.1f").c_str());
      if (!r.assumed.empty()) {
        std::string a;
        for (const auto& x : r.assumed) a += (a.empty() ? "" : ", ") + x;
        std::printf("  [assumed: %s]", a.c_str());
      }
      std::printf("\n");
    }
    std::printf("\n(TTFT, TPOT in ms; decode, prefill, throughput in tokens/s; MAPE with the row count)\n");
    print_groups("by source", rep.by_source);
    print_groups("by engine", rep.by_engine);
    print_groups("by gpu", rep.by_gpu);
    print_groups("by family", rep.by_family);
    // The open-loop rows (workload.request_rate) on a line of their own: what was predicted, what was not.
    int rate_rows = 0, rate_done = 0;
    for (const auto& r : rep.rows)
      if (r.run->request_rate) {
        ++rate_rows;
        rate_done += r.skipped ? 0 : 1;
      }
    if (rate_rows)
      std::printf("request-rate rows (open loop): %d, %d predicted (family 'datacenter open loop')%s\n", rate_rows,
                  rate_done, rate_done < rate_rows ? "; the others' reasons are in the table" : "");
    if (skipped) std::printf("skipped: %d rows (reasons in the table)\n", skipped);
    const auto& o = rep.overall;
    std::printf("\nTPOT MAPE %.1f%% over %d runs; TTFT MAPE %.1f%% over %d runs; decode MAPE %.1f%% over %d runs\n",
                o[1].mape, o[1].runs, o[0].mape, o[0].runs, o[2].mape, o[2].runs);
  }

  void print_json(const io::ServeValidationReport& rep) const {
    nlohmann::json j;
    j["schema_version"] = 1;
    j["context"] = {{"command", "serve validate"}, {"runs_file", runs_}};
    nlohmann::json rows = nlohmann::json::array();
    for (const auto& r : rep.rows) {
      nlohmann::json row{{"id", r.run->id}, {"engine", r.run->engine}, {"gpu", r.run->gpu}, {"family", r.family},
                         {"skipped", r.skipped}};
      if (r.skipped) row["skip_reason"] = r.skip_reason;
      for (int k = 0; k < io::kNumServeMetrics; ++k) {
        if (!r.measured[k]) continue;
        nlohmann::json m{{"measured", *r.measured[k]}};
        if (r.predicted[k]) m["predicted"] = *r.predicted[k];
        if (r.error_pct[k]) m["error_pct"] = *r.error_pct[k];
        row["metrics"][io::kServeMetricNames[k]] = m;
      }
      row["assumed"] = r.assumed;
      rows.push_back(row);
    }
    j["runs"] = rows;
    auto groups = [](const std::map<std::string, std::array<io::ServeStats, io::kNumServeMetrics>>& g) {
      nlohmann::json out;
      for (const auto& [name, s] : g)
        for (int k = 0; k < io::kNumServeMetrics; ++k)
          if (s[k].runs) out[name][io::kServeMetricNames[k]] = {{"runs", s[k].runs}, {"mape_pct", s[k].mape}};
      return out;
    };
    nlohmann::json overall;
    for (int k = 0; k < io::kNumServeMetrics; ++k)
      overall[io::kServeMetricNames[k]] = {{"runs", rep.overall[k].runs}, {"mape_pct", rep.overall[k].mape}};
    j["summary"] = {{"overall", overall}, {"by_source", groups(rep.by_source)}, {"by_engine", groups(rep.by_engine)},
                    {"by_gpu", groups(rep.by_gpu)}, {"by_family", groups(rep.by_family)}};
    std::cout << j.dump(2) << "\n";
  }

  std::string runs_;
  bool json_ = false;
};

}  // namespace

std::unique_ptr<Command> make_serve_validate_command() { return std::make_unique<ServeValidateCommand>(); }

}  // namespace shardplan::cli
