#include "apps/run_flags.h"

#include <cmath>
#include <cstdlib>

#include "apps/report_table.h"
#include "apps/text.h"
#include "modeler/problems.h"

namespace shardplan::cli {

void add_run_flags(CLI::App* app, RunFlags* f) {
  app->add_option("--train-tokens", f->train_tokens,
                  "tokens to train (suffix K, M, B or T: 15.6T): reports wall-clock time, GPU-hours, cost, energy");
  app->add_option("--steps", f->steps, "optimizer steps to train (instead of --train-tokens)")
      ->check(positive_number());
  app->add_option("--gpu-hour-price", f->price, "price of one GPU-hour (any currency): reports the run's cost")
      ->check(non_negative_number());
  app->add_option("--pue", f->pue,
                  "facility power over IT power (default 1.10: Google's 2023 fleet PUE; industry average 1.58)");
  app->add_option("--node-overhead", f->node_overhead,
                  "node power over GPU board power: CPUs, memory, NICs, fans (default 1: GPU power only, as the "
                  "Llama 3.1 model card counts; DGX H100 at its 10.2 kW maximum is 1.82)");
  app->add_option("--gpu-power-w", f->gpu_power_w,
                  "board power per GPU under load (default: the profile's TDP, or --power-limit-w)")
      ->check(positive_number());
  app->add_option("--mtbf-hours", f->mtbf,
                  "mean time between job-interrupting failures per GPU, in hours, or 'llama3' (50,677 h: 419 "
                  "interruptions in 54 days on 16,384 H100s); models checkpoints, restarts and lost work");
  app->add_option("--restart-min", f->restart_min,
                  "minutes from a failure to training again (default 10, an assumption: detect, reschedule, load)")
      ->check(non_negative_number());
  app->add_option("--checkpoint-gbps", f->checkpoint_gbps,
                  "checkpoint write bandwidth per GPU in GB/s (default 0.122: Llama 3's 2 TB/s over 16,384 GPUs)")
      ->check(positive_number());
  app->add_option("--checkpoint-interval-min", f->checkpoint_interval_min,
                  "minutes of training between checkpoints (default: Daly's optimum for the MTBF)")
      ->check(positive_number());
  app->add_flag("--async-checkpoint", f->async_checkpoint,
                "asynchronous checkpoints: training stalls only to copy its shard to host memory");
}

void add_objective_flags(CLI::App* app, RunFlags* f) {
  app->add_option("--objective", f->objective,
                  "which GPU count's best plan to recommend: step (fastest step, default), time (shortest run), "
                  "cost (fewest GPU-hours), energy, gpus (fewest GPUs that fit); time, cost and energy need "
                  "--train-tokens or --steps")
      ->check(CLI::IsMember({"step", "time", "cost", "energy", "gpus"}));
  app->add_option("--max-gpus", f->max_gpus, "recommend only plans on at most this many GPUs")
      ->check(positive_number());
  app->add_option("--max-cost", f->max_cost, "recommend only runs costing at most this (needs --gpu-hour-price)")
      ->check(positive_number());
}

bool wants_run(const RunFlags& f) { return !f.train_tokens.empty() || f.steps.has_value(); }

double parse_token_count(const std::string& flag, const std::string& text) {
  char* end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  const std::string suffix = end ? std::string(end) : std::string();
  const double scale = suffix.empty()                      ? 1
                       : suffix == "K" || suffix == "k"    ? 1e3
                       : suffix == "M"                     ? 1e6
                       : suffix == "B" || suffix == "G"    ? 1e9
                       : suffix == "T"                     ? 1e12
                                                           : 0;
  if (end == text.c_str() || scale == 0 || !(v > 0) || !std::isfinite(v))
    throw ConfigError(flag + ": expected a positive token count such as 15.6T or 2e12, got '" + text + "'");
  return v * scale;
}

RunSpec resolve_run_spec(const RunFlags& f) {
  RunSpec s;
  if (!wants_run(f)) {
    const char* orphan = f.price            ? "--gpu-hour-price"
                         : f.pue            ? "--pue"
                         : f.node_overhead  ? "--node-overhead"
                         : f.gpu_power_w    ? "--gpu-power-w"
                         : !f.mtbf.empty()  ? "--mtbf-hours"
                         : f.restart_min    ? "--restart-min"
                         : f.checkpoint_gbps ? "--checkpoint-gbps"
                         : f.checkpoint_interval_min ? "--checkpoint-interval-min"
                         : f.async_checkpoint ? "--async-checkpoint"
                         : f.max_cost       ? "--max-cost"
                                            : nullptr;
    if (orphan) throw ConfigError(std::string(orphan) + " describes a run: give --train-tokens or --steps");
    return s;
  }
  if (!f.train_tokens.empty() && f.steps) throw ConfigError("--train-tokens and --steps are exclusive: give one");
  if (!f.train_tokens.empty()) s.train_tokens = parse_token_count("--train-tokens", f.train_tokens);
  if (f.steps) s.steps = *f.steps;
  if (f.price) s.gpu_hour_price = *f.price;
  if (f.pue) s.pue = *f.pue;
  if (f.node_overhead) s.node_overhead = *f.node_overhead;
  if (f.gpu_power_w) s.gpu_power_w = *f.gpu_power_w;
  if (!f.mtbf.empty()) {
    if (f.mtbf == "llama3") {
      s.mtbf_hours_per_gpu = kLlama3MtbfHoursPerGpu;
    } else {
      char* end = nullptr;
      s.mtbf_hours_per_gpu = std::strtod(f.mtbf.c_str(), &end);
      if (end == f.mtbf.c_str() || *end != '\0' || !(s.mtbf_hours_per_gpu > 0))
        throw ConfigError("--mtbf-hours: expected a positive number of hours or 'llama3', got '" + f.mtbf + "'");
    }
  }
  if (f.restart_min) s.restart = Seconds(*f.restart_min * 60);
  if (f.checkpoint_gbps) s.checkpoint_gbps_per_gpu = *f.checkpoint_gbps;
  if (f.checkpoint_interval_min) s.checkpoint_interval = Seconds(*f.checkpoint_interval_min * 60);
  s.async_checkpoint = f.async_checkpoint;
  if (f.max_cost && !f.price) throw ConfigError("--max-cost needs --gpu-hour-price");
  return s;
}

RunObjective resolve_objective(const RunFlags& f) {
  const auto o = parse_run_objective(f.objective);
  if (!o) throw ConfigError("--objective: unknown objective '" + f.objective + "'");
  if (needs_run(*o) && !wants_run(f))
    throw ConfigError("--objective " + f.objective + " ranks whole runs: give --train-tokens or --steps");
  return *o;
}

ObjectiveCaps resolve_caps(const RunFlags& f) {
  ObjectiveCaps c;
  if (f.max_gpus) c.max_gpus = *f.max_gpus;
  if (f.max_cost) c.max_cost = *f.max_cost;
  return c;
}

RunCost run_cost_for(const Estimate& e, const System& sys, const ModelDesc& model, const Framework& fw,
                     const RunSpec& spec) {
  return run_cost(e, sys, checkpoint_bytes(total_params(model), fw.state.weights, fw.state.optimizer), spec);
}

std::string format_duration(double s) {
  if (s >= 2 * 86400) return fmt("%.1f d", s / 86400);
  if (s >= 2 * 3600) return fmt("%.1f h", s / 3600);
  if (s >= 120) return fmt("%.1f min", s / 60);
  return fmt("%.2f s", s);
}

namespace {
/// 1234567 -> "1.23 M", for GPU-hours and money.
std::string si(double v) {
  if (v >= 1e12) return fmt("%.2f T", v / 1e12);
  if (v >= 1e9) return fmt("%.2f G", v / 1e9);
  if (v >= 1e6) return fmt("%.2f M", v / 1e6);
  if (v >= 1e4) return fmt("%.1f k", v / 1e3);
  return fmt("%.1f", v);
}
std::string energy(double kwh) {
  if (kwh >= 1e6) return fmt("%.2f GWh", kwh / 1e6);
  if (kwh >= 1e3) return fmt("%.1f MWh", kwh / 1e3);
  return fmt("%.1f kWh", kwh);
}
}  // namespace

std::string format_run(const RunCost& r, const RunSpec& spec, int gpus) {
  std::string s = "run: " + si(r.tokens) + " tokens = " + with_commas(r.steps) + " steps\n";
  s += "  time         " + format_duration(r.compute.v) + " of steps; " + format_duration(r.wall.v) + " wall-clock";
  s += r.goodput < 1 ? " with checkpoints and failures (goodput " + fmt("%.1f%%", 100 * r.goodput) + ")\n" : "\n";
  s += "  GPU-hours    " + si(r.gpu_hours) + " on " + with_commas(gpus) + " GPUs";
  s += spec.gpu_hour_price > 0 ? "; cost " + si(r.cost) + " at " + fmt("%.2f", spec.gpu_hour_price) + " per GPU-hour\n"
                               : " (give --gpu-hour-price for the cost)\n";
  if (r.gpu_power_w > 0) {
    s += "  energy       " + energy(r.facility_energy_kwh) + " facility = " + energy(r.it_energy_kwh) + " IT x PUE " +
         fmt("%.2f", spec.pue) + " (" + fmt("%.0f W", r.gpu_power_w) + " per GPU x node overhead " +
         fmt("%.2f", spec.node_overhead) + ")\n";
  } else {
    s += "  energy       unknown: the GPU profile states no TDP (give --gpu-power-w)\n";
  }
  if (r.failures_modelled) {
    s += "  failures     system MTBF " + format_duration(r.system_mtbf.v) + " (" +
         with_commas(spec.mtbf_hours_per_gpu) + " h per GPU / " + with_commas(gpus) + "): " +
         fmt("%.0f", r.expected_failures) + " expected interruptions, " + format_duration(spec.restart.v) +
         " each to restart\n";
  }
  if (r.failures_modelled || spec.checkpoint_interval) {
    s += "  checkpoints  " + fmt("%.2f TB", r.checkpoint_bytes.v / 1e12) + " every " +
         format_duration(r.checkpoint_interval.v) + " of training" +
         (spec.checkpoint_interval ? "" : " (Daly's optimum)") + "; stall " +
         format_duration(r.checkpoint_blocking.v) + (spec.async_checkpoint ? " (async), write " : ", write ") +
         format_duration(r.checkpoint_write.v) + " at " + fmt("%.3f", spec.checkpoint_gbps_per_gpu) + " GB/s per GPU\n";
  }
  return s;
}

}  // namespace shardplan::cli
