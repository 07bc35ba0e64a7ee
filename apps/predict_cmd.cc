// shardplan predict: one plan's memory and time breakdown.
#include <iostream>

#include "apps/command.h"
#include "apps/offload_report.h"
#include "apps/plan_file.h"
#include "apps/plan_flags.h"
#include "apps/text.h"
#include "apps/report_table.h"
#include "apps/run_flags.h"
#include "modeler/evaluate.h"
#include "modeler/io/model_io.h"
#include "modeler/io/output.h"
#include "modeler/io/plan_json.h"
#include "modeler/problems.h"
#include "modeler/io/report_json.h"
#include "modeler/io/run_json.h"
#include "modeler/io/trace_json.h"
#include "modeler/io/validation_record_io.h"
#include "modeler/timeline.h"

namespace shardplan::cli {

namespace {

class PredictCommand final : public Command {
 public:
  CLI::App* setup(CLI::App& app) override {
    CLI::App* sub = app.add_subcommand("predict", "predict memory and step time of one plan");
    sub_ = sub;
    sub->add_option("--model", model_,
                    "model name from models/, a model YAML or a Hugging Face config.json (required without --plan)");
    sub->add_option("--plan", plan_file_,
                    "predict the plan of this JSON file (search --emit json, predict --json, or a plan object; "
                    "docs/plan-json.md): its model, system, framework and plan; each flag given beside it replaces "
                    "that field, and fields derived from a replaced one (dp, etp, sp) are derived again");
    add_system_flags(sub, &system_, false);
    add_plan_flags(sub, &plan_);
    add_run_flags(sub, &run_);
    sub->add_flag("--json", json_, "print the JSON report (schema_version 1)");
    sub->add_option("--trace", trace_,
                    "write the simulated step as Chrome/Perfetto trace JSON (ui.perfetto.dev) to FILE, or to standard "
                    "output with '-' (the report then goes to stderr)");
    sub->add_flag("--force", force_, "overwrite the --trace file if it exists (a symbolic link is written through)");
    return sub;
  }

  int run() override {
    const io::Output trace(trace_, force_);  // no --trace: no trace; "-": standard output
    const bool trace_stdout = !trace_.empty() && trace.to_stdout();
    if (trace_stdout && json_)
      throw ConfigError("--trace " + trace_ + " and --json would both write to standard output");
    if (!trace_.empty()) trace.check();  // before any work
    const io::ReportToStderr report_to_stderr(trace_stdout);
    std::optional<io::PlanFile> file;
    std::vector<std::string> overridden;
    if (!plan_file_.empty()) {
      file = io::load_plan_file(plan_file_);
      overridden = apply_plan_file(*file, *sub_, &model_, &system_, &plan_);
    } else if (model_.empty()) {
      throw ConfigError("give --model MODEL (or --plan FILE)");
    }
    const ModelDesc model = io::load_model(model_, /*allow_moe=*/true);
    const System sys = resolve_system(system_);
    const Framework& fw = resolve_framework(plan_.framework);
    const Plan plan = resolve_plan(plan_, sys);
    check_flags_fit(plan_, model, plan);
    const Estimate e = evaluate(model, sys, plan, fw);
    const bool invalid = e.time.compute.v <= 0;
    const RunSpec run_spec = resolve_run_spec(run_);
    std::optional<RunCost> run;
    if (wants_run(run_) && !invalid) run = run_cost_for(e, sys, model, fw, run_spec);
    // How far to trust the number: the validation record of the nearest published runs.
    const io::RecordQuote record = io::quote_record(io::load_shipped_record(), sys.gpu.name, fw.name);
    // And the range the measured throughput is expected in: from the profile's own fit (calibrate fit-runs), else
    // from that record.
    const std::optional<ThroughputInterval> interval =
        invalid ? std::nullopt : io::prediction_interval(e.tokens_per_s_per_gpu, sys, record);
    if (json_) {
      io::ReportContext ctx{"predict", model_, system_.system.empty() ? system_.gpu : system_.system, sys.gpu.name,
                            sys.gpus, fw.name, sys.provenance};
      nlohmann::json j = io::predict_json(ctx, e);
      if (run) j["run"] = io::run_json(*run, run_spec);
      j["model"] = io::model_json(model);
      j["inputs"] = io::inputs_json(plan_inputs(model_, system_, sys.gpus, fw.name));
      if (file) j["plan_file"] = io::plan_file_json(*file, overridden);
      j["validation_record"] = io::record_json(record);
      j["uncertainty"] = io::interval_json(interval);
      std::cout << j.dump(2) << "\n";
    } else {
      std::cout << "shardplan predict: " << model.name << " on " << sys.name << " (" << sys.gpus << " x "
                << sys.gpu.name << "), framework " << fw.name << "\n";
      if (file) {
        std::string replaced;
        for (const std::string& o : overridden) replaced += (replaced.empty() ? "" : " ") + o;
        std::cout << "plan from " << file->file << " (" << file->kind
                  << (file->shardplan_version.empty() ? "" : ", shardplan " + file->shardplan_version) << ")"
                  << (replaced.empty() ? "" : "; replaced by flags: " + replaced) << "\n";
      }
      std::cout << format_model(model) << "\n"
                << format_plan(plan, model.moe.has_value(), &fw) << format_finetune(plan, model);
      if (!invalid) {
        std::cout << "\n" << format_memory(e.memory) << "\n" << format_time(e.time) << "\n" << format_throughput(e)
                  << "trust: " << record.text << "\n";
        if (interval) std::cout << "expected range: " << interval->text << "\n";
        std::cout << format_offload(e, sys);
        if (run) std::cout << "\n" << format_run(*run, run_spec, sys.gpus);
        if (file && file->predicted)
          std::cout << "against the file: " << compare_with_file(*file->predicted, e) << "\n";
      }
    }
    if (!trace_.empty() && !invalid) {
      const std::string title = model.name + " on " + std::to_string(sys.gpus) + " x " + sys.gpu.name;
      trace.write(io::trace_json(build_timeline(e), title).dump() + "\n");
    }
    if (!e.feasible()) {
      std::cerr << (invalid ? "invalid plan:\n" : "plan does not fit:\n") << join_problems(e.problems) << "\n";
      return 2;
    }
    return 0;
  }

 private:
  CLI::App* sub_ = nullptr;
  std::string model_;
  std::string plan_file_;
  SystemFlags system_;
  PlanFlags plan_;
  RunFlags run_;
  bool json_ = false;
  std::string trace_;
  bool force_ = false;
};

}  // namespace

std::unique_ptr<Command> make_predict_command() { return std::make_unique<PredictCommand>(); }

}  // namespace shardplan::cli
