#include "apps/calibrate_fit_runs.h"

#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>


#include "apps/text.h"
#include "calibrate/fit_runs.h"
#include "calibrate/fit_runs_profile.h"
#include "modeler/io/atomic_write.h"
#include "modeler/io/published_runs.h"
#include "modeler/io/system_io.h"
#include "modeler/problems.h"

namespace shardplan::cli {

namespace {

namespace fs = std::filesystem;

void print_report(const calibrate::RunsFit& fit) {
  std::printf("fitted parameters (prior -> fitted [95%% interval], share of the estimate from the runs):\n");
  for (const auto& v : fit.params)
    std::printf("  %-26s %8.4g -> %8.4g [%.4g, %.4g] %3.0f%%%s\n", v.ref.label().c_str(), v.prior, v.value, v.lo95,
                v.hi95, 100 * v.data_share, v.at_bound ? "  AT ITS BOUND" : "");
  if (fit.memory_reserve_gib)
    std::printf("  %-26s %8.4g -> %8.4g [%.4g, %.4g] from %d runs with a measured peak\n", "memory_reserve_gib", 0.0,
                *fit.memory_reserve_gib, fit.memory_lo95, fit.memory_hi95, fit.memory_runs);
  for (const auto& n : fit.not_fitted) std::printf("  not fitted: %s\n", n.c_str());
  std::printf("\n%-52s %12s %12s %8s %12s %8s %8s\n", "run", "measured", "base", "error", "fitted", "error",
              "LOO err");
  std::printf("%-52s %12s %12s %8s %12s %8s %8s\n", "", "(tok/s/GPU)", "(tok/s/GPU)", "(%)", "(tok/s/GPU)", "(%)",
              "(%)");
  for (const auto& r : fit.rows) {
    char loo[16] = "-";
    if (const auto e = r.loo_error_pct()) std::snprintf(loo, sizeof loo, "%+.1f", *e);
    std::printf("%-52s %12.1f %12.1f %+8.1f %12.1f %+8.1f %8s\n", r.run->id.c_str(), r.measured, r.base_predicted,
                r.base_error_pct(), r.fitted_predicted, r.error_pct(), loo);
  }
  std::printf("\nthroughput MAPE %.1f%% on the base, %.1f%% fitted, %.1f%% leave-one-out over %zu runs\n",
              fit.base_mape, fit.fit_mape, fit.loo_mape, fit.rows.size());
}

/// A --base given as a file path is written as an absolute path, so the profile loads from any directory.
std::string inherits_ref(const std::string& base) {
  return fs::exists(base) && fs::is_regular_file(base) ? fs::absolute(base).string() : base;
}

}  // namespace

CLI::App* add_fit_runs_subcommand(CLI::App* calibrate, FitRunsFlags* f) {
  CLI::App* sub = calibrate->add_subcommand(
      "fit-runs", "Fit a few physical parameters (GEMM, attention, HBM and bus-bandwidth scales, overlap, per-kernel "
                  "overhead, memory reserve) to measured training runs and write a profile inheriting --base");
  sub->add_option("runs", f->runs, "measured runs in the published-runs schema (docs/design.md; calibrate import-log)")
      ->required();
  sub->add_option("--base", f->base, "cluster the runs ran on and the profile inherits (name or path): the priors")
      ->required();
  sub->add_option("--out", f->out, "profile to write (YAML); it is named after the file")->required();
  sub->add_flag("--force", f->force, "overwrite --out if it exists");
  sub->add_flag("--accept-anyway", f->accept_anyway,
                "write the profile although the runs need a parameter outside its physical range (it is pinned at "
                "the range's end); recorded in its provenance");
  return sub;
}

int run_fit_runs(const FitRunsFlags& f) {
  if (f.out.empty() || f.out == "-")
    throw ConfigError("--out: a calibrated profile needs a file name (the profile is named after it)");
  io::check_destination(f.out, f.force);
  const System base = io::load_system(f.base, 0);
  if (!base.fit_loo_errors_pct.empty())
    throw ConfigError("--base " + f.base + " was itself written by calibrate fit-runs: fit from the profile it "
                      "inherits, with all the runs (its scales would not compound)");
  const std::vector<io::PublishedRun> runs = io::load_published_runs(f.runs);
  if (runs.empty()) throw ConfigError(f.runs + ": no runs");
  std::string others;
  for (const auto& r : runs)
    if (r.gpu != base.gpu.name)
      others += "\n  " + f.runs + ":" + std::to_string(r.line) + ": run " + r.id + " ran on " + r.gpu;
  if (!others.empty())
    throw ConfigError("--base " + f.base + " is a cluster of " + base.gpu.name + "; these runs are not:" + others);
  const io::GpuProfile gpu = io::load_gpu_profile(base.gpu.name);
  std::vector<calibrate::RunCase> cases;
  for (const auto& r : runs) cases.push_back({&r, calibrate::run_case_system(r, gpu, &base)});
  calibrate::FitOptions opt;
  opt.accept_anyway = f.accept_anyway;
  const calibrate::RunsFit fit = calibrate::fit_runs(cases, opt);
  std::string reasons;
  for (const auto& o : fit.out_of_range) reasons += "\n  " + o;
  if (!fit.out_of_range.empty() && !f.accept_anyway)
    throw ConfigError("fit to " + f.runs + " refused, " + f.out + " not written: the runs need a parameter outside "
                      "its physical range (modeler/fit_parameters.h):" + reasons +
                      "\nif the runs are right (and not of another configuration), pass --accept-anyway (the "
                      "parameter is pinned at its range's end; recorded in the profile's provenance)");
  print_report(fit);
  if (!fit.out_of_range.empty())
    std::cerr << "warning: writing " << f.out << " despite (--accept-anyway):" << reasons << "\n";
  calibrate::FitRunsProfileSpec spec;
  spec.name = fs::path(f.out).stem().string();
  spec.inherits = inherits_ref(f.base);
  spec.runs_file = f.runs;
  spec.date = utc_date_today();
  spec.accepted_despite = fit.out_of_range;
  const std::string text = calibrate::emit_fit_runs_profile(spec, fit);
  try {
    io::parse_cluster(text, f.out, 0);
  } catch (const ConfigError& e) {
    throw ConfigError("the fit gives a profile that does not load (" + std::string(e.what()) + "); " + f.out +
                      " not written");
  }
  io::write_file_atomic(f.out, text, f.force);
  std::cout << "wrote " << f.out << " (inherits " << f.base << ")\n";
  return 0;
}

}  // namespace shardplan::cli
