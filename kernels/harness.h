// The benchmark harness shared by every microbenchmark (nccl-tests' common.cu, split small): flags, size sweeps,
// repetition statistics, the JSON-lines writer with its context record, and resume. No CUDA here, so the MPI
// collective backend builds with plain mpicxx; CUDA timing lives in cuda_timing.cuh.
//
// Output (one JSON object per line, schema_version 1; consumers ignore unknown keys):
//   {"record":"context","benchmark":..,"backend":..,"gpu":..,"driver":..,"cuda":..,"nccl":..,"clocks_mhz":{..},
//    "hosts":[..],"ranks":N,"date":..}
//   {"record":"result","benchmark":..,"backend":..,"params":{..},"time_s":median,"time_min_s":..,"time_max_s":..,
//    "reps":R,"iters":I,"flops":..,"bytes":..,"wrong":W}
// time_s is the median over R samples, each the mean of I back-to-back launches. wrong counts results that failed
// the correctness check; the fitter refuses any row with wrong > 0.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace shardplan::bench {

/// "--name value" flags; every benchmark shares --warmup --reps --skip-done and --help.
class Args {
 public:
  Args(int argc, char** argv);
  std::string str(const std::string& name, const std::string& def) const;
  long long integer(const std::string& name, long long def) const;
  double number(const std::string& name, double def) const;
  bool has(const std::string& name) const { return values_.count(name) > 0; }
  /// Exits with status 2 and the usage text if a flag is not in `known` (a typo must not silently default).
  void check_known(const std::vector<std::string>& known, const std::string& usage) const;

 private:
  std::map<std::string, std::string> values_;
};

/// Sizes from min to max (inclusive) multiplying by factor, nccl-tests' -b/-e/-f. Sizes are bytes; "1M" = 2^20
/// (binary, as nccl-tests parses them).
std::vector<std::uint64_t> size_sweep(std::uint64_t min, std::uint64_t max, double factor);
std::uint64_t parse_size(const std::string& s);
std::vector<std::string> split(const std::string& s, char sep);

struct Timing {
  double median_s = 0, min_s = 0, max_s = 0;
  int reps = 0, iters = 0;
};
/// Median (mean of the two middle samples for an even count), min and max of per-launch times.
Timing summarize(std::vector<double> samples_s, int iters);
/// Launches per sample so one sample lasts about `target_s`, given one launch's time (at least 1, at most 10000).
int iters_for(double one_launch_s, double target_s);

/// Writes JSON lines to stdout (flushed per line, so an interrupted run keeps what it measured) and skips the
/// rows a previous run already wrote (--skip-done FILE).
class Reporter {
 public:
  Reporter(std::string benchmark, std::string backend, const Args& args, bool enabled = true);
  bool done(const nlohmann::json& params) const;
  void context(nlohmann::json fields) const;
  /// `extra` adds top-level fields (e.g. "kernel" for attention rows).
  void result(const nlohmann::json& params, const Timing& t, double flops, double bytes, long long wrong,
              const nlohmann::json& extra = nlohmann::json::object()) const;
  /// Shorthand: results are written by one rank only.
  void set_enabled(bool on) { enabled_ = on; }

 private:
  std::string benchmark_, backend_;
  std::set<std::string> done_;
  bool enabled_;
};

std::string hostname();
std::string utc_date();

}  // namespace shardplan::bench
