// libFuzzer target: a plan file (docs/plan-json.md: an emitted plan, a predict report or a bare plan object) read
// as predict --plan reads it: parsed, applied to predict's flag table with no flag given, resolved and checked
// against the model, then evaluated. Besides the common findings, a plan that resolves must come back unchanged
// through its own plan object (plan_json, the reader and the flags again): a file shardplan writes for a plan it
// accepted must be one it reads back as the same plan.
#include "apps/plan_file.h"
#include "modeler/io/plan_json.h"
#include "modeler/io/report_json.h"
#include "tests/fuzz/fuzz_common.h"

namespace {

using namespace shardplan;

/// The file applied as predict --plan FILE applies it, with the model and system pinned to the reference ones
/// (the fuzzer must not make the target load files by the names it writes); the file's framework stays.
struct Resolved {
  Plan plan;
  std::string framework;
};
Resolved resolve(const io::PlanFile& parsed, const ModelDesc& model) {
  io::PlanFile file = parsed;
  const std::string framework = parsed.inputs && !parsed.inputs->framework.empty() ? parsed.inputs->framework
                                                                                  : parsed.framework.value_or("");
  file.inputs = io::PlanInputs{"reference", framework, "dgx-h100", "", fuzz::reference_system().gpus, 0, 0, 0, 0};
  CLI::App app;
  std::string model_name;
  cli::SystemFlags system;
  cli::PlanFlags flags;
  app.add_option("--model", model_name);
  cli::add_system_flags(&app, &system, false);
  cli::add_plan_flags(&app, &flags);
  app.parse(std::vector<std::string>{});
  cli::apply_plan_file(file, app, &model_name, &system, &flags);
  const Plan p = cli::resolve_plan(flags, fuzz::reference_system());
  cli::check_flags_fit(flags, model, p);
  return {p, flags.framework};
}

/// llama-3-8b, or Mixtral 8x7B for plans with MoE settings (a dense model refuses them).
const ModelDesc& model_for(const io::PlanFields& f) {
  static const ModelDesc moe = io::load_model("mixtral-8x7b");
  const bool wants_moe = (f.ep && *f.ep > 1) || (f.etp && f.tp && *f.etp != *f.tp) || f.moe_dispatcher ||
                         (f.moe_max_nodes && *f.moe_max_nodes > 0) || f.moe_fp8_dispatch.value_or(false) ||
                         f.ep_comm_overlap.value_or(false) || (f.capacity_factor && *f.capacity_factor > 0) ||
                         (f.moe_imbalance && *f.moe_imbalance != 1.0);
  return wants_moe ? moe : fuzz::reference_model();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return fuzz::guarded([&] {
    const io::PlanFile file = io::parse_plan_json(fuzz::as_text(data, size), "plan.json");
    (void)io::plan_file_json(file, {}).dump();  // what predict --json records of it
    const ModelDesc& model = model_for(file.plan);
    const Resolved r = resolve(file, model);
    const std::string written = io::plan_json(r.plan).dump();
    try {
      io::PlanFile again = io::parse_plan_json(written, "again.json");
      again.framework = r.framework;  // a bare plan object names none
      const std::string rewritten = io::plan_json(resolve(again, model).plan).dump();
      if (rewritten != written) fuzz::finding("a plan changed through its own file: " + written + " -> " + rewritten);
    } catch (const ConfigError& e) {
      fuzz::finding(std::string("the file of an accepted plan is refused: ") + e.what() + " in " + written);
    }
    const Estimate e = evaluate(model, fuzz::reference_system(), r.plan, cli::resolve_framework(r.framework));
    if (e.time.compute.v > 0) fuzz::check_estimate(e);
  });
}
