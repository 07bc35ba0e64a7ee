// `shardplan calibrate run | fit | import-nccl-tests | import-log | fit-runs`: measure a cluster, fit its cost
// tables, write a profile that inherits the base cluster (calibrate/README.md).
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <sstream>

#include "apps/calibrate_import_log.h"
#include "apps/calibrate_fit_runs.h"
#include "apps/calibrate_tables.h"
#include "apps/command.h"
#include "apps/text.h"
#include "calibrate/fit.h"
#include "calibrate/measurements.h"
#include "calibrate/nccl_tests_log.h"
#include "calibrate/plausibility.h"
#include "calibrate/profile_writer.h"
#include "calibrate/runner.h"
#include "modeler/io/atomic_write.h"
#include "modeler/io/system_io.h"
#include "modeler/io/yaml_reader.h"
#include "modeler/problems.h"

namespace shardplan::cli {
namespace {

namespace fs = std::filesystem;
using calibrate::Measurement;

std::string percent(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f%%", 100 * v);
  return buf;
}

/// A --base given as a file path is written as an absolute path, so the profile loads from any directory.
std::string inherits_ref(const std::string& base) {
  return fs::exists(base) && fs::is_regular_file(base) ? fs::absolute(base).string() : base;
}

std::string residual_summary(const calibrate::Fit& fit, const System& base) {
  std::string s;
  const auto add = [&](const std::string& what, const calibrate::Residuals& r) {
    s += (s.empty() ? "" : "; ") + what + " " + std::to_string(r.rows) + " rows median " + percent(r.median_rel) +
         " max " + percent(r.max_rel);
  };
  for (const auto& [what, r] : fit.gpu.res) add(what, r);
  for (const auto& t : fit.tiers) add("tier " + base.tiers[static_cast<size_t>(t.tier)].name, t.res);
  return s;
}

void print_report(const calibrate::Fit& fit, const System& base, std::ostream& os) {
  os << "fit residuals (|predicted - measured| / measured on the fitted rows):\n";
  for (const auto& [what, r] : fit.gpu.res)
    os << "  " << what << ": " << r.rows << " rows, median " << percent(r.median_rel) << ", max "
       << percent(r.max_rel) << "\n";
  if (fit.gpu.kernel_overhead_s) os << "  kernel overhead: " << *fit.gpu.kernel_overhead_s * 1e6 << " us\n";
  for (const auto& t : fit.tiers) {
    const Tier& tier = base.tiers[static_cast<size_t>(t.tier)];
    os << "  tier " << tier.name << ": latency " << t.ab.alpha_s * 1e6 << " us per step, bus bandwidth "
       << t.ab.bw_Bps / 1e9 << " GB/s (" << percent(t.ab.bw_Bps / tier.bw_per_gpu.v) << " of "
       << tier.bw_per_gpu.v / 1e9 << "), " << t.res.rows << " rows, median " << percent(t.res.median_rel) << ", max "
       << percent(t.res.max_rel) << "\n";
  }
  for (const auto& n : fit.gpu.notes) os << "  note: " << n << "\n";
}

std::string join(const std::vector<std::string>& v, const std::string& sep) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : sep) + x;
  return s;
}

/// The destination of a profile, checked before any reading or fitting.
void check_profile_out(const std::string& out, bool force) {
  if (out.empty() || out == "-")
    throw ConfigError("--out: a calibrated profile needs a file name (the profile is named after it)");
  io::check_destination(out, force);
}

/// Fits, refuses an implausible fit (calibrate/plausibility.h) unless `accept_anyway`, checks that the profile
/// loads, and writes it. `reasons` holds the refusals found before fitting (GPU, hosts).
int fit_and_write(const std::vector<Measurement>& rows, const std::vector<std::string>& contexts,
                  const std::string& what, const System& base, const std::string& base_name, const std::string& out,
                  bool force, std::vector<std::string> reasons, bool accept_anyway) {
  const std::string source = "calibration " + utc_date_today() + " (" + what + ")";
  const calibrate::Fit fit = calibrate::fit_all(rows, base, source);
  print_report(fit, base, std::cout);
  for (auto& r : calibrate::implausible_fit(fit, base)) reasons.push_back(std::move(r));
  calibrate::ProfileSpec spec;
  spec.name = fs::path(out).stem().string();
  spec.inherits = inherits_ref(base_name);
  spec.source = source;
  spec.provenance = "calibrated " + utc_date_today() + " from " + what + "; " + std::to_string(rows.size()) + " rows";
  for (const auto& c : contexts) spec.provenance += "; " + c;
  spec.provenance += "; residuals: " + residual_summary(fit, base);
  if (!reasons.empty()) {
    if (!accept_anyway)
      throw ConfigError("calibration from " + what + " refused, " + out + " not written:\n  " + join(reasons, "\n  ") +
                        "\nif the measurements are right, pass --accept-anyway (it is recorded in the profile's "
                        "provenance)");
    std::cerr << "warning: writing " << out << " despite (--accept-anyway):\n  " << join(reasons, "\n  ") << "\n";
    spec.provenance += "; ACCEPTED WITH --accept-anyway DESPITE: " + join(reasons, "; ");
  }
  const std::string text = calibrate::emit_profile(spec, base, fit);
  try {
    io::parse_cluster(text, out, 0);
  } catch (const ConfigError& e) {
    throw ConfigError("calibration from " + what + " gives a profile that does not load (" + e.what() + "); " + out +
                      " not written");
  }
  io::write_file_atomic(out, text, force);
  std::cout << "wrote " << out << " (inherits " << base_name << ")\n";
  return 0;
}

class CalibrateCommand final : public Command {
 public:
  CLI::App* setup(CLI::App& app) override {
    cmd_ = app.add_subcommand("calibrate", "Measure a cluster, fit its cost tables, write a profile");
    cmd_->require_subcommand(1);

    run_ = cmd_->add_subcommand("run", "Run the microbenchmarks, appending JSON lines to --out (resumable)");
    run_->add_option("--benchmarks", benchmarks_, "Comma list of gemm,attention,memory,collectives")
        ->delimiter(',')
        ->default_str("gemm,attention,memory,collectives");
    run_->add_option("--launcher", launcher_, "Prefix for the collective benchmark, e.g. \"mpirun -np 16 -H a:8,b:8\"");
    run_->add_option("--backend", backend_, "Collective backend: nccl (GPU) or mpi (host buffers)")
        ->check(CLI::IsMember({"nccl", "mpi"}));
    run_->add_option("--bench-dir", bench_dir_,
                     "Directory of the shardplan_bench_* binaries (default: next to shardplan)");
    run_->add_option("--bench-args", bench_args_, "Extra flags for every benchmark, e.g. \"--max-bytes 1G\"");
    run_->add_option("--out", out_, "JSON-lines file; rows already in it are skipped")->required();

    fit_ = cmd_->add_subcommand("fit", "Fit cost tables from JSON lines and write a cluster profile");
    fit_->add_option("raw", inputs_, "JSON-lines files from `calibrate run`")->required()->check(CLI::ExistingFile);
    fit_->add_option("--base", base_, "Cluster the profile inherits (name in hwprofiles/clusters or a path)");
    fit_->add_option("--gpu-tables", gpu_tables_,
                     "Write the tables file of this GPU (hwprofiles/tables format: GEMM grids, attention, "
                     "scale-up collectives) instead of a cluster profile");
    fit_->add_option("--out", out_, "Profile to write (YAML)")->required();
    fit_->add_flag("--force", force_, "Overwrite --out if it exists (a symbolic link is written through)");
    fit_->add_flag("--accept-anyway", accept_anyway_,
                   "Write the profile although a check refuses it (efficiency above line rate, large fit error, "
                   "another GPU); recorded in its provenance");

    fit_runs_ = add_fit_runs_subcommand(cmd_, &fit_runs_flags_);

    aic_ = cmd_->add_subcommand("import-aic", "Convert NVIDIA AIConfigurator's measured kernels to JSON lines");
    aic_->add_option("dir", aic_dir_,
                     "Directory with gemm.csv, attention_prefill.csv, nccl.csv (e.g. hwprofiles/measured)")
        ->required();
    aic_->add_option("--gpu", aic_gpu_, "GPU profile the rows are for (e.g. h100-sxm5-80gb)")->required();
    aic_->add_option("--aic-system", aic_system_, "AIC system name (default: the one of --gpu, e.g. h100_sxm)");
    aic_->add_option("--out", aic_out_, "JSON-lines file to write")->required();
    aic_->add_flag("--force", aic_force_, "Overwrite --out if it exists");

    import_ = cmd_->add_subcommand("import-nccl-tests", "Fit one tier from nccl-tests text logs");
    import_->add_option("logs", inputs_, "nccl-tests output files")->required()->check(CLI::ExistingFile);
    import_->add_option("--base", base_, "Cluster the profile inherits")->required();
    import_->add_option("--tier", tier_,
                        "Tier the logs measured (name from the base cluster, e.g. nvlink); default: inferred from the "
                        "hosts of the log's ranks");
    import_->add_option("--ranks", ranks_, "Rank count, for logs that list no devices");
    import_->add_option("--out", out_, "Profile to write (YAML)")->required();
    import_->add_flag("--force", force_, "Overwrite --out if it exists (a symbolic link is written through)");
    import_->add_flag("--accept-anyway", accept_anyway_,
                      "Write the profile although a check refuses it (efficiency above line rate, large fit error, "
                      "another GPU, hosts that do not match --tier); recorded in its provenance");
    import_log_.setup(cmd_);  // apps/calibrate_import_log.cc
    return cmd_;
  }

  int run() override {
    if (import_log_.parsed()) return import_log_.run();
    if (run_->parsed()) return do_run();
    if (fit_runs_->parsed()) return run_fit_runs(fit_runs_flags_);
    if (aic_->parsed()) return import_aic(aic_dir_, aic_gpu_, aic_system_, aic_out_, aic_force_);
    if (fit_->parsed()) {
      if (!gpu_tables_.empty()) {
        if (!base_.empty()) throw ConfigError("calibrate fit: --base and --gpu-tables exclude each other");
        return fit_gpu_tables(inputs_, gpu_tables_, out_, force_);
      }
      if (base_.empty()) throw ConfigError("calibrate fit: --base is required (or --gpu-tables)");
      return do_fit();
    }
    return do_import();
  }

 private:
  int do_run() {
    calibrate::check_append_target(out_);
    calibrate::RunOptions o;
    o.benchmarks = benchmarks_.empty() ? std::vector<std::string>{"gemm", "attention", "memory", "collectives"}
                                       : benchmarks_;
    o.launcher = launcher_;
    o.out = out_;
    o.bench_dir = bench_dir_.empty() ? self_dir() : bench_dir_;
    o.collective_backend = backend_.empty() ? (fs::exists(o.bench_dir + "/shardplan_bench_nccl") ? "nccl" : "mpi")
                                            : backend_;
    std::istringstream extra(bench_args_);
    for (std::string a; extra >> a;) o.extra_args.push_back(a);
    for (const auto& b : o.benchmarks) {
      const std::string binary = o.bench_dir + "/" + calibrate::benchmark_binary(b, o);
      if (!fs::exists(binary))
        throw ConfigError(binary + ": benchmark not built (the CUDA benchmarks need nvcc; the collectives need MPI)");
    }
    if (const long long cut = calibrate::trim_partial_last_line(out_); cut > 0)
      std::cerr << "calibrate run: " << out_ << " ended in a partial line (" << cut
                << " bytes, cut by an interrupted run); removed it before appending\n";
    for (const auto& b : o.benchmarks) {
      const std::string command = calibrate::benchmark_command(b, o);
      std::cerr << "running: " << command << "\n";
      std::string error;
      const int status = calibrate::run_appending(command, out_, &error);
      if (status != 0) {
        std::cerr << "calibrate run: " << (error.empty() ? b + " exited with status " + std::to_string(status) : error)
                  << "; rows measured so far are in " << out_ << " and a re-run resumes after them\n";
        return 1;
      }
    }
    std::cout << "measurements in " << out_ << "; next: shardplan calibrate fit " << out_
              << " --base CLUSTER --out PROFILE.yaml\n";
    return 0;
  }

  int do_fit() {
    check_profile_out(out_, force_);
    const System base = io::load_system(base_, 0);
    std::vector<Measurement> rows;
    std::vector<std::string> contexts;
    std::vector<calibrate::DeviceSeen> devices;
    std::string what;
    for (const auto& file : inputs_) {
      auto raw = calibrate::parse_jsonl(io::read_file(file), file);
      rows.insert(rows.end(), raw.rows.begin(), raw.rows.end());
      for (auto& c : raw.contexts)
        if (std::find(contexts.begin(), contexts.end(), c) == contexts.end()) contexts.push_back(c);
      for (const auto& [gpu, where] : raw.gpus) devices.push_back({gpu, where});
      what += (what.empty() ? "" : ", ") + fs::path(file).filename().string();
    }
    return fit_and_write(rows, contexts, what, base, base_, out_, force_, calibrate::gpu_mismatches(devices, base),
                         accept_anyway_);
  }

  /// The tier index of --tier, or -1 when it is not given.
  int given_tier(const System& base) const {
    if (tier_.empty()) return -1;
    std::vector<std::string> names;
    for (size_t i = 0; i < base.tiers.size(); ++i) {
      names.push_back(base.tiers[i].name);
      if (base.tiers[i].name == tier_) return static_cast<int>(i);
    }
    const std::string near = io::closest_match(tier_, names);
    throw ConfigError("--tier: cluster '" + base_ + "' has no tier '" + tier_ + "' (tiers: " + join(names, ", ") + ")" +
                      (near.empty() ? "" : "; did you mean '" + near + "'?"));
  }

  int do_import() {
    check_profile_out(out_, force_);
    const System base = io::load_system(base_, 0);
    const int given = given_tier(base);
    std::vector<Measurement> rows;
    std::vector<calibrate::DeviceSeen> devices;
    std::vector<std::string> reasons, tiers_used;
    std::string what;
    for (const auto& file : inputs_) {
      for (const auto& run : calibrate::parse_nccl_tests(io::read_file(file))) {
        calibrate::check_usable(run, file, ranks_);
        const std::string where = file + ":" + std::to_string(run.line);
        const int nranks = run.nranks > 0 ? run.nranks : ranks_;
        const std::vector<std::string> hosts = calibrate::run_hosts(run);
        const int inferred =
            hosts.empty() ? -1 : calibrate::tier_for_hosts(base, nranks, static_cast<int>(hosts.size()));
        const std::string placed =
            std::to_string(nranks) + " ranks on " + std::to_string(hosts.size()) +
            (hosts.size() == 1 ? " host (" : " hosts (") +
            join(std::vector<std::string>(hosts.begin(), hosts.begin() + std::min<size_t>(hosts.size(), 4)), ", ") +
            (hosts.size() > 4 ? ", ..." : "") + ")";
        int tier = given;
        if (given < 0) {
          if (inferred < 0)
            throw ConfigError(where + ": " + run.binary +
                              " run: the log names no hosts, so its tier cannot be "
                              "inferred; pass --tier NAME");
          tier = inferred;
          std::cout << where << ": " << run.binary << ", " << placed << ": tier "
                    << base.tiers[static_cast<size_t>(tier)].name << " of " << base_
                    << " (inferred; --tier overrides)\n";
        } else if (inferred >= 0 && inferred != given) {
          reasons.push_back(where + ": " + run.binary + " ran " + placed + ", a group that uses tier '" +
                            base.tiers[static_cast<size_t>(inferred)].name + "' of " + base_ + ", not --tier '" +
                            tier_ + "'");
        }
        if (!hosts.empty() && base.gpus_per_node > 0) {
          // Ranks per host above the base's GPUs per node: the log is of another kind of node.
          for (const std::string& h : hosts) {
            const auto on_host =
                std::count_if(run.ranks.begin(), run.ranks.end(), [&](const auto& r) { return r.host == h; });
            if (on_host > base.gpus_per_node) {
              reasons.push_back(where + ": " + std::to_string(on_host) + " ranks ran on host " + h +
                                ", but a node of " + base_ + " has " + std::to_string(base.gpus_per_node) + " GPUs");
              break;
            }
          }
        }
        const std::string tier_name = base.tiers[static_cast<size_t>(tier)].name;
        if (std::find(tiers_used.begin(), tiers_used.end(), tier_name) == tiers_used.end())
          tiers_used.push_back(tier_name);
        std::vector<std::string> seen;
        for (const auto& r : run.ranks)
          if (!r.device.empty() && std::find(seen.begin(), seen.end(), r.device) == seen.end()) {
            seen.push_back(r.device);
            devices.push_back({r.device, where});
          }
        for (const auto& r : run.rows) {
          if (r.bytes <= 0 || r.time_us <= 0) continue;
          Measurement m;
          m.where = where;
          m.bench = calibrate::Bench::collective;
          m.backend = "nccl-tests";
          m.collective = *run.collective;
          m.nranks = nranks;
          m.bytes = r.bytes;
          m.time_s = r.time_us * 1e-6;
          m.tier = tier;
          rows.push_back(m);
        }
      }
      what += (what.empty() ? "" : ", ") + fs::path(file).filename().string();
    }
    if (rows.empty()) throw ConfigError("no nccl-tests data rows in " + what);
    for (auto& r : calibrate::gpu_mismatches(devices, base)) reasons.push_back(std::move(r));
    return fit_and_write(rows, {"nccl-tests logs for tier " + join(tiers_used, ", ")}, what, base, base_, out_, force_,
                         reasons, accept_anyway_);
  }

  static std::string self_dir() {
    std::error_code ec;
    const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
    return ec ? std::string(".") : exe.parent_path().string();
  }

  ImportLogVerb import_log_;
  CLI::App *cmd_ = nullptr, *run_ = nullptr, *fit_ = nullptr, *import_ = nullptr, *aic_ = nullptr;
  CLI::App* fit_runs_ = nullptr;
  FitRunsFlags fit_runs_flags_;
  std::string gpu_tables_, aic_dir_, aic_gpu_, aic_system_, aic_out_;
  bool aic_force_ = false;
  std::vector<std::string> benchmarks_, inputs_;
  std::string launcher_, backend_, bench_dir_, bench_args_, out_, base_, tier_;
  int ranks_ = 0;
  bool force_ = false, accept_anyway_ = false;
};

}  // namespace

std::unique_ptr<Command> make_calibrate_command() { return std::make_unique<CalibrateCommand>(); }

}  // namespace shardplan::cli
