#include "apps/serve_workload_flags.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <sstream>

#include "modeler/problems.h"

namespace shardplan::cli {

using namespace serving;

namespace {
// vLLM's benchmarks/benchmark_serving.py and SGLang's bench_serving.py both default --num-prompts to 1000.
constexpr int kDefaultPrompts = 1000;
}  // namespace

void add_workload_flags(CLI::App* app, WorkloadFlags* f, CLI::Option* concurrency, CLI::Option* input_len,
                        CLI::Option* output_len) {
  CLI::Option* rate = app->add_option(
      "--request-rate", f->request_rate,
      "open loop instead of --concurrency: requests per second sent as a Poisson process, the way vLLM's "
      "benchmark_serving and SGLang's bench_serving send them; inf sends every request at once (their default). "
      "Reports TTFT, TPOT, ITL and E2E (mean, p50, p99), the achieved throughput and whether the rate is above "
      "what the plan serves");
  rate->excludes(concurrency);
  app->add_option("--num-prompts", f->num_prompts,
                  "requests in the open loop (default 1000, the benchmarks' "
                  "default; with --lengths, every row of the file)")
      ->check(CLI::Range(1, 1000000));
  app->add_option("--seed", f->seed,
                  "seed of the open loop's arrival times (default 0; the draws are this tool's "
                  "own, not numpy's)");
  CLI::Option* lengths = app->add_option(
      "--lengths", f->lengths,
      "file of per-request lengths for the open loop: one request a line, input and output tokens (blank or comma "
      "separated, '#' comments), sent in file order; instead of --input-len/--output-len");
  lengths->excludes(input_len);
  lengths->excludes(output_len);
}

double parse_request_rate(const std::string& s) {
  std::string low = s;
  std::transform(low.begin(), low.end(), low.begin(), [](unsigned char c) { return std::tolower(c); });
  if (low == "inf") return std::numeric_limits<double>::infinity();
  try {
    size_t used = 0;
    const double v = std::stod(s, &used);
    if (used == s.size() && std::isfinite(v) && v > 0) return v;
  } catch (const std::exception&) {
  }
  throw ConfigError("--request-rate: expected requests per second above 0 or 'inf', got '" + s + "'");
}

std::vector<LengthPair> parse_lengths(std::istream& is, const std::string& name) {
  std::vector<LengthPair> out;
  std::string line;
  int n = 0;
  while (std::getline(is, line)) {
    ++n;
    std::replace(line.begin(), line.end(), ',', ' ');
    std::istringstream ls(line);
    std::string first;
    if (!(ls >> first) || first[0] == '#') continue;
    ls.clear();
    ls.str(line);
    long in = 0, o = 0;
    std::string rest;
    auto bad = [&](const std::string& why) {
      return ConfigError(name + ":" + std::to_string(n) + ": " + why + ", got '" + line + "'");
    };
    if (!(ls >> in >> o) || (ls >> rest)) throw bad("expected two integers, input and output tokens");
    if (in < 1 || o < 1) throw bad("lengths must be at least 1 token");
    if (in > 10000000 || o > 10000000) throw bad("lengths above 10M tokens");
    out.push_back({static_cast<int>(in), static_cast<int>(o)});
  }
  if (out.empty()) throw ConfigError(name + ": no requests (one 'input output' pair a line)");
  return out;
}

OpenLoopWorkload make_open_loop_workload(const WorkloadFlags& f, int input_len, int output_len) {
  if (f.request_rate.empty()) {
    if (!f.lengths.empty() || f.num_prompts != 0 || f.seed != 0)
      throw ConfigError("--lengths, --num-prompts and --seed describe an open loop: they need --request-rate");
    return {};
  }
  OpenLoopWorkload wl;
  wl.rate = parse_request_rate(f.request_rate);
  wl.seed = f.seed;
  if (f.lengths.empty()) {
    wl.lengths.assign(static_cast<size_t>(f.num_prompts > 0 ? f.num_prompts : kDefaultPrompts),
                      LengthPair{input_len, output_len});
    return wl;
  }
  std::ifstream is(f.lengths);
  if (!is) throw ConfigError("--lengths: cannot read '" + f.lengths + "'");
  wl.lengths = parse_lengths(is, f.lengths);
  if (f.num_prompts > 0) {
    if (static_cast<size_t>(f.num_prompts) > wl.lengths.size())
      throw ConfigError("--num-prompts " + std::to_string(f.num_prompts) + ": '" + f.lengths + "' has " +
                        std::to_string(wl.lengths.size()) + " requests (the benchmarks do not repeat requests)");
    wl.lengths.resize(static_cast<size_t>(f.num_prompts));
  }
  return wl;
}

namespace {

std::string rate_text(double r) {
  if (!std::isfinite(r)) return "inf";
  char b[32];
  std::snprintf(b, sizeof b, "%.4g", r);
  return b;
}

std::string lengths_text(const OpenLoopWorkload& wl, const WorkloadFlags& f) {
  double in = 0, out = 0;
  for (const LengthPair& l : wl.lengths) {
    in += l.input_len;
    out += l.output_len;
  }
  const double n = static_cast<double>(wl.lengths.size());
  char b[160];
  if (f.lengths.empty())
    std::snprintf(b, sizeof b, "input %d, output %d", wl.lengths[0].input_len, wl.lengths[0].output_len);
  else
    std::snprintf(b, sizeof b, "lengths from %s (mean input %.1f, output %.1f)", f.lengths.c_str(), in / n, out / n);
  return b;
}

}  // namespace

void print_open_loop(const OpenLoopWorkload& wl, const WorkloadFlags& f, const OpenLoopPrediction& p) {
  const OpenLoopResult& r = p.run;
  std::printf("workload: open loop, %zu requests at %s req/s (%s, seed %llu), %s\n\n", wl.lengths.size(),
              rate_text(wl.rate).c_str(), std::isfinite(wl.rate) ? "Poisson" : "all sent at once",
              static_cast<unsigned long long>(wl.seed), lengths_text(wl, f).c_str());
  std::printf("latency (ms)        mean        p50        p99\n");
  auto row = [](const char* what, const Summary& s) {
    if (s.count == 0)
      std::printf("  %-6s %11s  (no request has a second token)\n", what, "-");
    else
      std::printf("  %-6s %11.2f %10.2f %10.2f\n", what, s.mean * 1e3, s.p50 * 1e3, s.p99 * 1e3);
  };
  row("TTFT", r.ttft);
  row("TPOT", r.tpot);
  row("ITL", r.itl);
  row("E2E", r.e2e);
  std::printf("  (TTFT from sending; TPOT per request (E2E - TTFT) / (output - 1); ITL every gap between tokens)\n");
  std::printf("throughput (all %d attention-DP ranks, requests round-robin)\n", p.ranks);
  std::printf("  achieved         %10.2f req/s, output %.1f tok/s, input %.1f tok/s, over %.1f s\n", r.requests_per_s,
              r.output_tokens_per_s, r.input_tokens_per_s, r.duration);
  std::printf("  capacity         %10.2f req/s (the same requests sent at once)\n", p.capacity_rps);
  std::printf("  running batch    %10.1f sequences per rank (time-weighted); at most %d waited at once\n", r.mean_batch,
              r.max_waiting);
  if (!std::isfinite(wl.rate))
    std::printf(
        "stability: every request is queued at t = 0; the queue drains at the capacity, so TTFT is mostly "
        "waiting and grows with --num-prompts\n");
  else if (p.stable)
    std::printf("stability: stable, %s req/s offered is %.0f%% of the %.2f req/s capacity\n",
                rate_text(wl.rate).c_str(), 100.0 * wl.rate / p.capacity_rps, p.capacity_rps);
  else
    std::printf(
        "stability: UNSTABLE, %s req/s offered exceeds the %.2f req/s capacity: the waiting queue grows by "
        "about %.4g requests each second while requests arrive, so TTFT grows with the run's length "
        "(--num-prompts) instead of settling\n",
        rate_text(wl.rate).c_str(), p.capacity_rps, p.queue_growth_rps);
  std::printf("KV cache: %.0f tokens per attention-DP rank; memory per GPU %.2f of %.2f GiB (%s)\n", p.kv_tokens,
              to_GiB(p.memory.total), to_GiB(p.memory.capacity), p.memory.rule.c_str());
}

nlohmann::json open_loop_json(const OpenLoopWorkload& wl, const WorkloadFlags& f, const OpenLoopPrediction& p) {
  auto sum = [](const Summary& s) {
    return nlohmann::json{
        {"mean_ms", s.mean * 1e3}, {"p50_ms", s.p50 * 1e3}, {"p99_ms", s.p99 * 1e3}, {"count", s.count}};
  };
  const OpenLoopResult& r = p.run;
  nlohmann::json rate = std::isfinite(wl.rate) ? nlohmann::json(wl.rate) : nlohmann::json("inf");
  return {{"workload",
           {{"mode", "open_loop"},
            {"request_rate", rate},
            {"requests", wl.lengths.size()},
            {"seed", wl.seed},
            {"lengths_file", f.lengths.empty() ? nlohmann::json(nullptr) : nlohmann::json(f.lengths)}}},
          {"latency", {{"ttft", sum(r.ttft)}, {"tpot", sum(r.tpot)}, {"itl", sum(r.itl)}, {"e2e", sum(r.e2e)}}},
          {"throughput",
           {{"requests_per_s", r.requests_per_s},
            {"output_tokens_per_s", r.output_tokens_per_s},
            {"input_tokens_per_s", r.input_tokens_per_s},
            {"duration_s", r.duration},
            {"capacity_requests_per_s", p.capacity_rps}}},
          {"stability",
           {{"stable", p.stable},
            {"queue_growth_requests_per_s",
             std::isfinite(p.queue_growth_rps) ? nlohmann::json(p.queue_growth_rps) : nlohmann::json("inf")},
            {"max_waiting", r.max_waiting},
            {"mean_batch", r.mean_batch}}},
          {"kv_tokens_per_rank", p.kv_tokens},
          {"ranks", p.ranks},
          {"gpu_memory_gib", to_GiB(p.memory.total)}};
}

}  // namespace shardplan::cli
