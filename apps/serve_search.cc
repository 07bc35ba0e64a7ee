// shardplan serve search: aggregated and (--mode disagg|both) disaggregated xPyD serving plans under TTFT/TPOT
// targets on one or several GPU types, ranked by output tokens/s per GPU (default), cost per million output tokens
// at the user's prices (--objective per-dollar) or output tokens/s (throughput), with rejections counted and the
// best plan's engine arguments. The ranking and its output across types are in serve_search_rank.cc.
#include "modeler/serving/serve_search.h"

#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "apps/serve_command.h"
#include "apps/serve_search_rank.h"
#include "apps/serve_shared_flags.h"
#include "apps/serve_spec_flags.h"
#include "apps/text.h"
#include "modeler/io/model_io.h"
#include "modeler/io/system_io.h"
#include "modeler/problems.h"
#include "modeler/serving/disagg_search.h"

namespace shardplan::cli {

namespace {

using namespace serving;

class ServeSearchCommand final : public Command {
 public:
  CLI::App* setup(CLI::App& app) override {
    CLI::App* sub = app.add_subcommand("search",
                                       "serving plans (aggregated, disaggregated xPyD) under TTFT/TPOT "
                                       "targets, ranked by output tokens/s per GPU or per dollar");
    sub->add_option("--model", model_, "model name, YAML file or HF config.json")->required();
    sub->add_option("--gpu", gpu_,
                    "GPU profile name (standard node and network), or several, comma-separated "
                    "(h100-sxm5-80gb,b200): one search each, ranked together");
    sub->add_option("--system", system_, "cluster profile (instead of --gpu)");
    sub->add_option("--gpus", gpus_, "GPUs to plan for")->required()->check(positive_number());
    sub->add_option("--engine", engine_, "vllm | sglang | trtllm (default vllm)")->capture_default_str();
    sub->add_option("--weights", weights_, "weight format (default bf16)")->capture_default_str();
    sub->add_option("--moe-weights", moe_weights_, "routed-expert format (default: --weights)");
    sub->add_option("--kv", kv_, "KV-cache format (default bf16)")->capture_default_str();
    sub->add_option("--input-len", wl_.input_len, "prompt tokens (default 1024)")->capture_default_str();
    sub->add_option("--output-len", wl_.output_len, "generated tokens (default 128)")->capture_default_str();
    sub->add_option("--ttft-ms", targets_.ttft_ms, "TTFT target in ms (default: none)");
    sub->add_option("--tpot-ms", targets_.tpot_ms, "TPOT target in ms (default: none)");
    sub->add_option("--top", top_, "plans to print (default 10)")->capture_default_str();
    sub->add_option("--objective", objective_,
                    "per-gpu (default: output tokens/s per GPU) | per-dollar (cost per "
                    "million output tokens, needs prices) | throughput (output "
                    "tokens/s of the --gpus budget)")
        ->capture_default_str();
    sub->add_option("--gpu-hour-price", price_,
                    "price of one GPU-hour (dollars or any one currency) for one GPU "
                    "type: adds $/Mtok; no price is shipped")
        ->check(positive_number());
    sub->add_option("--price", prices_,
                    "prices per GPU-hour of several --gpu types, NAME=P,... (every type needs "
                    "one)");
    add_shared_serve_flags(sub, &shared_, true);
    add_spec_flags(sub, &spec_);
    sub->add_option("--mode", mode_,
                    "agg | disagg | both (default agg: the aggregated search alone, its output "
                    "unchanged; disagg: x prefill + y decode workers; both: one ranking of the two, "
                    "per GPU of --gpus, idle GPUs counted)")
        ->capture_default_str();
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
    const auto objective = parse_serve_objective(objective_);
    if (!objective)
      throw ConfigError("--objective: expected per-gpu, per-dollar or throughput, got '" + objective_ + "'");
    if (!system_.empty() && !prices_.empty())
      throw ConfigError("--price names --gpu types; with --system give --gpu-hour-price");
    const std::vector<std::string> names = system_.empty() ? split_gpu_list(gpu_) : std::vector{system_};
    const std::vector<double> prices = gpu_prices(names, price_, prices_, *objective);
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
    std::vector<TypeSearch> types(names.size());
    for (size_t i = 0; i < names.size(); ++i) {
      types[i].name = names[i];
      types[i].price = prices[i];
      if (!system_.empty()) {
        types[i].system = io::load_system(system_, gpus_);
      } else {
        io::StandardSystemOptions so;
        so.gpus = gpus_;
        types[i].system = io::standard_system(io::load_gpu_profile(names[i]), so);
      }
    }
    const ModelDesc model = io::load_model(model_, true);
    // A config.json whose checkpoint is block-scaled fp8 decides what --weights fp8 runs (formats.h).
    const std::string weights_note =
        apply_checkpoint_format(&prec.weights, &prec.moe_weights, model.checkpoint_fp8_block);
    ServingModel sm = make_serving_model(model, prec, parse_transforms(shared_));
    sm.engine = engine_step(*engine, "", model);  // the engine's current release
    for (const TypeSearch& t : types) check_transforms_run(sm, t.system.gpu);
    ServeInputs base;
    base.model = &sm;
    base.engine = *engine;
    base.workload = wl_;
    base.workload.prefix_hit = shared_.prefix_hit;
    base.memory.fraction = shared_.mem_fraction;
    WorkerPlan probe;  // the draft's tp is checked per candidate (serve_predict)
    const SpecSetup spec = parse_spec_flags(spec_, sm, probe, *engine);
    base.spec = spec.spec;
    base.draft = spec.draft.get();
    ServeSearchSpace space;
    space.gpus = gpus_;
    space.batch = capped_batches(space.batch, shared_.max_batch);
    for (TypeSearch& t : types) {
      base.system = &t.system;
      if (mode_ != "disagg") t.agg = serve_search(base, space, targets_);
      if (mode_ != "agg") t.disagg = disagg_search(base, space, targets_);
      t.prefill_batch = prefill_batch(default_max_num_tokens(*engine, t.system.gpu), wl_.input_len);
    }
    RankContext ctx;
    ctx.model_arg = model_;
    ctx.model_name = sm.model.name;
    ctx.mode = mode_;
    ctx.transforms = transforms_note(shared_);
    ctx.weights_note = weights_note;
    ctx.engine = *engine;
    ctx.objective = *objective;
    ctx.workload = base.workload;
    ctx.targets = targets_;
    ctx.extras = {shared_.mem_fraction, shared_.prefix_hit > 0};
    ctx.spec = spec.spec;
    ctx.draft_name = spec.draft_name;
    ctx.gpus = gpus_;
    ctx.top = top_;
    ctx.kv_fp8 = prec.kv_bytes == 1.0;
    const bool legacy =
        mode_ == "agg" && types.size() == 1 && *objective == ServeObjective::per_gpu && prices.front() == 0;
    if (legacy) return print_agg(ctx, types.front());
    const std::vector<RankedPlan> rows = rank_plans(types, *objective, gpus_);
    if (json_) {
      std::cout << ranked_json(ctx, types, rows).dump(2) << "\n";
      return 0;
    }
    print_ranked(ctx, types, rows);
    return 0;
  }

 private:
  // The single-type aggregated search under the default objective: its table as before the objectives.
  int print_agg(const RankContext& ctx, const TypeSearch& t) const {
    const ServeSearchResult& r = t.agg;
    auto args = [&](const WorkerPlan& p) {
      return engine_args(ctx.engine, model_, p, ctx.kv_fp8, ctx.spec, ctx.draft_name, ctx.extras);
    };
    if (json_) {
      nlohmann::json j{
          {"schema_version", 1},
          {"context",
           {{"command", "serve search"}, {"model", model_}, {"gpus", gpus_}, {"engine", engine_name(ctx.engine)}}},
          {"evaluated", r.evaluated},
          {"rejected", r.rejected}};
      if (!ctx.transforms.empty()) j["context"]["transforms"] = ctx.transforms;
      nlohmann::json res = nlohmann::json::array();
      for (size_t i = 0; i < r.ranked.size() && static_cast<int>(i) < top_; ++i) {
        const auto& c = r.ranked[i];
        const WorkerPlan& p = c.plan.agg;
        res.push_back({{"plan",
                        {{"tp", p.tp},
                         {"pp", p.pp},
                         {"attention_dp", p.attention_dp},
                         {"moe_tp", p.moe_tp},
                         {"moe_ep", p.moe_ep},
                         {"replicas", p.workers},
                         {"batch", *p.batch}}},
                       {"concurrency", c.concurrency},
                       {"ttft_s", c.prediction.ttft.v},
                       {"tpot_s", c.prediction.tpot.v},
                       {"output_tokens_per_s_per_gpu", c.prediction.output_tokens_per_s_per_gpu},
                       {"engine_args", args(p)}});
      }
      j["results"] = res;
      std::cout << j.dump(2) << "\n";
      return 0;
    }
    std::printf("serve search: %s on %d x %s, %s; input %d, output %d; targets TTFT %s, TPOT %s\n",
                ctx.model_name.c_str(), gpus_, t.system.gpu.name.c_str(), engine_name(ctx.engine).c_str(),
                wl_.input_len, wl_.output_len, targets_.ttft_ms > 0 ? (num(targets_.ttft_ms) + " ms").c_str() : "none",
                targets_.tpot_ms > 0 ? (num(targets_.tpot_ms) + " ms").c_str() : "none");
    print_search_notes(ctx);
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
                args(best).c_str());
    return 0;
  }

  std::string model_, gpu_, system_, engine_ = "vllm", weights_ = "bf16", moe_weights_, kv_ = "bf16", mode_ = "agg";
  std::string objective_ = "per-gpu", prices_;
  double price_ = 0;
  int gpus_ = 0, top_ = 10;
  Workload wl_;
  SearchTargets targets_;
  SharedServeFlags shared_;
  SpecFlags spec_;
  bool json_ = false;
};

}  // namespace

std::unique_ptr<Command> make_serve_search_command() { return std::make_unique<ServeSearchCommand>(); }

}  // namespace shardplan::cli
