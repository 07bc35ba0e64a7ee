// Pipeline parallelism with the 1F1B schedule (Narayanan et al. 2021, Sec. 2.2.1) and its interleaved variant
// (Sec. 2.2.2): with m micro-batches, p stages and v model chunks per rank, the bubble is (p-1)/v micro-batch
// times; the first stage holds p micro-batches of activations at its peak, times (1 + (p-1)/(p v)) when
// interleaved (Korthikanti et al. 2022, Sec. 4.2.3). Activations cross stage boundaries point to point, split over
// the tp ranks (Megatron's scatter/gather optimisation, Narayanan Sec. 4.1).
#include <algorithm>
#include <cmath>

#include "modeler/strategies/strategy.h"

namespace shardplan {

namespace {

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
    if (ctx.model.layers % (p.pp * p.vpp) != 0 && !p.uneven_pipeline)
      problems->push_back({"pp_divides_layers", "pp x vpp (" + std::to_string(p.pp) + " x " + std::to_string(p.vpp) +
                                                    ") does not divide layers (" +
                                                    std::to_string(ctx.model.layers) +
                                                    "); --uneven-pp allows an uneven split"});
    if (ctx.model.layers < p.pp * p.vpp)
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
    const int chunks = ctx.plan.pp * ctx.plan.vpp;
    sh->layers = std::ceil(sh->layers / chunks) * ctx.plan.vpp;  // the busiest stage when the split is uneven
    sh->stages = ctx.plan.pp;
    sh->chunks = ctx.plan.vpp;
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

  void schedule(const Context& ctx, const Sharding&, Schedule* s) const override {
    const Plan& p = ctx.plan;
    s->bubble_fraction = (p.pp - 1.0) / p.vpp;
    const double m = s->microbatches;
    const double held = std::min<double>(p.pp, m);
    // Interleaving holds (pp - 1) / (pp v) more (Narayanan et al. 2021), but the warm-up never exceeds the step's
    // m v chunk-micro-batches (Megatron-Core get_pp_rank_microbatches and torch.distributed.pipelining's
    // ScheduleInterleaved1F1B both cap it), so at most m micro-batches of the whole stage are held.
    s->in_flight = std::min(held * (p.vpp > 1 ? 1.0 + (p.pp - 1.0) / (p.pp * p.vpp) : 1.0), m);
  }
};

}  // namespace

const Strategy& pipeline_parallel() {
  static const PipelineParallel s;
  return s;
}

}  // namespace shardplan
