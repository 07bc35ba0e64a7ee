// Validation against published, measured runs: a run's plan may leave fields unknown (null in the
// published-runs file). Plan fields take the fastest setting that fits, as the run's authors would have tuned them
// (design.md); software settings a framework's published recipes turn on by default (TP overlap, the fp8 recipe,
// fp8 parameter gathers, torch.compile, block recompute) take that default. Either way the resolution says which
// value it used and why, and brackets the prediction over every setting the source leaves open.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "modeler/estimate.h"
#include "modeler/framework.h"
#include "modeler/model_desc.h"
#include "modeler/system.h"

namespace shardplan {

/// A plan with some fields unknown (nullopt: the source does not say).
struct OpenPlan {
  Plan plan;  // known fields; unknown ones are placeholders
  std::optional<int> micro_batch;
  std::optional<bool> sequence_parallel;
  std::optional<Recompute> recompute;
  // Settings the framework's recipes decide when the source is silent (Framework recipe traits).
  std::optional<bool> tp_comm_overlap;
  std::optional<int> recompute_num_layers;  // full recompute of this many layers per chunk; 0: every layer
  std::optional<Fp8Recipe> fp8_recipe;
  std::optional<bool> fp8_param_gather;
  std::optional<bool> compiled;
  /// Context parallelism's K/V exchange (unset: the framework's recipe_cp_kind, the other in the bracket).
  std::optional<CpKind> cp_kind;
  /// MoE: the dispatcher is plan.moe_dispatcher (unset: open); combined-1F1B EP overlap (unset: open).
  std::optional<bool> ep_comm_overlap;
  /// The source states the selective-recompute modules (plan.recompute_modules holds them).
  bool recompute_modules_given = false;
};

/// The value used for one unknown field and the rule that chose it.
struct Choice {
  std::string field;  // "mbs", "sp", "recompute", "tp_overlap", "recompute_layers", "fp8_recipe", ...
  std::string value;
  std::string why;  // "fastest that fits", "recipe default", "pp micro-batches"
};

/// The spread of the prediction over every completion of the unknown fields (those that fit, or all valid ones
/// when none fits): a row whose source leaves much open has a wide bracket.
struct Bracket {
  double best_tokens_per_s_per_gpu = 0, worst_tokens_per_s_per_gpu = 0;
  int settings = 0;  // completions bracketed
};

struct Resolution {
  Estimate estimate;
  std::vector<Choice> choices;      // one per unknown field that matters for the plan
  std::vector<std::string> chosen;  // the same as text: "mbs=2 (fastest that fits)"
  Bracket bracket;
  int candidates = 0;  // plans evaluated
  bool fits = true;    // false when no candidate fits (the fastest is reported anyway)
};

/// Evaluates every completion of the unknown fields (micro-batch: divisors of gbs/dp up to 16; sequence
/// parallelism on/off when tp > 1; recompute none/selective/full; and, where the framework offers them, TP overlap
/// on/off at tp > 1, block recompute of 1..chunk-1 layers under full recompute, the fp8 recipes the GPU runs, fp8
/// parameter gathers on/off under ZeRO, compiled/eager). Returns the fastest completion that fits among those
/// taking the framework's recipe defaults (fw's recipe traits; every layer for block recompute), and the bracket
/// over all of them. An unknown micro-batch the framework sets itself is a recipe default too (torchtitan's
/// pipeline micro-batch, gbs / dp / pp); with `fastest_fit` it takes the fastest that fits like a free choice.
Resolution fastest_fitting(const ModelDesc& model, const System& system, const OpenPlan& open, const Framework& fw,
                           bool fastest_fit = false);

/// Mean absolute percentage error of predicted vs measured pairs, in percent.
double mape(const std::vector<double>& predicted, const std::vector<double>& measured);

}  // namespace shardplan
