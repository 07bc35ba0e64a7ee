#include "modeler/io/validation_run.h"

#include <algorithm>
#include <cctype>
#include <cmath>

#include "modeler/evaluate.h"
#include "modeler/framework.h"

namespace shardplan::io {

std::string source_label(const std::string& source) {
  size_t cut = source.find(" (");
  cut = std::min(cut, source.find(','));
  return source.substr(0, cut);
}

namespace {

void add(GroupStats* g, double err_pct) {
  g->mape = (g->mape * g->runs + std::fabs(err_pct)) / (g->runs + 1);
  g->bias = (g->bias * g->runs + err_pct) / (g->runs + 1);
  ++g->runs;
}

Bracket merge_brackets(const Resolution& a, const Resolution& b) {
  if (a.bracket.settings == 0 || (b.fits && !a.fits)) return b.bracket;
  if (b.bracket.settings == 0 || (a.fits && !b.fits)) return a.bracket;
  Bracket m;
  m.best_tokens_per_s_per_gpu = std::max(a.bracket.best_tokens_per_s_per_gpu, b.bracket.best_tokens_per_s_per_gpu);
  m.worst_tokens_per_s_per_gpu = std::min(a.bracket.worst_tokens_per_s_per_gpu, b.bracket.worst_tokens_per_s_per_gpu);
  m.settings = a.bracket.settings + b.bracket.settings;
  return m;
}


}  // namespace

System apply_calibration(System base, const System& calibrated) {
  base.gpu.eff = calibrated.gpu.eff;
  for (Tier& t : base.tiers)
    for (const Tier& c : calibrated.tiers)
      if (c.name == t.name) {
        t.latency = c.latency;
        t.busbw_eff = c.busbw_eff;
        t.p2p_eff = c.p2p_eff;
        t.busbw_eff_by = c.busbw_eff_by;
      }
  base.overlap_efficiency = calibrated.overlap_efficiency;  // fitted by calibrate fit-runs, 1 and 0 otherwise
  base.host_layer_pass = calibrated.host_layer_pass;
  base.memory_reserve = calibrated.memory_reserve;
  base.provenance = calibrated.provenance;
  return base;
}

/// The framework profile a run used: by the release it states or, without one, its publication date
/// (select_framework), never by the wording of its source.
const Framework* framework_for(const PublishedRun& run) {
  return select_framework(run.framework, run.framework_version, run.date);
}

System run_system(const GpuProfile& gpu, const PublishedRun& run) {
  StandardSystemOptions opts = run.system;
  opts.power_limit_w = run.power_limit_w.value_or(0);
  return standard_system(gpu, opts);
}

OpenPlan run_plan(const PublishedRun& run) {
  OpenPlan plan = run.plan;
  // The run ran: a split that pp x vpp does not divide was uneven.
  plan.plan.uneven_pipeline = run.model.layers % (plan.plan.pp * plan.plan.vpp) != 0;
  return plan;
}

ValidationReport run_validation(const std::vector<PublishedRun>& runs, const System* calibrated,
                                bool fastest_fit) {
  ValidationReport report;
  std::map<std::string, GpuProfile> gpus;
  for (const PublishedRun& run : runs) {
    RunResult r;
    r.run = &run;
    auto it = gpus.find(run.gpu);
    if (it == gpus.end()) it = gpus.emplace(run.gpu, load_gpu_profile(run.gpu)).first;
    System sys = run_system(it->second, run);
    if (calibrated && calibrated->gpu.name == run.gpu) sys = apply_calibration(std::move(sys), *calibrated);
    const Framework* fw = framework_for(run);
    r.framework = fw->name;
    const OpenPlan plan = run_plan(run);
    r.resolution = fastest_fitting(run.model, sys, plan, *fw, fastest_fit);
    // An unknown expert tensor-parallel size (null etp) is an open field like the others: Megatron-Core's default
    // (etp = tp) or no expert tensor parallelism (etp 1), whichever is the fastest that fits.
    if (run.moe && !run.etp && plan.plan.tp > 1) {
      OpenPlan alt = plan;
      alt.plan.etp = 1;
      Resolution r1 = fastest_fitting(run.model, sys, alt, *fw, fastest_fit);
      const Estimate& a = r1.estimate;
      const Estimate& b = r.resolution.estimate;
      const bool a_valid = a.time.compute.v > 0, b_valid = b.time.compute.v > 0;
      const bool take = a_valid && (!b_valid || (r1.fits && !r.resolution.fits) ||
                                    (r1.fits == r.resolution.fits && a.time.step() < b.time.step()));
      // The bracket spans both etp settings (only the fitting side when one of them does not fit).
      const Bracket both = merge_brackets(r.resolution, r1);
      if (take) r.resolution = std::move(r1);
      r.resolution.bracket = both;
      r.resolution.chosen.push_back("etp=" + std::to_string(r.resolution.estimate.plan.etp) + " (fastest that fits)");
      r.resolution.choices.push_back({"etp", std::to_string(r.resolution.estimate.plan.etp), "fastest that fits"});
    }
    const Estimate& e = r.resolution.estimate;
    if (e.time.compute.v <= 0) {
      r.skipped = true;
      r.skip_reason = "invalid plan: " + join_problems(e.problems);
      report.results.push_back(std::move(r));
      continue;
    }
    r.predicted_tokens_per_s_per_gpu = e.tokens_per_s_per_gpu;
    r.error_pct =
        100.0 * (e.tokens_per_s_per_gpu - run.measured_tokens_per_s_per_gpu) / run.measured_tokens_per_s_per_gpu;
    const double measured = run.measured_tokens_per_s_per_gpu;
    const Bracket& b = r.resolution.bracket;
    r.best_error_pct = b.settings ? 100.0 * (b.best_tokens_per_s_per_gpu - measured) / measured : r.error_pct;
    r.worst_error_pct = b.settings ? 100.0 * (b.worst_tokens_per_s_per_gpu - measured) / measured : r.error_pct;
    const double err = r.error_pct;
    add(&report.throughput, err);
    add(&report.by_source[source_label(run.source)], err);
    add(&report.by_framework[run.framework], err);
    add(&report.by_gpu[run.gpu], err);
    add(&report.by_precision[run.precision_name], err);
    add(&report.by_generation_framework[gpu_generation(run.gpu) + " " + framework_family(fw->name)], err);
    if (run.moe) add(&report.by_moe_model[run.model.name.empty() ? run.id : run.model.name], err);
    if (run.measured_peak_memory_gib) {
      // Frameworks report torch.cuda.max_memory_reserved(): the allocator's peak, without the CUDA context.
      r.predicted_memory_gib = to_GiB(e.memory.allocator_reserved());
      r.memory_error_pct =
          100.0 * (*r.predicted_memory_gib - *run.measured_peak_memory_gib) / *run.measured_peak_memory_gib;
      add(&report.memory, *r.memory_error_pct);
    }
    report.results.push_back(std::move(r));
  }
  return report;
}

}  // namespace shardplan::io
