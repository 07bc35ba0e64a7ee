#include "modeler/validation.h"

#include <algorithm>
#include <cmath>

#include "modeler/evaluate.h"
#include "modeler/moe_overlap.h"
#include "modeler/precision_recipe.h"

namespace shardplan {

namespace {
/// The micro-batch a framework sets by default when a run leaves it open, 0 where it is a free choice.
/// torchtitan@9dec370 torchtitan/parallelisms/pipelining_utils.py build_pipeline_schedule: n_microbatches =
/// experimental.pipeline_parallel_microbatches, or pipeline_parallel_degree when unset (config_manager.py: "The
/// default value will be the number of pipeline stages"); each rank's batch is split into that many.
int default_micro_batch(const Plan& p, const Framework& fw) {
  if (!fw.pp_microbatches_default_to_pp || p.pp <= 1 || p.dp < 1 || p.global_batch % p.dp != 0) return 0;
  const int per_rank = p.global_batch / p.dp;
  return per_rank % p.pp == 0 ? per_rank / p.pp : 0;
}

std::vector<int> micro_batch_choices(const Plan& p) {
  std::vector<int> out;
  if (p.dp < 1 || p.global_batch % p.dp != 0) return {1};
  const int per_rank = p.global_batch / p.dp;
  for (int m = 1; m <= 16 && m <= per_rank; ++m)
    if (per_rank % m == 0) out.push_back(m);
  return out.empty() ? std::vector<int>{1} : out;
}

/// One completion of the open plan: the plan, whether it runs compiled, and whether every recipe-decided setting
/// takes the framework's default (only those are candidates for the reported prediction).
struct Candidate {
  Plan plan;
  bool compiled = false;
  bool recipe_default = true;
};

/// Replaces every candidate by one copy per value of a field; `is_default(v)` marks the recipe's value.
template <class T, class Set, class IsDefault>
void expand(std::vector<Candidate>* cs, const std::vector<T>& values, Set set, IsDefault is_default) {
  std::vector<Candidate> out;
  out.reserve(cs->size() * values.size());
  for (const Candidate& c : *cs)
    for (const T& v : values) {
      Candidate d = c;
      if (!set(d, v)) continue;
      d.recipe_default = d.recipe_default && is_default(d, v);
      out.push_back(d);
    }
  *cs = std::move(out);
}
template <class T, class Set>
void expand(std::vector<Candidate>* cs, const std::vector<T>& values, Set set) {
  expand(cs, values, set, [](const Candidate&, const T&) { return true; });
}

std::string on_off(bool b) { return b ? "on" : "off"; }

/// Layers of the busiest pipeline chunk.
int chunk_layers(const ModelDesc& m, const Plan& p) {
  const int chunks = std::max(1, p.pp * p.vpp);
  return (m.layers + chunks - 1) / chunks;
}
}  // namespace

Resolution fastest_fitting(const ModelDesc& model, const System& system, const OpenPlan& open, const Framework& fw,
                           bool fastest_fit) {
  const Plan& base = open.plan;
  std::vector<Candidate> cs = {Candidate{base, fw.compiled_by_default, true}};
  // An unstated micro-batch the framework sets itself is a recipe default: the source ran it. The other
  // micro-batches stay in the bracket; with `fastest_fit` (or no framework default) every one is a candidate.
  const int framework_mbs = open.micro_batch || fastest_fit ? 0 : default_micro_batch(base, fw);
  std::vector<int> mbs_values = open.micro_batch ? std::vector<int>{*open.micro_batch} : micro_batch_choices(base);
  if (framework_mbs && std::find(mbs_values.begin(), mbs_values.end(), framework_mbs) == mbs_values.end())
    mbs_values.push_back(framework_mbs);
  expand(&cs, mbs_values, [](Candidate& c, int m) { return c.plan.micro_batch = m, true; },
         [framework_mbs](const Candidate&, int m) { return !framework_mbs || m == framework_mbs; });
  expand(&cs,
         open.sequence_parallel ? std::vector<bool>{*open.sequence_parallel}
         : base.tp > 1          ? std::vector<bool>{true, false}
                                : std::vector<bool>{false},
         [](Candidate& c, bool sp) { return c.plan.sequence_parallel = sp, true; });
  expand(&cs,
         open.recompute ? std::vector<Recompute>{*open.recompute}
                        : std::vector<Recompute>{Recompute::none, Recompute::selective, Recompute::full},
         [](Candidate& c, Recompute r) { return c.plan.recompute = r, true; });
  // MoE models: selective recompute also tries the module sets NVIDIA's MoE recipes run (issue 13): Megatron-Bridge
  // DeepSeek-V3 perf configs recompute mla_up_proj, or mla_up_proj and mlp (scripts/performance/configs/deepseek/
  // deepseek_v3_llm_pretrain.py); Megatron-MoE-ModelZoo's Qwen3 recipes recompute layernorm and moe_act
  // (best_practice/Qwen3/readme.md "norm, act"). Dense models keep Megatron's default (core_attn) alone.
  const bool modules_open = model.moe && fw.offers_recompute_modules && !open.recompute_modules_given;
  if (modules_open) {
    std::vector<unsigned> sets = {kRecomputeCoreAttn, kRecomputeLayernorm | kRecomputeMoeAct};
    if (model.mla) {
      sets.push_back(kRecomputeMlaUpProj);
      sets.push_back(kRecomputeMlaUpProj | kRecomputeMlp);
    }
    expand(&cs, sets, [](Candidate& c, unsigned set) {
      if (c.plan.recompute != Recompute::selective) return set == kRecomputeCoreAttn;
      return c.plan.recompute_modules = set, true;
    });
  }

  // Recipe-decided settings. Each is open only where it can change the plan's cost.
  const bool overlap_open = !open.tp_comm_overlap && base.tp > 1 && fw.offers_tp_overlap;
  const bool overlap_default = fw.recipe_tp_comm_overlap;
  if (open.tp_comm_overlap) {
    // A stated overlap is moot at tp 1 (no TP collective; Megatron disables sequence parallelism there, which
    // --tp-comm-overlap requires): sources that state it once for a whole table apply it where tp > 1.
    for (Candidate& c : cs) c.plan.tp_comm_overlap = *open.tp_comm_overlap && base.tp > 1;
  } else if (overlap_open) {
    expand(&cs, std::vector<bool>{overlap_default, !overlap_default},
           [](Candidate& c, bool on) { return c.plan.tp_comm_overlap = on, true; },
           [&](const Candidate&, bool on) { return on == overlap_default; });
  }
  // Context parallelism's K/V exchange, where a run leaves it unsaid: the framework's (Framework::recipe_cp_kind).
  const bool cp_kind_open = !open.cp_kind && base.cp > 1;
  if (open.cp_kind) {
    for (Candidate& c : cs) c.plan.cp_kind = *open.cp_kind;
  } else if (cp_kind_open) {
    const CpKind other = fw.recipe_cp_kind == CpKind::ring ? CpKind::allgather : CpKind::ring;
    expand(&cs, std::vector<CpKind>{fw.recipe_cp_kind, other},
           [](Candidate& c, CpKind k) { return c.plan.cp_kind = k, true; },
           [&](const Candidate&, CpKind k) { return k == fw.recipe_cp_kind; });
  }
  // Block recompute: Megatron's default (--recompute-method uniform, --recompute-num-layers 1) recomputes every
  // layer; the bracket spans full recompute of 1 .. chunk-1 layers where the framework offers the block method.
  const int layers = chunk_layers(model, base);
  const bool block_open = !open.recompute_num_layers && fw.offers_block_recompute && layers > 1;
  if (open.recompute_num_layers) {
    for (Candidate& c : cs) c.plan.recompute_layers = *open.recompute_num_layers;
  } else if (block_open) {
    std::vector<int> values = {0};
    for (int n = 1; n < layers; ++n) values.push_back(n);
    expand(
        &cs, values,
        [](Candidate& c, int n) {
          return (n == 0 || c.plan.recompute == Recompute::full) && (c.plan.recompute_layers = n, true);
        },
        [](const Candidate&, int n) { return n == 0; });
  }
  const bool quantized = quantized_gemms(base);
  const Fp8Recipe recipe_default = effective_fp8_recipe(Plan{base}, fw);
  if (quantized && open.fp8_recipe) {
    for (Candidate& c : cs) c.plan.fp8_recipe = *open.fp8_recipe;
  } else if (quantized) {
    // The recipes the GPU runs: microscaling formats (mxfp8, nvfp4) need block-scaled tensor cores, which the
    // GPUs with an fp4 peak have (Blackwell); fp4 GEMMs run nvfp4 only.
    std::vector<Fp8Recipe> recipes = {recipe_default};
    const bool microscaling = system.gpu.peak_for(Dtype::fp4).v > 0;
    if (base.precision == Dtype::fp8)
      for (Fp8Recipe r : {Fp8Recipe::delayed, Fp8Recipe::tensorwise, Fp8Recipe::blockwise, Fp8Recipe::mxfp8})
        if (r != recipe_default && (r != Fp8Recipe::mxfp8 || microscaling)) recipes.push_back(r);
    expand(&cs, recipes, [](Candidate& c, Fp8Recipe r) { return c.plan.fp8_recipe = r, true; },
           [&](const Candidate&, Fp8Recipe r) { return r == recipe_default; });
  }
  const bool gather_open = quantized && !open.fp8_param_gather && base.zero >= 1 && base.dp * base.cp > 1;
  if (quantized && open.fp8_param_gather) {
    for (Candidate& c : cs) c.plan.fp8_param_gather = *open.fp8_param_gather;
  } else if (gather_open) {
    expand(&cs, std::vector<bool>{fw.fp8_param_gather, !fw.fp8_param_gather},
           [](Candidate& c, bool on) { return c.plan.fp8_param_gather = on, true; },
           [&](const Candidate&, bool on) { return on == fw.fp8_param_gather; });
  }
  const bool compile_open = !open.compiled && fw.offers_compile;
  if (open.compiled) {
    for (Candidate& c : cs) c.compiled = *open.compiled;
  } else if (compile_open) {
    expand(&cs, std::vector<bool>{fw.compiled_by_default, !fw.compiled_by_default},
           [](Candidate& c, bool on) { return c.compiled = on, true; },
           [&](const Candidate&, bool on) { return on == fw.compiled_by_default; });
  }

  // MoE (issue 13, docs/moe.md). An unstated dispatcher is a recipe setting: the framework's default, or its
  // recipes' choice for dropless routing (Framework::recipe_dropless_dispatcher), with every other dispatcher it
  // offers in the bracket (invalid pairings, e.g. DeepEP with token drop padded to capacity, drop out).
  // Combined-1F1B EP overlap is a recipe setting too: Megatron-Bridge's performance recipes leave a2a_1f1b off
  // unless asked (scripts/performance/configs/*: moe_a2a / a2a_1f1b default False), so off, with on in the bracket.
  const bool moe_ep = model.moe && base.ep > 1;
  const bool dispatcher_open = moe_ep && !base.moe_dispatcher && fw.moe_dispatchers.size() > 1;
  const MoeDispatcher dispatcher_default = base.capacity_factor <= 0 && fw.recipe_dropless_dispatcher
                                               ? *fw.recipe_dropless_dispatcher
                                               : moe_dispatcher_of(base, fw);
  if (dispatcher_open)
    expand(&cs, fw.moe_dispatchers, [](Candidate& c, MoeDispatcher d) { return c.plan.moe_dispatcher = d, true; },
           [&](const Candidate&, MoeDispatcher d) { return d == dispatcher_default; });
  const bool ep_overlap_open = moe_ep && !open.ep_comm_overlap && fw.offers_ep_overlap;
  if (open.ep_comm_overlap) {
    for (Candidate& c : cs) c.plan.ep_comm_overlap = *open.ep_comm_overlap;
  } else if (ep_overlap_open) {
    expand(&cs, std::vector<bool>{false, true}, [](Candidate& c, bool on) { return c.plan.ep_comm_overlap = on, true; },
           [](const Candidate&, bool on) { return !on; });
  }

  const Framework fw_compiled = compiled(fw);
  Resolution best;
  bool have = false, have_fit = false;
  struct Outcome {
    double tokens;
    bool fits;
  };
  std::vector<Outcome> outcomes;
  Candidate chosen_candidate;
  for (const Candidate& c : cs) {
    Estimate e = evaluate(model, system, c.plan, c.compiled ? fw_compiled : fw);
    ++best.candidates;
    if (e.time.compute.v <= 0) continue;  // invalid (e.g. micro-batch vs interleaving)
    const bool fits = e.memory.fits();
    outcomes.push_back({e.tokens_per_s_per_gpu, fits});
    if (!c.recipe_default) continue;
    const bool better =
        !have || (fits && !have_fit) || (fits == have_fit && e.time.step() < best.estimate.time.step());
    if (better) {
      best.estimate = std::move(e);
      chosen_candidate = c;
      have = true;
      have_fit = fits;
    }
  }
  best.fits = have_fit;
  if (!have) best.estimate = evaluate(model, system, base, fw);  // reports the constraint problems
  const bool any_fit = std::any_of(outcomes.begin(), outcomes.end(), [](const Outcome& o) { return o.fits; });
  for (const Outcome& o : outcomes) {
    if (any_fit && !o.fits) continue;
    Bracket& b = best.bracket;
    b.best_tokens_per_s_per_gpu = b.settings ? std::max(b.best_tokens_per_s_per_gpu, o.tokens) : o.tokens;
    b.worst_tokens_per_s_per_gpu = b.settings ? std::min(b.worst_tokens_per_s_per_gpu, o.tokens) : o.tokens;
    ++b.settings;
  }

  const Plan& p = best.estimate.plan;
  const std::string fastest = "fastest that fits", recipe = "recipe default";
  auto choose = [&best](std::string field, std::string value, std::string why) {
    best.chosen.push_back(field + "=" + value + " (" + why + ")");
    best.choices.push_back({std::move(field), std::move(value), std::move(why)});
  };
  if (!open.micro_batch) choose("mbs", std::to_string(p.micro_batch), framework_mbs ? recipe + ", pp micro-batches" : fastest);
  if (!open.sequence_parallel && base.tp > 1) choose("sp", on_off(p.sequence_parallel), fastest);
  if (!open.recompute) choose("recompute", to_string(p.recompute), fastest);
  if (modules_open && p.recompute == Recompute::selective && p.recompute_modules != kRecomputeCoreAttn)
    choose("recompute_modules", recompute_modules_string(p.recompute_modules), fastest);
  if (have) {
    if (overlap_open) choose("tp_overlap", on_off(p.tp_comm_overlap), recipe);
    if (cp_kind_open) choose("cp_kind", to_string(p.cp_kind), recipe);
    if (block_open && p.recompute == Recompute::full) choose("recompute_layers", "all", recipe);
    if (quantized && !open.fp8_recipe) choose("fp8_recipe", to_string(*p.fp8_recipe), recipe);
    if (gather_open) choose("fp8_param_gather", on_off(*p.fp8_param_gather), recipe);
    if (compile_open) choose("compiled", chosen_candidate.compiled ? "yes" : "no", recipe);
    if (dispatcher_open && p.moe_dispatcher) choose("moe_dispatcher", to_string(*p.moe_dispatcher), recipe);
    if (ep_overlap_open) choose("ep_overlap", on_off(p.ep_comm_overlap), recipe);
  }
  return best;
}

double mape(const std::vector<double>& predicted, const std::vector<double>& measured) {
  if (predicted.empty()) return 0;
  double sum = 0;
  for (size_t i = 0; i < predicted.size(); ++i) sum += std::fabs(predicted[i] - measured[i]) / measured[i];
  return 100.0 * sum / static_cast<double>(predicted.size());
}

}  // namespace shardplan
