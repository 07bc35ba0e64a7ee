// shardplan serve search: aggregated serving plans under TTFT/TPOT targets, ranked by output tokens/s per GPU,
// with rejections counted and the best plan's engine arguments.
#include <cstdio>
#include <iostream>

#include <nlohmann/json.hpp>

#include "apps/serve_command.h"
#include "modeler/io/model_io.h"
#include "modeler/io/system_io.h"
#include "modeler/problems.h"
#include "modeler/serving/serve_search.h"

namespace shardplan::cli {

namespace {

using namespace serving;

class ServeSearchCommand final : public Command {
 public:
  CLI::App* setup(CLI::App& app) override {
    CLI::App* sub = app.add_subcommand("search", "aggregated serving plans under TTFT/TPOT targets, ranked by "
                                                 "output tokens/s per GPU");
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
    sub->add_flag("--json", json_, "print JSON");
    return sub;
  }

  int run() override {
    const auto engine = parse_engine(engine_);
    if (!engine || (*engine != Engine::vllm && *engine != Engine::sglang && *engine != Engine::trtllm))
      throw ConfigError("--engine: expected vllm, sglang or trtllm, got '" + engine_ + "'");
    if (gpu_.empty() == system_.empty()) throw ConfigError("give exactly one of --gpu and --system");
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
    ServeSearchSpace space;
    space.gpus = gpus_;
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
                       {"engine_args", engine_args(*engine, model_, p, prec.kv_bytes == 1.0)}});
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
                engine_args(*engine, model_, best, prec.kv_bytes == 1.0).c_str());
    return 0;
  }

 private:
  std::string model_, gpu_, system_, engine_ = "vllm", weights_ = "bf16", moe_weights_, kv_ = "bf16";
  int gpus_ = 0, top_ = 10;
  Workload wl_;
  SearchTargets targets_;
  bool json_ = false;
};

}  // namespace

std::unique_ptr<Command> make_serve_search_command() { return std::make_unique<ServeSearchCommand>(); }

}  // namespace shardplan::cli
