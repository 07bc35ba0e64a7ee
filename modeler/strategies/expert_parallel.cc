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
#include <cstdio>
#include <string>

#include "modeler/moe_dispatch.h"
#include "modeler/moe_overlap.h"
#include "modeler/stage_params.h"

#include "modeler/strategies/strategy.h"

namespace shardplan {

namespace {


constexpr double kTokenBytes = 2.0;  // dispatched hidden vectors in bf16 (Megatron's default; fp8 dispatch is opt-in)

bool offered(const Framework& f, MoeDispatcher d) {
  return std::find(f.moe_dispatchers.begin(), f.moe_dispatchers.end(), d) != f.moe_dispatchers.end();
}

std::string str(int v) { return std::to_string(v); }

int expert_data_parallel(const Plan& p) { return std::max(1, p.tp * p.tsp * p.cp * p.dp / (p.ep * p.etp)); }

double moe_layers(const ModelDesc& m) { return m.moe ? std::max(0, m.layers - m.moe->dense_layers) : 0; }

/// The dispatch and combine of one MoE layer, forward (dispatch, combine) and backward (the gradients of both, in
/// bf16: the backward of a dispatch is a combine-shaped transfer and the other way round).
void add_dispatch_comm(const Context& ctx, const Sharding& sh, double share, CommPlan* comm) {
  const ModelDesc& m = ctx.model;
  const Plan& p = ctx.plan;
  const MoeDispatcher d = moe_dispatcher_of(p, ctx.framework);
  const Window window = p.ep_comm_overlap ? Window::paired : Window::exposed;
  const double h = m.hidden, k = m.moe->top_k, tokens = sh.moe_tokens;
  const double row_d = dispatch_row_bytes(h, p.moe_fp8_dispatch), row_c = combine_row_bytes(h);
  if (d == MoeDispatcher::alltoall) {
    // One all-to-all per direction of every token-expert pair's row (the alltoall dispatcher does not merge the
    // pairs of one token that go to the same node): dispatch and combine, the same size in bf16.
    comm->layer_forward.push_back(
        {CommKind::ep, Collective::all_to_all, Bytes(tokens * k * row_c), p.ep, p.etp, 2.0 * share, window});
    comm->layer_backward.push_back(comm->layer_forward.back());
    return;
  }
  if (d == MoeDispatcher::allgather) {
    // All-gather of the EP group's tokens (the gathered output is ep x the rank's rows), reduce-scatter back.
    const Bytes gathered(tokens * p.ep * row_c);
    for (auto* pass : {&comm->layer_forward, &comm->layer_backward}) {
      pass->push_back({CommKind::ep, Collective::all_gather, gathered, p.ep, p.etp, share, window});
      pass->push_back({CommKind::ep, Collective::reduce_scatter, gathered, p.ep, p.etp, share, window});
    }
    return;
  }
  // DeepEP / HybridEP: node-deduplicated, the time from the dispatcher model (moe_dispatch.h).
  DedupCall call;
  call.place = ep_placement(ctx.system, p.ep, p.etp, d == MoeDispatcher::deepep);
  call.routing = {m.moe->experts, m.moe->top_k, p.moe_max_nodes};
  call.tokens = tokens;
  auto op = [&](double row, bool combine, double count) {
    call.row_bytes = row;
    call.combine = combine;
    const DispatchBytes b = dispatch_bytes_per_token(d, call.place, call.routing, row);
    CommOp o{CommKind::ep, Collective::all_to_all, Bytes(tokens * (b.nic + b.nvlink)), p.ep, p.etp, count, window};
    o.fixed_s = dedup_call_time(ctx.system, call).v;
    return o;
  };
  comm->layer_forward.push_back(op(row_d, false, share));
  comm->layer_forward.push_back(op(row_c, true, share));
  comm->layer_backward.push_back(op(row_c, true, share));
  comm->layer_backward.push_back(op(row_c, false, share));
}

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
    const MoeDispatcher d = moe_dispatcher_of(p, ctx.framework);
    if (!offered(ctx.framework, d))
      problems->push_back({"moe_dispatcher_unsupported", ctx.framework.name + " does not offer the " + to_string(d) +
                                                             " MoE token dispatcher (--moe-dispatcher)"});
    if (p.moe_max_nodes > 0 && !ctx.framework.offers_moe_max_nodes)
      problems->push_back({"moe_max_nodes_unsupported", ctx.framework.name + " does not offer node-limited "
                                                                            "routing (--moe-max-nodes)"});
    if (p.moe_max_nodes < 0)
      problems->push_back({"moe_max_nodes_range", "moe max nodes (" + str(p.moe_max_nodes) +
                                                      ") must be at least 0 (0: no node limit)"});
    if (p.moe_fp8_dispatch && !deduplicates_nodes(d))
      problems->push_back({"moe_fp8_dispatch_dispatcher",
                           "fp8 dispatch needs the deepep or hybridep dispatcher (not " + std::string(to_string(d)) +
                               "): Megatron-Core's alltoall and allgather dispatchers send bf16 rows"});
    if (d == MoeDispatcher::deepep && p.capacity_factor > 0)
      problems->push_back({"moe_deepep_capacity", "the deepep dispatcher cannot pad experts to a capacity factor "
                                                  "(token drop): Megatron-Core transformer_config.py refuses "
                                                  "moe_pad_expert_input_to_capacity with it"});
    if (p.ep_comm_overlap) {
      // Megatron-Core transformer_config.py __post_init__ (overlap_moe_expert_parallel_comm): the combined 1F1B
      // schedule needs a virtual pipeline when pp > 1, the alltoall or flex dispatcher, no full recompute and no
      // "moe" recompute module.
      if (p.pp > 1 && p.vpp <= 1)
        problems->push_back({"ep_overlap_needs_vpp", "--ep-overlap with pp " + str(p.pp) +
                                                         " needs an interleaved schedule (vpp > 1)"});
      if (d == MoeDispatcher::allgather)
        problems->push_back(
            {"ep_overlap_dispatcher", "--ep-overlap needs the alltoall, deepep or hybridep dispatcher"});
      if (p.recompute == Recompute::full)
        problems->push_back({"ep_overlap_full_recompute", "--ep-overlap cannot be combined with full recompute"});
      if (p.recompute == Recompute::selective && (p.recompute_modules & kRecomputeMoe))
        problems->push_back({"ep_overlap_recompute_moe", "--ep-overlap cannot recompute the moe module"});
    }
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
    // Per-layer ops repeat for every layer of the stage: the MoE layers' share of them (the rank's own where the
    // pipeline layout places the layers, Sharding::moe_layer_share).
    const double share = sh.moe_layer_share >= 0.0 ? sh.moe_layer_share : moe_layers(m) / m.layers;
    if (p.ep > 1) add_dispatch_comm(ctx, sh, share, comm);
    if (p.etp > 1) {
      const Bytes gathered(sh.moe_tokens * m.moe->top_k * m.hidden * kTokenBytes * p.etp);
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
