#include "modeler/io/validation_run.h"

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

ValidationReport run_validation(const std::vector<PublishedRun>& runs) {
  ValidationReport report;
  std::map<std::string, GpuProfile> gpus;
  for (const PublishedRun& run : runs) {
    RunResult r;
    r.run = &run;
    if (run.moe) {
      r.skipped = true;
      r.skip_reason = "MoE model: expert parallelism is not modelled yet";
      report.results.push_back(std::move(r));
      continue;
    }
    auto it = gpus.find(run.gpu);
    if (it == gpus.end()) it = gpus.emplace(run.gpu, load_gpu_profile(run.gpu)).first;
    const System sys = standard_system(it->second, run.system);
    const Framework* fw = find_framework(run.framework);
    r.resolution = fastest_fitting(run.model, sys, run.plan, *fw);
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
