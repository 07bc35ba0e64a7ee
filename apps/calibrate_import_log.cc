#include "apps/calibrate_import_log.h"

#include <cstdio>
#include <iostream>

#include "apps/text.h"
#include "calibrate/imported_run_yaml.h"
#include "modeler/io/model_io.h"
#include "modeler/io/output.h"
#include "modeler/io/published_runs.h"
#include "modeler/io/system_io.h"
#include "modeler/io/yaml_reader.h"
#include "modeler/problems.h"

namespace shardplan::cli {

namespace {

struct SystemFacts {
  std::string gpu;
  int gpus_per_node = 0;
};

/// --system: a cluster (hwprofiles/clusters name or file) or a GPU profile (hwprofiles/gpus name or file).
SystemFacts system_facts(const std::string& name) {
  try {
    const System s = io::load_system(name, 0);
    return {s.gpu.name, s.gpus_per_node};
  } catch (const ConfigError& cluster_error) {
    try {
      const io::GpuProfile g = io::load_gpu_profile(name);
      return {g.gpu.name, 0};
    } catch (const ConfigError&) {
      throw ConfigError(std::string(cluster_error.what()) + " (--system takes a cluster or a GPU profile)");
    }
  }
}

std::string num(double v, const char* f) {
  char buf[48];
  std::snprintf(buf, sizeof(buf), f, v);
  return buf;
}

}  // namespace

void ImportLogVerb::setup(CLI::App* calibrate) {
  app_ = calibrate->add_subcommand(
      "import-log",
      "Read training logs (Megatron-LM, NeMo, torchtitan, DeepSpeed, llm-foundry) into runs of the "
      "published-runs schema, for validate and fit-runs");
  app_->add_option("logs", files_, "Log files, one run each")->required()->check(CLI::ExistingFile);
  app_->add_option("--framework", framework_,
                   "Framework that wrote the logs: megatron, nemo (NeMo or Megatron-Bridge), torchtitan, deepspeed "
                   "(alone or under Megatron-DeepSpeed), llm-foundry")
      ->required();
  app_->add_option("--model", model_,
                   "Model (models/ name, YAML or config.json); default: the architecture the log states. Given, "
                   "it is checked against the log");
  app_->add_option("--system", system_, "Cluster or GPU profile the runs used (names system.gpu)")->required();
  app_->add_option("--gpus", gpus_, "GPUs of the run, for logs that do not state the world size (checked otherwise)")
      ->check(positive_number());
  app_->add_option("--seq", seq_, "Sequence length, for logs that do not state it (checked otherwise)")
      ->check(positive_number());
  app_->add_option("--warmup-steps", warmup_,
                   "Iterations after the first logged step that are warm-up too (the first logged step always is)")
      ->default_val(10)
      ->check(non_negative_number());
  app_->add_option("--id", id_, "Run id (one log only; default: the log file's name without its extension)");
  app_->add_option("--out", out_, "Runs file to write (YAML); default or '-': standard output");
  app_->add_flag("--force", force_, "Overwrite --out if it exists");
}

int ImportLogVerb::run() {
  const calibrate::LogFramework framework = calibrate::parse_log_framework(framework_);
  if (!id_.empty() && files_.size() > 1)
    throw ConfigError("--id: names one run; " + std::to_string(files_.size()) + " logs were given");
  const io::Output out(out_, force_);
  out.check();  // a refusal (file exists, no directory) comes before any reading
  const SystemFacts sys = system_facts(system_);
  std::optional<ModelDesc> given;
  if (!model_.empty()) given = io::load_model(model_, true);
  std::vector<calibrate::ImportedRun> runs;
  for (const std::string& file : files_) {
    const calibrate::ParsedLog log = calibrate::parse_log(framework, io::read_file(file), file);
    calibrate::ImportOptions o;
    std::optional<ModelDesc> hinted;
    if (given) {
      o.model = &*given;
      o.model_name = model_;
    } else if (log.settings.model_hint && !log.settings.layers) {
      // The log names a model (torchtitan's flavour) but not its dimensions: take that model from models/.
      hinted = io::load_model(log.settings.model_hint->value, true);
      o.model = &*hinted;
      o.model_name = log.settings.model_hint->value;
      std::cerr << file << ":" << log.settings.model_hint->line << ": model " << o.model_name
                << " (the log's model flavour; --model overrides)\n";
    }
    o.gpu = sys.gpu;
    o.gpus = gpus_;
    o.gpus_per_node = sys.gpus_per_node;
    o.seq_len = seq_;
    o.warmup_steps = warmup_;
    o.id = id_;
    calibrate::ImportedRun r = calibrate::build_run(log, o);
    for (const auto& prev : runs)
      if (prev.id == r.id) r.id += "_" + std::to_string(runs.size() + 1);
    std::cerr << file << ": " << r.framework << " run, " << r.gpus << " x " << r.gpu << ", tp " << r.tp << " pp "
              << r.pp << " vpp " << r.vpp << " cp " << r.cp << " dp " << r.dp << " zero " << r.zero << ", gbs "
              << r.global_batch << " x " << r.seq_len << "; " << r.warmup_dropped
              << " warm-up step record(s) dropped, median of " << r.steps_kept << ": step "
              << num(r.step_time_s, "%.4g") << " s, " << num(r.tokens_per_s_per_gpu, "%.0f") << " tokens/s/GPU"
              << (r.peak_memory_gib ? ", peak " + num(*r.peak_memory_gib, "%.1f") + " GiB" : std::string()) << "\n";
    runs.push_back(std::move(r));
  }
  const std::string text = calibrate::runs_yaml(runs);
  // What is written must be a runs file validate and fit-runs read.
  try {
    io::parse_published_runs(text, out.where());
  } catch (const ConfigError& e) {
    throw ConfigError(std::string("the imported runs do not form a valid runs file (") + e.what() +
                      "); nothing "
                      "written");
  }
  out.write(text);
  if (!out.to_stdout()) std::cerr << "wrote " << runs.size() << " run(s) to " << out.path() << "\n";
  return 0;
}

}  // namespace shardplan::cli
