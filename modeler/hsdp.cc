#include "modeler/hsdp.h"

#include <algorithm>
#include <string>

namespace shardplan {

namespace {

bool hsdp_on(const Plan& p) { return p.dp_shard > 0; }

void rewrite(const Plan& p, std::vector<CommOp>* ops) {
  const int dense_group = p.dp * p.cp, stride = p.tp * p.tsp;
  const int shard = hsdp_shard_group(p), replicas = hsdp_replicas(p);
  std::vector<CommOp> added;
  for (CommOp& op : *ops) {
    if (op.kind != CommKind::dp || op.group != dense_group || op.stride != stride) continue;
    op.group = shard;
    if (op.collective != Collective::reduce_scatter) continue;
    // The rank's reduced shard, all-reduced with the same shard of every replica (Megatron rank order: the shard
    // group is contiguous at stride tp, so its replicas sit shard x tp ranks apart).
    added.push_back(
        {CommKind::dp, Collective::all_reduce, op.bytes / shard, replicas, stride * shard, op.count, op.window});
  }
  ops->insert(ops->end(), added.begin(), added.end());
}

}  // namespace

int hsdp_shard_group(const Plan& p) { return (hsdp_on(p) ? p.dp_shard : p.dp) * p.cp; }

int hsdp_replicas(const Plan& p) { return hsdp_on(p) && p.dp_shard > 0 ? std::max(1, p.dp / p.dp_shard) : 1; }

void validate_hsdp(const Context& ctx, Problems* problems) {
  const Plan& p = ctx.plan;
  if (p.dp_shard == 0) return;
  const std::string named = "dp_shard (" + std::to_string(p.dp_shard) + ")";
  if (p.dp_shard < 0) {
    problems->push_back({"hsdp_range", named + " must be at least 1, or 0 for sharding over all of dp"});
    return;
  }
  if (p.dp % p.dp_shard != 0 || p.dp_shard >= p.dp)
    problems->push_back({"hsdp_divides_dp", named + " must divide dp (" + std::to_string(p.dp) +
                                                ") and be smaller: dp / dp_shard replicas of each shard group"});
  if (p.dp_shard * p.cp < 2)
    problems->push_back({"hsdp_range", named + " x cp (" + std::to_string(p.cp) +
                                           ") must be at least 2: a shard group of one rank is plain replication"});
  const auto& stages = ctx.framework.hsdp_zero_stages;
  if (stages.empty()) {
    problems->push_back({"hsdp_unsupported", ctx.framework.name + " does not shard hybrid (shard groups replicated)"});
  } else if (std::find(stages.begin(), stages.end(), p.zero) == stages.end()) {
    std::string list;
    for (int z : stages) list += (list.empty() ? "" : ", ") + std::to_string(z);
    problems->push_back({"hsdp_needs_zero", "hybrid sharding in " + ctx.framework.name + " runs at zero " + list +
                                                "; the plan has zero " + std::to_string(p.zero)});
  }
  if (p.ep > 1 || p.tsp > 1 || p.sdp_keep < 1.0)
    problems->push_back({"hsdp_combination",
                         "hybrid sharding with expert, folded (tsp) or subnetwork data "
                         "parallelism is not modelled"});
}

void apply_hsdp_sharding(const Context& ctx, Sharding* sh) {
  if (!hsdp_on(ctx.plan)) return;
  const double shard = hsdp_shard_group(ctx.plan);
  sh->dp_shard_optimizer = std::min(sh->dp_shard_optimizer, shard);
  sh->dp_shard_gradients = std::min(sh->dp_shard_gradients, shard);
  sh->dp_shard_weights = std::min(sh->dp_shard_weights, shard);
}

void apply_hsdp_comm(const Context& ctx, CommPlan* comm) {
  if (!hsdp_on(ctx.plan)) return;
  for (std::vector<CommOp>* ops : {&comm->layer_forward, &comm->layer_backward, &comm->microbatch, &comm->step})
    rewrite(ctx.plan, ops);
}

}  // namespace shardplan
