#include "apps/serve_search_rank.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "modeler/io/serving_json.h"
#include "modeler/problems.h"

namespace shardplan::cli {

using namespace serving;

namespace {

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    const size_t comma = s.find(',', start);
    out.push_back(s.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) return out;
    start = comma + 1;
  }
}

std::string joined(const std::vector<std::string>& v, const char* sep) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : sep) + x;
  return s;
}

}  // namespace

std::vector<std::string> split_gpu_list(const std::string& list) {
  std::vector<std::string> out;
  for (const std::string& g : split(list)) {
    if (g.empty()) throw ConfigError("--gpu: empty GPU name in '" + list + "'");
    if (std::find(out.begin(), out.end(), g) != out.end()) throw ConfigError("--gpu: '" + g + "' is listed twice");
    out.push_back(g);
  }
  return out;
}

std::vector<double> gpu_prices(const std::vector<std::string>& gpus, double one_price, const std::string& price_list,
                               ServeObjective objective) {
  std::vector<double> price(gpus.size(), 0.0);
  if (one_price > 0 && !price_list.empty()) throw ConfigError("give --gpu-hour-price or --price, not both");
  if (one_price > 0) {
    if (gpus.size() > 1)
      throw ConfigError("--gpu-hour-price: " + std::to_string(gpus.size()) +
                        " GPU types in --gpu; price each with "
                        "--price NAME=P,...");
    price[0] = one_price;
  }
  if (!price_list.empty()) {
    std::vector<bool> seen(gpus.size(), false);
    for (const std::string& e : split(price_list)) {
      const size_t eq = e.find('=');
      if (eq == std::string::npos || eq == 0 || eq + 1 == e.size())
        throw ConfigError("--price: expected NAME=PRICE, got '" + e + "'");
      const std::string name = e.substr(0, eq), value = e.substr(eq + 1);
      const auto it = std::find(gpus.begin(), gpus.end(), name);
      if (it == gpus.end())
        throw ConfigError("--price: '" + name + "' is not one of --gpu (" + joined(gpus, ", ") + ")");
      const size_t i = static_cast<size_t>(it - gpus.begin());
      if (seen[i]) throw ConfigError("--price: '" + name + "' is priced twice");
      double p = 0;
      size_t used = 0;
      try {
        p = std::stod(value, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used != value.size() || !std::isfinite(p) || p <= 0)
        throw ConfigError("--price: " + name + "'s price must be a positive number, got '" + value + "'");
      price[i] = p;
      seen[i] = true;
    }
    for (size_t i = 0; i < gpus.size(); ++i)
      if (!seen[i]) throw ConfigError("--price: no price for GPU '" + gpus[i] + "' (every --gpu type needs one)");
  }
  if (objective == ServeObjective::per_dollar &&
      std::all_of(price.begin(), price.end(), [](double p) { return p <= 0; }))
    throw ConfigError(
        "--objective per-dollar needs a price: --gpu-hour-price P (one GPU type) or --price NAME=P,... "
        "(several); shardplan ships no prices");
  return price;
}

std::vector<RankedPlan> rank_plans(const std::vector<TypeSearch>& types, ServeObjective objective, int gpus) {
  std::vector<RankedPlan> rows;
  for (size_t t = 0; t < types.size(); ++t) {
    // Aggregated plans use every GPU (gpus % worker size == 0), so their per-GPU figure is already per GPU given.
    for (const auto& c : types[t].agg.ranked)
      rows.push_back({t, &c, nullptr, c.prediction.output_tokens_per_s_per_gpu});
    for (const auto& c : types[t].disagg.ranked) rows.push_back({t, nullptr, &c, c.output_tokens_per_s_per_gpu_budget});
  }
  for (RankedPlan& r : rows) r.score = objective_score(objective, {r.per_gpu, gpus, types[r.type].price});
  std::stable_sort(rows.begin(), rows.end(),
                   [](const RankedPlan& x, const RankedPlan& y) { return x.score > y.score; });
  return rows;
}

namespace {

std::string shape(const WorkerPlan& w, bool pp) {
  std::string s = "tp" + std::to_string(w.tp);
  if (pp) s += " pp" + std::to_string(w.pp);
  if (w.attention_dp > 1) s += " adp" + std::to_string(w.attention_dp);
  if (w.moe_ep > 1) s += " ep" + std::to_string(w.moe_ep);
  return s + " b" + std::to_string(w.batch.value_or(0));
}

nlohmann::json pool_json(const WorkerPlan& p) {
  return {{"workers", p.workers},
          {"tp", p.tp},
          {"pp", p.pp},
          {"attention_dp", p.attention_dp},
          {"moe_tp", p.moe_tp},
          {"moe_ep", p.moe_ep},
          {"batch", p.batch.value_or(0)},
          {"gpus", p.gpus() * p.workers}};
}

bool priced(const std::vector<TypeSearch>& types) {
  return std::any_of(types.begin(), types.end(), [](const TypeSearch& t) { return t.price > 0; });
}

// Output beyond today's single-type per-GPU table: a GPU column, prices, or another objective.
bool extended(const RankContext& ctx, const std::vector<TypeSearch>& types) {
  return types.size() > 1 || priced(types) || ctx.objective != ServeObjective::per_gpu;
}

// Launch arguments: an aggregated worker and the decode pool run the speculative decoding; the prefill pool
// emits the first token only.
std::string args(const RankContext& ctx, const WorkerPlan& w, bool spec) {
  return engine_args(ctx.engine, ctx.model_arg, w, ctx.kv_fp8, spec ? ctx.spec : SpecDecode{}, ctx.draft_name,
                     ctx.extras);
}

nlohmann::json searches_json(const RankContext& ctx, const TypeSearch& t) {
  nlohmann::json j;
  if (ctx.mode != "disagg") j["agg"] = {{"evaluated", t.agg.evaluated}, {"rejected", t.agg.rejected}};
  if (ctx.mode != "agg")
    j["disagg"] = {{"evaluated", t.disagg.evaluated},
                   {"rejected", t.disagg.rejected},
                   {"prefill_batch", t.prefill_batch},
                   {"prefill_shapes", t.disagg.prefill_shapes},
                   {"prefill_shapes_kept", t.disagg.prefill_shapes_kept}};
  return j;
}

}  // namespace

nlohmann::json ranked_json(const RankContext& ctx, const std::vector<TypeSearch>& types,
                           const std::vector<RankedPlan>& rows) {
  const bool ext = extended(ctx, types), several = types.size() > 1;
  nlohmann::json j{{"schema_version", 1},
                   {"context",
                    {{"command", "serve search"},
                     {"model", ctx.model_arg},
                     {"gpus", ctx.gpus},
                     {"engine", engine_name(ctx.engine)},
                     {"mode", ctx.mode}}}};
  if (ext) j["context"]["objective"] = to_string(ctx.objective);
  if (!ctx.transforms.empty()) j["context"]["transforms"] = ctx.transforms;
  if (several) {
    nlohmann::json s = nlohmann::json::array();
    for (const TypeSearch& t : types) {
      nlohmann::json e = searches_json(ctx, t);
      e["gpu"] = t.name;
      e["gpu_hour_price"] = t.price > 0 ? nlohmann::json(t.price) : nlohmann::json(nullptr);
      s.push_back(e);
    }
    j["searches"] = s;
  } else {
    j.update(searches_json(ctx, types.front()));
    if (types.front().price > 0) j["context"]["gpu_hour_price"] = types.front().price;
  }
  nlohmann::json res = nlohmann::json::array();
  for (size_t i = 0; i < rows.size() && static_cast<int>(i) < ctx.top; ++i) {
    const RankedPlan& r = rows[i];
    const ServePrediction& p = r.pred();
    nlohmann::json e{{"ttft_s", p.ttft.v},
                     {"tpot_s", p.tpot.v},
                     {"output_tokens_per_s_per_gpu", r.per_gpu},
                     {"output_tokens_per_s_per_gpu_used", p.output_tokens_per_s_per_gpu}};
    if (ext) {
      e["output_tokens_per_s"] = r.per_gpu * ctx.gpus;
      if (several) e["gpu"] = types[r.type].name;
      const double price = types[r.type].price;
      e["cost_per_mtok"] = price > 0 ? nlohmann::json(cost_per_mtok(price, r.per_gpu)) : nlohmann::json(nullptr);
    }
    if (r.agg) {
      const WorkerPlan& w = r.agg->plan.agg;
      e.update({{"mode", "agg"},
                {"plan", pool_json(w)},
                {"concurrency", r.agg->concurrency},
                {"gpus_used", ctx.gpus},
                {"idle_gpus", 0},
                {"engine_args", args(ctx, w, true)}});
    } else {
      const DisaggCandidate& c = *r.dis;
      const DisaggLaunch l = disagg_launch(ctx.engine, c.plan.prefill.workers, c.plan.decode.workers);
      e.update({{"mode", "disagg"},
                {"prefill", pool_json(c.plan.prefill)},
                {"decode", pool_json(c.plan.decode)},
                {"concurrency", c.concurrency},
                {"gpus_used", c.gpus_used},
                {"idle_gpus", c.idle_gpus},
                {"prefill_capacity_rps", c.prefill_capacity_rps},
                {"request_rate_rps", c.request_rate_rps},
                {"kv_transfer",
                 c.prediction.kv_transfer ? io::kv_transfer_json(*c.prediction.kv_transfer) : nlohmann::json(nullptr)},
                {"engine_args",
                 {{"prefill", args(ctx, c.plan.prefill, false) + l.prefill_flags},
                  {"decode", args(ctx, c.plan.decode, true) + l.decode_flags},
                  {"router", l.router}}}});
    }
    res.push_back(e);
  }
  j["results"] = res;
  return j;
}

void print_search_notes(const RankContext& ctx) {
  if (!ctx.weights_note.empty()) std::printf("weights: %s\n", ctx.weights_note.c_str());
  if (!ctx.transforms.empty())
    std::printf(
        "transforms: %s (bytes and FLOPs only; accuracy is not modelled; --model must name the "
        "transformed checkpoint)\n",
        ctx.transforms.c_str());
  if (ctx.workload.prefix_hit > 0)
    std::printf("prefix cache: %s of each prompt hits\n", num(ctx.workload.prefix_hit).c_str());
}

void print_ranked(const RankContext& ctx, const std::vector<TypeSearch>& types, const std::vector<RankedPlan>& rows) {
  const bool several = types.size() > 1, prices = priced(types), total = ctx.objective == ServeObjective::throughput;
  std::vector<std::string> names;
  for (const TypeSearch& t : types) names.push_back(several ? t.name : t.system.gpu.name);
  const SearchTargets& tg = ctx.targets;
  std::printf("serve search (%s): %s on %d x %s, %s; input %d, output %d; targets TTFT %s, TPOT %s\n", ctx.mode.c_str(),
              ctx.model_name.c_str(), ctx.gpus, joined(names, " | ").c_str(), engine_name(ctx.engine).c_str(),
              ctx.workload.input_len, ctx.workload.output_len,
              tg.ttft_ms > 0 ? (num(tg.ttft_ms) + " ms").c_str() : "none",
              tg.tpot_ms > 0 ? (num(tg.tpot_ms) + " ms").c_str() : "none");
  if (extended(ctx, types)) std::printf("objective: %s\n", to_string(ctx.objective));
  print_search_notes(ctx);
  std::printf("%4s ", "rank");
  if (several) std::printf("%-16s ", "gpu");
  std::printf("%-6s %-42s %4s %4s %6s %9s %8s %10s %10s", "mode", "plan", "used", "idle", "conc", "TTFT ms", "TPOT ms",
              "tok/s/GPU", "(per used)");
  if (prices) std::printf(" %9s", "$/Mtok");
  if (total) std::printf(" %11s", "tok/s");
  std::printf("\n");
  for (size_t i = 0; i < rows.size() && static_cast<int>(i) < ctx.top; ++i) {
    const RankedPlan& r = rows[i];
    std::string plan;
    int used = ctx.gpus, idle = 0, conc = 0;
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
    std::printf("%4zu ", i + 1);
    if (several) std::printf("%-16s ", types[r.type].name.c_str());
    std::printf("%-6s %-42s %4d %4d %6d %9.1f %8.2f %10.1f %10.1f", r.agg ? "agg" : "disagg", plan.c_str(), used, idle,
                conc, to_ms(p.ttft), to_ms(p.tpot), r.per_gpu, p.output_tokens_per_s_per_gpu);
    if (prices) {
      const double price = types[r.type].price;
      if (price > 0)
        std::printf(" %9.3f", cost_per_mtok(price, r.per_gpu));
      else
        std::printf(" %9s", "-");
    }
    if (total) std::printf(" %11.0f", r.per_gpu * ctx.gpus);
    std::printf("\n");
  }
  auto rejected = [](const std::map<std::string, int>& m) {
    for (const auto& [why, n] : m) std::printf(" %s %d", why.c_str(), n);
    std::printf("\n");
  };
  for (const TypeSearch& t : types) {
    const std::string who = several ? t.name + ": " : "";
    if (ctx.mode != "disagg") {
      std::printf("%saggregated: evaluated %d candidates; rejected:", who.c_str(), t.agg.evaluated);
      rejected(t.agg.rejected);
    }
    if (ctx.mode != "agg") {
      std::printf(
          "%sdisaggregated: evaluated %d candidates (prefill batch %d prompts per step, %d of %d prefill "
          "shapes kept); rejected:",
          who.c_str(), t.disagg.evaluated, t.prefill_batch, t.disagg.prefill_shapes_kept, t.disagg.prefill_shapes);
      rejected(t.disagg.rejected);
    }
  }
  if (ctx.mode != "agg")
    std::printf(
        "tok/s/GPU is per GPU of --gpus (idle GPUs count against a plan); disaggregated TTFT includes the KV "
        "transfer between the pools\n");
  if (prices) {
    std::printf("$/Mtok = price per GPU-hour x 1e6 / (3600 x tok/s/GPU), at");
    for (const TypeSearch& t : types)
      if (t.price > 0) std::printf(" %s %s", t.name.c_str(), num(t.price).c_str());
    std::printf(" per GPU-hour (prices as given; none is shipped)\n");
  }
  if (rows.empty()) throw Infeasible("no plan meets the targets (rejections above)");
  const RankedPlan& best = rows.front();
  const std::string on = several ? " on " + types[best.type].name + "," : "";
  if (best.agg) {
    const WorkerPlan& w = best.agg->plan.agg;
    std::printf("\nbest plan,%s aggregated, per replica (run %d replicas behind a router):\n  %s\n", on.c_str(),
                w.workers, args(ctx, w, true).c_str());
    return;
  }
  const DisaggCandidate& c = *best.dis;
  const DisaggLaunch l = disagg_launch(ctx.engine, c.plan.prefill.workers, c.plan.decode.workers);
  std::printf("\nbest plan,%s disaggregated %dP%dD on %d GPUs (%d idle):\n", on.c_str(), c.plan.prefill.workers,
              c.plan.decode.workers, c.gpus_used, c.idle_gpus);
  std::printf("  prefill, each of %d workers (%s):\n    %s%s\n", c.plan.prefill.workers,
              shape(c.plan.prefill, true).c_str(), args(ctx, c.plan.prefill, false).c_str(), l.prefill_flags.c_str());
  std::printf("  decode, each of %d workers (%s):\n    %s%s\n", c.plan.decode.workers,
              shape(c.plan.decode, false).c_str(), args(ctx, c.plan.decode, true).c_str(), l.decode_flags.c_str());
  std::printf("  router:\n    %s\n", l.router.c_str());
  if (const auto& t = c.prediction.kv_transfer)
    std::printf("  KV transfer per request: %.1f MiB, %.3f ms (%.3f ms added to TTFT); %s\n", t->shards.moved.v / kMiB,
                to_ms(t->time), to_ms(t->exposed), t->placement.c_str());
}

}  // namespace shardplan::cli
