// Pipeline parallelism with the 1F1B schedule (Narayanan et al. 2021, Sec. 2.2.1) and its interleaved variant
// (Sec. 2.2.2): with m micro-batches, p stages and v model chunks per rank, the bubble is (p-1)/v micro-batch
// times; the first stage holds p micro-batches of activations at its peak, times (1 + (p-1)/(p v)) when
// interleaved (Korthikanti et al. 2022, Sec. 4.2.3). Activations cross stage boundaries point to point, split over
// the tp ranks (Megatron's scatter/gather optimisation, Narayanan Sec. 4.1).
#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "modeler/pipeline_layout.h"
#include "modeler/strategies/strategy.h"

namespace shardplan {

namespace {

/// A custom layout's distinct rank loads in rank order, each with the lowest rank that holds it (of equal loads,
/// the one with the most micro-batches in flight).
struct RankLoad {
  int rank = 0;
  Sharding::StageLoad load;
};
std::vector<RankLoad> distinct_loads(const Context& ctx, const PipelineLayout& layout) {
  const std::vector<LayoutStage> ranks = rank_loads(layout, ctx.plan.pp);
  // Which decoder layers each rank holds: the layout's stages in model order, stage i on rank i % pp
  // (pipeline_layout.h), so the rank's MoE layers are counted by index (ModelDesc is_moe_layer).
  std::vector<int> moe_decoders(ranks.size(), 0);
  for (size_t i = 0, next = 0; i < layout.stages.size(); ++i)
    for (int j = 0; j < layout.stages[i].decoders; ++j, ++next)
      if (is_moe_layer(ctx.model, static_cast<int>(next))) ++moe_decoders[i % ranks.size()];
  auto same = [](const Sharding::StageLoad& a, const Sharding::StageLoad& b) {
    return a.layers == b.layers && a.ends.embedding == b.ends.embedding && a.ends.loss == b.ends.loss &&
           a.ends.mtp == b.ends.mtp && a.moe_layer_share == b.moe_layer_share;
  };
  std::vector<RankLoad> out;
  for (size_t i = 0; i < ranks.size(); ++i) {
    const LayoutStage& r = ranks[i];
    const double share = ctx.model.moe && r.decoders > 0 ? 1.0 * moe_decoders[i] / r.decoders : -1.0;
    const Sharding::StageLoad l{1.0 * (r.decoders + r.mtp), Sharding::StageEnds{r.embedding, r.loss, r.mtp}, share};
    bool seen = false;
    for (const RankLoad& k : out) seen = seen || same(k.load, l);
    if (!seen) out.push_back({static_cast<int>(i), l});
  }
  return out;
}

/// The pipeline rank whose load `sh` models: the lowest holding Sharding::rank_load of a custom layout; 0 otherwise.
int modelled_rank(const Context& ctx, const Sharding& sh) {
  if (ctx.plan.pipeline_layout.empty() || sh.rank_load <= 0) return 0;
  std::string error;
  const std::optional<PipelineLayout> layout = parse_pipeline_layout(ctx.plan.pipeline_layout, &error);
  if (!layout) return 0;
  const std::vector<RankLoad> loads = distinct_loads(ctx, *layout);
  return sh.rank_load < static_cast<int>(loads.size()) ? loads[sh.rank_load].rank : 0;
}

std::string layout_problem(const Context& ctx) {
  const Plan& p = ctx.plan;
  std::string error;
  const std::optional<PipelineLayout> layout = parse_pipeline_layout(p.pipeline_layout, &error);
  if (layout) error = pipeline_layout_violation(*layout, p.pp, p.vpp, ctx.model.layers, p.mtp_layers);
  return error.empty() ? "" : "pipeline_layout '" + p.pipeline_layout + "' " + error;
}

class PipelineParallel final : public Strategy {
 public:
  const char* name() const override { return "pp"; }

  void validate(const Context& ctx, Problems* problems) const override {
    const Plan& p = ctx.plan;
    if (p.pp < 1 || p.vpp < 1) {
      problems->push_back({"pp_range", "pp (" + std::to_string(p.pp) + ") and vpp (" + std::to_string(p.vpp) +
                                           ") must be at least 1"});
      return;
    }
    if (p.mtp_layers < 0 || p.mtp_layers > ctx.model.mtp_layers)
      problems->push_back({"mtp_layers", "mtp_layers (" + std::to_string(p.mtp_layers) + ") must be between 0 and the "
                                         "model's MTP modules (" + std::to_string(ctx.model.mtp_layers) + ")"});
    if ((p.mtp_layers > 0 || !p.pipeline_layout.empty()) && !ctx.framework.offers_mtp_and_layout)
      problems->push_back({"mtp_layout_unsupported", ctx.framework.name + " has no multi-token prediction or custom "
                                                     "pipeline layout (mtp_layers, pipeline_layout)"});
    if (!p.pipeline_layout.empty()) {
      // The layout fixes each stage's layers: no divisibility rule applies (empty stages are allowed).
      if (const std::string why = layout_problem(ctx); !why.empty()) problems->push_back({"pipeline_layout", why});
    } else if (ctx.model.layers % (p.pp * p.vpp) != 0 && !p.uneven_pipeline)
      problems->push_back({"pp_divides_layers", "pp x vpp (" + std::to_string(p.pp) + " x " + std::to_string(p.vpp) +
                                                    ") does not divide layers (" +
                                                    std::to_string(ctx.model.layers) +
                                                    "); --uneven-pp allows an uneven split"});
    if (p.pipeline_layout.empty() && ctx.model.layers < p.pp * p.vpp)
      problems->push_back({"pp_exceeds_layers", "pp x vpp (" + std::to_string(p.pp * p.vpp) +
                                                    ") exceeds layers (" + std::to_string(ctx.model.layers) + ")"});
    if (p.vpp > 1 && p.pp == 1)
      problems->push_back({"vpp_needs_pp", "vpp (" + std::to_string(p.vpp) + ") needs pp > 1"});
    // Megatron's interleaved schedule runs micro-batches in groups of pp.
    if (p.vpp > 1 && p.dp > 0 && p.micro_batch > 0 && p.num_microbatches() % p.pp != 0)
      problems->push_back({"vpp_microbatches", "interleaved schedule needs micro-batches per step (" +
                                                   std::to_string(p.num_microbatches()) +
                                                   ") divisible by pp (" + std::to_string(p.pp) + ")"});
  }

  void shard(const Context& ctx, Sharding* sh) const override {
    const Plan& p = ctx.plan;
    sh->stages = p.pp;
    sh->chunks = p.vpp;
    std::string error;
    const std::optional<PipelineLayout> layout =
        p.pipeline_layout.empty() ? std::nullopt : parse_pipeline_layout(p.pipeline_layout, &error);
    if (!layout) {
      sh->layers = std::ceil(sh->layers / (p.pp * p.vpp)) * p.vpp;  // the busiest stage when the split is uneven
      // Without a layout Megatron-Core builds every MTP module on the last rank's last chunk, with the loss
      // (core_v0.14.0 multi_token_prediction.py get_mtp_num_layers_to_build): that rank does the most.
      if (p.mtp_layers > 0) {
        sh->layers += p.mtp_layers;
        sh->ends = Sharding::StageEnds{p.pp == 1, true, p.mtp_layers};
      }
      return;
    }
    // A custom layout: each distinct rank load in rank order; the one Sharding::rank_load names is applied, and
    // evaluate() shards and runs each.
    sh->rank_loads.clear();
    for (const RankLoad& l : distinct_loads(ctx, *layout)) sh->rank_loads.push_back(l.load);
    SHARDPLAN_CHECK(sh->rank_load >= 0 && sh->rank_load < static_cast<int>(sh->rank_loads.size()));
    const Sharding::StageLoad& applied = sh->rank_loads[sh->rank_load];
    sh->layers = applied.layers;
    sh->ends = applied.ends;
    sh->moe_layer_share = applied.moe_layer_share;
  }

  void add_comm(const Context& ctx, const Sharding& sh, CommPlan* comm) const override {
    const Plan& p = ctx.plan;
    if (p.pp == 1) return;
    const Bytes act(sh.tokens * ctx.model.hidden * 2.0 / p.tp);
    const int stride = p.inner() * p.dp;  // pp is outermost in Megatron's rank order
    // Each chunk boundary sends activations forward and gradients backward; interleaving multiplies the
    // boundaries by v and Megatron overlaps those sends with compute (overlap_p2p_comm).
    const Window w = p.vpp > 1 ? Window::layer : Window::exposed;
    comm->microbatch.push_back({CommKind::pp, Collective::send_recv, act, 2, stride, 2.0 * p.vpp, w});
  }

  void schedule(const Context& ctx, const Sharding& sh, Schedule* s) const override {
    const Plan& p = ctx.plan;
    s->bubble_fraction = (p.pp - 1.0) / p.vpp;
    const double m = s->microbatches;
    const double held = std::min<double>(p.pp, m);
    // Interleaving holds (pp - 1) / (pp v) more (Narayanan et al. 2021), but the warm-up never exceeds the step's
    // m v chunk-micro-batches (Megatron-Core get_pp_rank_microbatches and torch.distributed.pipelining's
    // ScheduleInterleaved1F1B both cap it), so at most m micro-batches of the whole stage are held.
    s->in_flight = std::min(held * (p.vpp > 1 ? 1.0 + (p.pp - 1.0) / (p.pp * p.vpp) : 1.0), m);
    // A later rank of a custom layout (rank r > 0) warms up fewer micro-batches before its first backward
    // (Megatron-LM core_v0.14.0 (23e00ed0) megatron/core/pipeline_parallel/schedules.py get_pp_rank_microbatches:
    // pp - r - 1, or (pp - r - 1) x 2 + (v - 1) x pp chunk-micro-batches interleaved, at most the step's m v) and
    // holds one more through 1F1B: pp - r micro-batches, or pp v + pp - 1 - 2r chunk-micro-batches of 1/v of its
    // layers each (rank 0's count above).
    if (const int r = modelled_rank(ctx, sh); r > 0)
      s->in_flight = p.vpp > 1 ? std::min(p.pp * p.vpp + p.pp - 1.0 - 2.0 * r, m * p.vpp) / p.vpp
                               : std::min<double>(p.pp - r, m);
  }
};

}  // namespace

const Strategy& pipeline_parallel() {
  static const PipelineParallel s;
  return s;
}

}  // namespace shardplan
