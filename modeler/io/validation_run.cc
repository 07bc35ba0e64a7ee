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

void add(GroupStats* g, double abs_err_pct) {
  g->mape = (g->mape * g->runs + abs_err_pct) / (g->runs + 1);
  ++g->runs;
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
  base.provenance = calibrated.provenance;
  return base;
}

/// The framework profile a run used. The schema names the software, not its version: Megatron-LM runs published
/// before 2023 (Narayanan et al. 2021, Korthikanti et al. 2022) predate FlashAttention in Megatron-LM, so a
/// megatron-lm run whose source cites a paper ("et al. YYYY" or "et al. (YYYY)") from before 2023 uses the megatron-lm-legacy profile.
const Framework* framework_for(const PublishedRun& run) {
  const std::string cite = "et al. ";
  size_t at = run.source.find(cite);
  if (at != std::string::npos) at += cite.size();
  if (at != std::string::npos && at < run.source.size() && run.source[at] == '(') ++at;  // "et al. (2022)"
  if (run.framework == "megatron-lm" && at != std::string::npos && run.source.size() >= at + 4) {
    const std::string y = run.source.substr(at, 4);
    const bool year = std::all_of(y.begin(), y.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (year && std::stoi(y) < 2023) return find_framework("megatron-lm-legacy");
  }
  return find_framework(run.framework);
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
                                bool framework_defaults) {
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
    r.resolution = fastest_fitting(run.model, sys, plan, *fw, framework_defaults);
    // An unknown expert tensor-parallel size (null etp) is an open field like the others: Megatron-Core's default
    // (etp = tp) or no expert tensor parallelism (etp 1), whichever is the fastest that fits.
    if (run.moe && !run.etp && plan.plan.tp > 1) {
      OpenPlan alt = plan;
      alt.plan.etp = 1;
      Resolution r1 = fastest_fitting(run.model, sys, alt, *fw, framework_defaults);
      const Estimate& a = r1.estimate;
      const Estimate& b = r.resolution.estimate;
      const bool a_valid = a.time.compute.v > 0, b_valid = b.time.compute.v > 0;
      const bool take = a_valid && (!b_valid || (r1.fits && !r.resolution.fits) ||
                                    (r1.fits == r.resolution.fits && a.time.step() < b.time.step()));
      if (take) r.resolution = std::move(r1);
      r.resolution.chosen.push_back("etp=" + std::to_string(r.resolution.estimate.plan.etp));
    }
    const Estimate& e = r.resolution.estimate;
    if (e.time.compute.v <= 0) {
      r.skipped = true;
      r.skip_reason = "invalid plan: " + join_problems(e.problems);
      report.results.push_back(std::move(r));
      continue;
    }
    r.predicted_tokens_per_s_per_gpu = e.tokens_per_s_per_gpu;
    r.error_pct = 100.0 * (e.tokens_per_s_per_gpu - run.measured_tokens_per_s_per_gpu) / run.measured_tokens_per_s_per_gpu;
    const double abs_err = std::fabs(r.error_pct);
    add(&report.throughput, abs_err);
    add(&report.by_source[source_label(run.source)], abs_err);
    add(&report.by_framework[run.framework], abs_err);
    if (run.moe) add(&report.by_moe_model[run.model.name.empty() ? run.id : run.model.name], abs_err);
    if (run.measured_peak_memory_gib) {
      // Frameworks report torch.cuda.max_memory_reserved(): the allocator's peak, without the CUDA context.
      r.predicted_memory_gib = to_GiB(e.memory.allocator_reserved());
      r.memory_error_pct = 100.0 * (*r.predicted_memory_gib - *run.measured_peak_memory_gib) / *run.measured_peak_memory_gib;
      add(&report.memory, std::fabs(*r.memory_error_pct));
    }
    report.results.push_back(std::move(r));
  }
  return report;
}

}  // namespace shardplan::io
