// Expert parallelism as Megatron-Core lays it out ("MoE parallel folding", Megatron-Core moe/README and
// parallel_state.initialize_model_parallel): attention layers use the tp x cp x dp x pp mesh; MoE layers use a
// second mesh etp x ep x edp x pp over the same ranks, so ep x etp must divide tp x cp x dp (not dp alone), and the
// expert-data-parallel group has edp = tp x cp x dp / (ep x etp) ranks. The expert mesh's rank order is
// "tp-ep-dp-pp" with etp in the tp slot: an EP group's members sit at stride etp, an EDP group's at ep x etp.
//
// Per MoE layer and micro-batch, each rank routes its own sequence shard (tokens / tp: Megatron-Core requires
// sequence parallelism with MoE and tp > 1) to top_k experts: the all-to-all token dispatcher sends every
// token-expert pair's hidden vector to the expert's EP rank (dispatch) and back (combine), in 16 bits; backward
// repeats both with gradients. With etp > 1 the pairs are all-gathered inside the ETP group after dispatch and
// reduce-scattered before combine. Routed-expert weights are split over ep x etp; their gradients and ZeRO
// states over the EDP group.
#include <algorithm>

#include "modeler/stage_params.h"
#include <cstdio>
#include <string>

#include "modeler/strategies/strategy.h"

namespace shardplan {

namespace {


constexpr double kTokenBytes = 2.0;  // dispatched hidden vectors in bf16 (Megatron's default; fp8 dispatch is opt-in)

std::string str(int v) { return std::to_string(v); }

int expert_data_parallel(const Plan& p) { return std::max(1, p.tp * p.tsp * p.cp * p.dp / (p.ep * p.etp)); }

double moe_layers(const ModelDesc& m) { return m.moe ? std::max(0, m.layers - m.moe->dense_layers) : 0; }

class ExpertParallel final : public Strategy {
 public:
  const char* name() const override { return "ep"; }

  void validate(const Context& ctx, Problems* problems) const override {
    const Plan& p = ctx.plan;
    const ModelDesc& m = ctx.model;
    if (p.ep < 1 || p.etp < 1) {
      problems->push_back({"ep_range", "ep (" + str(p.ep) + ") and etp (" + str(p.etp) + ") must be at least 1"});
      return;
    }
    if (p.ep_comm_overlap && !ctx.framework.offers_ep_overlap)
      problems->push_back({"ep_overlap_unsupported", ctx.framework.name + " does not overlap MoE all-to-all with "
                                                                         "another micro-batch (--ep-overlap)"});
    if (!(p.moe_imbalance >= 1.0))
      problems->push_back({"moe_imbalance_range", "moe imbalance (" + num(p.moe_imbalance) +
                                                      ") must be at least 1 (1: perfectly balanced experts)"});
    if (!(p.capacity_factor >= 0.0))
      problems->push_back({"capacity_factor_range", "capacity factor (" + num(p.capacity_factor) +
                                                        ") must be positive (or 0 for dropless routing)"});
    if (!m.moe) {
      if (p.ep > 1) problems->push_back({"ep_needs_moe", "ep (" + str(p.ep) + ") needs a mixture-of-experts model"});
      return;
    }
    if (m.moe->experts % p.ep != 0)
      problems->push_back({"ep_divides_experts",
                           "ep (" + str(p.ep) + ") does not divide experts (" + str(m.moe->experts) + ")"});
    if (m.moe->expert_ffn_hidden % p.etp != 0)
      problems->push_back({"etp_divides_expert_ffn", "etp (" + str(p.etp) + ") does not divide expert_ffn_hidden (" +
                                                         str(m.moe->expert_ffn_hidden) + ")"});
    const int ranks = p.tp * p.tsp * p.cp * p.dp;
    if (ranks % (p.ep * p.etp) != 0)
      problems->push_back({"ep_folding", "ep x etp (" + str(p.ep) + " x " + str(p.etp) +
                                             ") does not divide the ranks of a pipeline stage, tp x cp x dp (" +
                                             str(ranks) + ")"});
  }

  void shard(const Context& ctx, Sharding* sh) const override {
    const ModelDesc& m = ctx.model;
    const Plan& p = ctx.plan;
    if (!m.moe) return;
    const MoeDesc& e = *m.moe;
    sh->moe_tokens = sh->tokens / p.tp;
    sh->local_experts = 1.0 * e.experts / p.ep;
    sh->expert_ffn = 1.0 * e.expert_ffn_hidden / p.etp;
    const double shared = e.shared_expert_ffn_hidden > 0 ? e.shared_expert_ffn_hidden : e.expert_ffn_hidden;
    sh->shared_ffn = e.shared_experts * shared / p.tp;
    // Pairs per rank: its tokens x top_k on average (conserved over the EP group), x etp for the ETP group's
    // gathered tokens; the busiest expert runs at the load factor: the imbalance for dropless routing, capped
    // by the capacity factor when tokens beyond capacity are dropped.
    const double load = p.capacity_factor > 0 ? std::min(p.moe_imbalance, p.capacity_factor) : p.moe_imbalance;
    sh->expert_tokens = sh->moe_tokens * e.top_k * p.etp * load;
    sh->expert_weight_shard = 1.0 * p.ep * p.etp;
    const double edp = expert_data_parallel(p);
    if (p.zero >= 1) sh->edp_shard_optimizer = edp;
    if (p.zero >= 2) sh->edp_shard_gradients = edp;
    if (p.zero >= 3) sh->edp_shard_weights = edp;
    // The dispatcher's permuted-token and all-to-all output buffers of the layer in flight.
    sh->transient_bytes += 2.0 * sh->expert_tokens * m.hidden * kTokenBytes;
  }

  void add_comm(const Context& ctx, const Sharding& sh, CommPlan* comm) const override {
    const ModelDesc& m = ctx.model;
    const Plan& p = ctx.plan;
    if (!m.moe || m.layers <= 0) return;
    // Per-layer ops repeat for every layer of the stage: the MoE layers' share of them.
    const double share = moe_layers(m) / m.layers;
    const Bytes routed(sh.moe_tokens * m.moe->top_k * m.hidden * kTokenBytes);
    if (p.ep > 1) {
      for (auto* pass : {&comm->layer_forward, &comm->layer_backward})
        pass->push_back({CommKind::ep, Collective::all_to_all, routed, p.ep, p.etp, 2.0 * share,
                         p.ep_comm_overlap ? Window::layer : Window::exposed});
    }
    if (p.etp > 1) {
      const Bytes gathered = routed * p.etp;
      for (auto* pass : {&comm->layer_forward, &comm->layer_backward}) {
        pass->push_back({CommKind::ep, Collective::all_gather, gathered, p.etp, 1, share, Window::exposed});
        pass->push_back({CommKind::ep, Collective::reduce_scatter, gathered, p.etp, 1, share, Window::exposed});
      }
    }
    // Routed-expert gradients are reduced over the expert-data-parallel group (the non-expert ones by dp).
    const double experts = busiest_stage_params(ctx, sh).experts;
    add_gradient_sync(ctx, experts, experts, sh.layers, expert_data_parallel(p), p.ep * p.etp, comm);
  }

  void schedule(const Context&, const Sharding&, Schedule*) const override {}
};

}  // namespace

const Strategy& expert_parallel() {
  static const ExpertParallel s;
  return s;
}

}  // namespace shardplan
