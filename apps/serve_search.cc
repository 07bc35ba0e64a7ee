// shardplan serve search: aggregated and (--mode disagg|both) disaggregated xPyD serving plans under TTFT/TPOT
// targets, ranked by output tokens/s per GPU, with rejections counted and the best plan's engine arguments.
#include <cstdio>
#include <iostream>

#include <nlohmann/json.hpp>

#include "apps/serve_command.h"
#include "apps/serve_spec_flags.h"
#include "modeler/io/model_io.h"
#include "modeler/io/serving_json.h"
#include "modeler/io/system_io.h"
#include "modeler/problems.h"
#include "modeler/serving/disagg_search.h"
#include "modeler/serving/serve_search.h"

namespace shardplan::cli {

namespace {

using namespace serving;

class ServeSearchCommand final : public Command {
 public:
  CLI::App* setup(CLI::App& app) override {
    CLI::App* sub = app.add_subcommand("search", "serving plans (aggregated, disaggregated xPyD) under TTFT/TPOT "
                                                 "targets, ranked by output tokens/s per GPU");
    sub->add_option("--model", model_, "model name, YAML file or HF config.json")->required();
    sub->add_option("--gpu", gpu_, "GPU profile name (standard node and network)");
    sub->add_option("--system", system_, "cluster profile (instead of --gpu)");
    sub->add_option("--gpus", gpus_, "GPUs to plan for")->required()->check(CLI::PositiveNumber);
    sub->add_option("--engine", engine_, "vllm | sglang | trtllm (default vllm)")->capture_default_str();
    sub->add_option("--weights", weights_, "weight format (default bf16)")->capture_default_str();
    sub->add_option("--moe-weights", moe_weights_, "routed-expert format (default: --weights)");
    sub->add_option("--kv", kv_, "KV-cache format (default bf16)")->capture_default_str();
    sub->add_option("--input-len", wl_.input_len, "prompt tokens (default 1024)")->capture_default_str();
    sub->add_option("--output-len", wl_.output_len, "generated tokens (default 128)")->capture_default_str();
    sub->add_option("--ttft-ms", targets_.ttft_ms, "TTFT target in ms (default: none)");
    sub->add_option("--tpot-ms", targets_.tpot_ms, "TPOT target in ms (default: none)");
    sub->add_option("--top", top_, "plans to print (default 10)")->capture_default_str();
    add_spec_flags(sub, &spec_);
    sub->add_option("--mode", mode_, "agg | disagg | both (default agg: the aggregated search alone, its output "
                                     "unchanged; disagg: x prefill + y decode workers; both: one ranking of the two, "
                                     "per GPU of --gpus, idle GPUs counted)")->capture_default_str();
    sub->add_flag("--json", json_, "print JSON");
    return sub;
  }

  int run() override {
    const auto engine = parse_engine(engine_);
    if (!engine || (*engine != Engine::vllm && *engine != Engine::sglang && *engine != Engine::trtllm))
      throw ConfigError("--engine: expected vllm, sglang or trtllm, got '" + engine_ + "'");
    if (gpu_.empty() == system_.empty()) throw ConfigError("give exactly one of --gpu and --system");
    if (mode_ != "agg" && mode_ != "disagg" && mode_ != "both")
      throw ConfigError("--mode: expected agg, disagg or both, got '" + mode_ + "'");
    Precision prec;
    const auto w = parse_weight_format(weights_);
    if (!w) throw ConfigError("--weights: unknown format '" + weights_ + "' (one of: " + weight_format_names() + ")");
    prec.weights = *w;
    prec.moe_weights = prec.weights;
    if (!moe_weights_.empty()) {
      const auto mw = parse_weight_format(moe_weights_);
      if (!mw) throw ConfigError("--moe-weights: unknown format '" + moe_weights_ + "'");
      prec.moe_weights = *mw;
    }
    const auto kv = parse_kv_bytes(kv_);
    if (!kv) throw ConfigError("--kv: unknown format '" + kv_ + "' (bf16 fp16 fp8 q8_0 q4_0)");
    prec.kv_bytes = *kv;
    System sys;
    if (!system_.empty()) {
      sys = io::load_system(system_, gpus_);
    } else {
      io::StandardSystemOptions so;
      so.gpus = gpus_;
      sys = io::standard_system(io::load_gpu_profile(gpu_), so);
    }
    const ModelDesc model = io::load_model(model_, true);
    // A config.json whose checkpoint is block-scaled fp8 decides what --weights fp8 runs (formats.h).
    const std::string weights_note = apply_checkpoint_format(&prec.weights, &prec.moe_weights,
                                                             model.checkpoint_fp8_block);
    ServingModel sm = make_serving_model(model, prec);
    sm.engine = engine_step(*engine, "", model);  // the engine's current release
    ServeInputs base;
    base.model = &sm;
    base.system = &sys;
    base.engine = *engine;
    base.workload = wl_;
    WorkerPlan probe;  // the draft's tp is checked per candidate (serve_predict)
    const SpecSetup spec = parse_spec_flags(spec_, sm, probe, *engine);
    base.spec = spec.spec;
    base.draft = spec.draft.get();
    ServeSearchSpace space;
    space.gpus = gpus_;
    if (mode_ != "agg") return run_disagg(base, space, sm, sys, *engine, prec.kv_bytes == 1.0);
    const ServeSearchResult r = serve_search(base, space, targets_);
    if (json_) {
      nlohmann::json j{{"schema_version", 1},
                       {"context", {{"command", "serve search"}, {"model", model_}, {"gpus", gpus_},
                                    {"engine", engine_name(*engine)}}},
                       {"evaluated", r.evaluated}, {"rejected", r.rejected}};
      nlohmann::json res = nlohmann::json::array();
      for (size_t i = 0; i < r.ranked.size() && static_cast<int>(i) < top_; ++i) {
        const auto& c = r.ranked[i];
        const WorkerPlan& p = c.plan.agg;
        res.push_back({{"plan", {{"tp", p.tp}, {"pp", p.pp}, {"attention_dp", p.attention_dp}, {"moe_tp", p.moe_tp},
                                 {"moe_ep", p.moe_ep}, {"replicas", p.workers}, {"batch", *p.batch}}},
                       {"concurrency", c.concurrency},
                       {"ttft_s", c.prediction.ttft.v}, {"tpot_s", c.prediction.tpot.v},
                       {"output_tokens_per_s_per_gpu", c.prediction.output_tokens_per_s_per_gpu},
                       {"engine_args", engine_args(*engine, model_, p, prec.kv_bytes == 1.0, spec.spec, spec.draft_name)}});
      }
      j["results"] = res;
      std::cout << j.dump(2) << "\n";
      return 0;
    }
    std::printf("serve search: %s on %d x %s, %s; input %d, output %d; targets TTFT %s, TPOT %s\n",
                sm.model.name.c_str(), gpus_, sys.gpu.name.c_str(), engine_name(*engine).c_str(), wl_.input_len,
                wl_.output_len, targets_.ttft_ms > 0 ? (num(targets_.ttft_ms) + " ms").c_str() : "none",
                targets_.tpot_ms > 0 ? (num(targets_.tpot_ms) + " ms").c_str() : "none");
    if (!weights_note.empty()) std::printf("weights: %s\n", weights_note.c_str());
    std::printf("%4s %4s %4s %4s %6s %6s %8s %6s %10s %10s %14s\n", "rank", "tp", "pp", "adp", "moe_ep", "repl",
                "batch", "conc", "TTFT ms", "TPOT ms", "out tok/s/GPU");
    for (size_t i = 0; i < r.ranked.size() && static_cast<int>(i) < top_; ++i) {
      const auto& c = r.ranked[i];
      const WorkerPlan& p = c.plan.agg;
      std::printf("%4zu %4d %4d %4d %6d %6d %8d %6d %10.1f %10.2f %14.1f\n", i + 1, p.tp, p.pp, p.attention_dp,
                  p.moe_ep, p.workers, *p.batch, c.concurrency, to_ms(c.prediction.ttft), to_ms(c.prediction.tpot),
                  c.prediction.output_tokens_per_s_per_gpu);
    }
    std::printf("evaluated %d candidates; rejected:", r.evaluated);
    for (const auto& [why, n] : r.rejected) std::printf(" %s %d", why.c_str(), n);
    std::printf("\n");
    if (r.ranked.empty()) throw Infeasible("no plan meets the targets (rejections above)");
    const WorkerPlan& best = r.ranked.front().plan.agg;
    std::printf("\nbest plan, per replica (run %d replicas behind a router):\n  %s\n", best.workers,
                engine_args(*engine, model_, best, prec.kv_bytes == 1.0, spec.spec, spec.draft_name).c_str());
    return 0;
  }

 private:
  int run_disagg(const ServeInputs& base, const ServeSearchSpace& space, const ServingModel& sm, const System& sys,
                 Engine engine, int kv_fp8);

  std::string model_, gpu_, system_, engine_ = "vllm", weights_ = "bf16", moe_weights_, kv_ = "bf16", mode_ = "agg";
  int gpus_ = 0, top_ = 10;
  Workload wl_;
  SearchTargets targets_;
  SpecFlags spec_;
  bool json_ = false;
};

std::string shape(const WorkerPlan& w, bool pp) {
  std::string s = "tp" + std::to_string(w.tp);
  if (pp) s += " pp" + std::to_string(w.pp);
  if (w.attention_dp > 1) s += " adp" + std::to_string(w.attention_dp);
  if (w.moe_ep > 1) s += " ep" + std::to_string(w.moe_ep);
  return s + " b" + std::to_string(w.batch.value_or(0));
}

nlohmann::json pool_json(const WorkerPlan& p) {
  return {{"workers", p.workers}, {"tp", p.tp}, {"pp", p.pp}, {"attention_dp", p.attention_dp},
          {"moe_tp", p.moe_tp}, {"moe_ep", p.moe_ep}, {"batch", p.batch.value_or(0)}, {"gpus", p.gpus() * p.workers}};
}

// One row of the --mode disagg|both ranking: an aggregated or a disaggregated candidate.
struct Row {
  const SearchCandidate* agg = nullptr;
  const DisaggCandidate* dis = nullptr;
  double per_gpu_budget() const {
    return agg ? agg->prediction.output_tokens_per_s_per_gpu : dis->output_tokens_per_s_per_gpu_budget;
  }
  const ServePrediction& pred() const { return agg ? agg->prediction : dis->prediction; }
};

int ServeSearchCommand::run_disagg(const ServeInputs& base, const ServeSearchSpace& space, const ServingModel& sm,
                                   const System& sys, Engine engine, int kv_fp8) {
  ServeSearchResult a;
  if (mode_ == "both") a = serve_search(base, space, targets_);
  const DisaggSearchResult d = disagg_search(base, space, targets_);
  std::vector<Row> rows;
  for (const auto& c : a.ranked) rows.push_back({&c, nullptr});
  for (const auto& c : d.ranked) rows.push_back({nullptr, &c});
  // Aggregated plans use every GPU (gpus % worker size == 0), so their per-GPU figure is already per GPU given.
  std::stable_sort(rows.begin(), rows.end(), [](const Row& x, const Row& y) {
    return x.per_gpu_budget() > y.per_gpu_budget();
  });
  const int pb = prefill_batch(base.plan.max_num_tokens > 0 ? base.plan.max_num_tokens
                                                            : default_max_num_tokens(engine, sys.gpu),
                               wl_.input_len);
  auto args = [&](const WorkerPlan& w) { return engine_args(engine, model_, w, kv_fp8); };
  if (json_) {
    nlohmann::json j{{"schema_version", 1},
                     {"context", {{"command", "serve search"}, {"model", model_}, {"gpus", gpus_},
                                  {"engine", engine_name(engine)}, {"mode", mode_}}},
                     {"disagg", {{"evaluated", d.evaluated}, {"rejected", d.rejected},
                                 {"prefill_batch", pb}, {"prefill_shapes", d.prefill_shapes},
                                 {"prefill_shapes_kept", d.prefill_shapes_kept}}}};
    if (mode_ == "both") j["agg"] = {{"evaluated", a.evaluated}, {"rejected", a.rejected}};
    nlohmann::json res = nlohmann::json::array();
    for (size_t i = 0; i < rows.size() && static_cast<int>(i) < top_; ++i) {
      const Row& r = rows[i];
      const ServePrediction& p = r.pred();
      nlohmann::json e{{"ttft_s", p.ttft.v}, {"tpot_s", p.tpot.v},
                       {"output_tokens_per_s_per_gpu", r.per_gpu_budget()},
                       {"output_tokens_per_s_per_gpu_used", p.output_tokens_per_s_per_gpu}};
      if (r.agg) {
        const WorkerPlan& w = r.agg->plan.agg;
        e.update({{"mode", "agg"}, {"plan", pool_json(w)}, {"concurrency", r.agg->concurrency},
                  {"gpus_used", gpus_}, {"idle_gpus", 0}, {"engine_args", args(w)}});
      } else {
        const DisaggCandidate& c = *r.dis;
        const DisaggLaunch l = disagg_launch(engine, c.plan.prefill.workers, c.plan.decode.workers);
        e.update({{"mode", "disagg"}, {"prefill", pool_json(c.plan.prefill)}, {"decode", pool_json(c.plan.decode)},
                  {"concurrency", c.concurrency}, {"gpus_used", c.gpus_used}, {"idle_gpus", c.idle_gpus},
                  {"prefill_capacity_rps", c.prefill_capacity_rps}, {"request_rate_rps", c.request_rate_rps},
                  {"kv_transfer", p.kv_transfer ? io::kv_transfer_json(*p.kv_transfer) : nlohmann::json(nullptr)},
                  {"engine_args", {{"prefill", args(c.plan.prefill) + l.prefill_flags},
                                   {"decode", args(c.plan.decode) + l.decode_flags}, {"router", l.router}}}});
      }
      res.push_back(e);
    }
    j["results"] = res;
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  std::printf("serve search (%s): %s on %d x %s, %s; input %d, output %d; targets TTFT %s, TPOT %s\n",
              mode_.c_str(), sm.model.name.c_str(), gpus_, sys.gpu.name.c_str(), engine_name(engine).c_str(),
              wl_.input_len, wl_.output_len,
              targets_.ttft_ms > 0 ? (num(targets_.ttft_ms) + " ms").c_str() : "none",
              targets_.tpot_ms > 0 ? (num(targets_.tpot_ms) + " ms").c_str() : "none");
  std::printf("%4s %-6s %-42s %4s %4s %6s %9s %8s %10s %10s\n", "rank", "mode", "plan", "used", "idle", "conc",
              "TTFT ms", "TPOT ms", "tok/s/GPU", "(per used)");
  for (size_t i = 0; i < rows.size() && static_cast<int>(i) < top_; ++i) {
    const Row& r = rows[i];
    std::string plan;
    int used = gpus_, idle = 0, conc = 0;
    if (r.agg) {
      plan = std::to_string(r.agg->plan.agg.workers) + "x(" + shape(r.agg->plan.agg, true) + ")";
      conc = r.agg->concurrency;
    } else {
      const DisaggCandidate& c = *r.dis;
      plan = std::to_string(c.plan.prefill.workers) + "P(" + shape(c.plan.prefill, true) + ") " +
             std::to_string(c.plan.decode.workers) + "D(" + shape(c.plan.decode, false) + ")";
      used = c.gpus_used;
      idle = c.idle_gpus;
      conc = c.concurrency;
    }
    const ServePrediction& p = r.pred();
    std::printf("%4zu %-6s %-42s %4d %4d %6d %9.1f %8.2f %10.1f %10.1f\n", i + 1, r.agg ? "agg" : "disagg",
                plan.c_str(), used, idle, conc, to_ms(p.ttft), to_ms(p.tpot), r.per_gpu_budget(),
                p.output_tokens_per_s_per_gpu);
  }
  auto rejected = [](const std::map<std::string, int>& m) {
    for (const auto& [why, n] : m) std::printf(" %s %d", why.c_str(), n);
    std::printf("\n");
  };
  if (mode_ == "both") {
    std::printf("aggregated: evaluated %d candidates; rejected:", a.evaluated);
    rejected(a.rejected);
  }
  std::printf("disaggregated: evaluated %d candidates (prefill batch %d prompts per step, %d of %d prefill shapes "
              "kept); rejected:", d.evaluated, pb, d.prefill_shapes_kept, d.prefill_shapes);
  rejected(d.rejected);
  std::printf("tok/s/GPU is per GPU of --gpus (idle GPUs count against a plan); disaggregated TTFT includes the KV "
              "transfer between the pools\n");
  if (rows.empty()) throw Infeasible("no plan meets the targets (rejections above)");
  const Row& best = rows.front();
  if (best.agg) {
    const WorkerPlan& w = best.agg->plan.agg;
    std::printf("\nbest plan, aggregated, per replica (run %d replicas behind a router):\n  %s\n", w.workers,
                args(w).c_str());
    return 0;
  }
  const DisaggCandidate& c = *best.dis;
  const DisaggLaunch l = disagg_launch(engine, c.plan.prefill.workers, c.plan.decode.workers);
  std::printf("\nbest plan, disaggregated %dP%dD on %d GPUs (%d idle):\n", c.plan.prefill.workers,
              c.plan.decode.workers, c.gpus_used, c.idle_gpus);
  std::printf("  prefill, each of %d workers (%s):\n    %s%s\n", c.plan.prefill.workers,
              shape(c.plan.prefill, true).c_str(), args(c.plan.prefill).c_str(), l.prefill_flags.c_str());
  std::printf("  decode, each of %d workers (%s):\n    %s%s\n", c.plan.decode.workers,
              shape(c.plan.decode, false).c_str(), args(c.plan.decode).c_str(), l.decode_flags.c_str());
  std::printf("  router:\n    %s\n", l.router.c_str());
  if (const auto& t = c.prediction.kv_transfer)
    std::printf("  KV transfer per request: %.1f MiB, %.3f ms (%.3f ms added to TTFT); %s\n", t->shards.moved.v / kMiB,
                to_ms(t->time), to_ms(t->exposed), t->placement.c_str());
  return 0;
}

}  // namespace

std::unique_ptr<Command> make_serve_search_command() { return std::make_unique<ServeSearchCommand>(); }

}  // namespace shardplan::cli
