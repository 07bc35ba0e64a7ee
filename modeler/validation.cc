#include "modeler/validation.h"

#include <algorithm>
#include <cmath>

#include "modeler/evaluate.h"
#include "modeler/precision_recipe.h"

namespace shardplan {

namespace {
/// The micro-batch a framework sets by default when a run leaves it open, 0 where it is a free choice.
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
                           bool framework_defaults) {
  const Plan& base = open.plan;
  std::vector<Candidate> cs = {Candidate{base, fw.compiled_by_default, true}};
  const int framework_mbs = open.micro_batch || !framework_defaults ? 0 : default_micro_batch(base, fw);
  expand(&cs,
         open.micro_batch ? std::vector<int>{*open.micro_batch}
         : framework_mbs  ? std::vector<int>{framework_mbs}
                          : micro_batch_choices(base),
         [](Candidate& c, int m) { return c.plan.micro_batch = m, true; });
  expand(&cs,
         open.sequence_parallel ? std::vector<bool>{*open.sequence_parallel}
         : base.tp > 1          ? std::vector<bool>{true, false}
                                : std::vector<bool>{false},
         [](Candidate& c, bool sp) { return c.plan.sequence_parallel = sp, true; });
  expand(&cs,
         open.recompute ? std::vector<Recompute>{*open.recompute}
                        : std::vector<Recompute>{Recompute::none, Recompute::selective, Recompute::full},
         [](Candidate& c, Recompute r) { return c.plan.recompute = r, true; });

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
  if (!open.micro_batch) choose("mbs", std::to_string(p.micro_batch), framework_mbs ? "pp micro-batches" : fastest);
  if (!open.sequence_parallel && base.tp > 1) choose("sp", on_off(p.sequence_parallel), fastest);
  if (!open.recompute) choose("recompute", to_string(p.recompute), fastest);
  if (have) {
    if (overlap_open) choose("tp_overlap", on_off(p.tp_comm_overlap), recipe);
    if (block_open && p.recompute == Recompute::full) choose("recompute_layers", "all", recipe);
    if (quantized && !open.fp8_recipe) choose("fp8_recipe", to_string(*p.fp8_recipe), recipe);
    if (gather_open) choose("fp8_param_gather", on_off(*p.fp8_param_gather), recipe);
    if (compile_open) choose("compiled", chosen_candidate.compiled ? "yes" : "no", recipe);
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
