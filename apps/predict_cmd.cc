// shardplan predict: one plan's memory and time breakdown.
#include <iostream>

#include "apps/command.h"
#include "apps/plan_flags.h"
#include "apps/report_table.h"
#include "modeler/evaluate.h"
#include "modeler/io/model_io.h"
#include "modeler/io/output.h"
#include "modeler/problems.h"
#include "modeler/io/report_json.h"
#include "modeler/io/trace_json.h"
#include "modeler/timeline.h"

namespace shardplan::cli {

namespace {

class PredictCommand final : public Command {
 public:
  CLI::App* setup(CLI::App& app) override {
    CLI::App* sub = app.add_subcommand("predict", "predict memory and step time of one plan");
    sub->add_option("--model", model_, "model name from models/, a model YAML or a Hugging Face config.json")
        ->required();
    add_system_flags(sub, &system_, false);
    add_plan_flags(sub, &plan_);
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
    const ModelDesc model = io::load_model(model_, /*allow_moe=*/true);
    const System sys = resolve_system(system_);
    const Framework& fw = resolve_framework(plan_.framework);
    const Plan plan = resolve_plan(plan_, sys);
    const Estimate e = evaluate(model, sys, plan, fw);
    const bool invalid = e.time.compute.v <= 0;
    if (json_) {
      io::ReportContext ctx{"predict", model_, system_.system.empty() ? system_.gpu : system_.system, sys.gpu.name,
                            sys.gpus, fw.name, sys.provenance};
      std::cout << io::predict_json(ctx, e).dump(2) << "\n";
    } else {
      std::cout << "shardplan predict: " << model.name << " on " << sys.name << " (" << sys.gpus << " x "
                << sys.gpu.name << "), framework " << fw.name << "\n"
                << format_plan(plan, model.moe.has_value());
      if (!invalid) {
        std::cout << "\n" << format_memory(e.memory) << "\n" << format_time(e.time) << "\n" << format_throughput(e);
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
  std::string model_;
  SystemFlags system_;
  PlanFlags plan_;
  bool json_ = false;
  std::string trace_;
  bool force_ = false;
};

}  // namespace

std::unique_ptr<Command> make_predict_command() { return std::make_unique<PredictCommand>(); }

}  // namespace shardplan::cli
