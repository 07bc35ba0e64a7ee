// Subnetwork data parallelism (Singh et al., arXiv 2507.09029; cost model derived in techniques.md section 2): each
// of the dp workers trains a structured subnetwork keeping a fraction rho (sdp_keep) of the transformer-layer
// parameters, with uniform coverage, so every parameter is held by k = rho x dp workers and its gradient is reduced
// among those k only (the data-parallel strategy reads holder_fraction). Embeddings and LM head are kept by every
// worker (block dropping keeps the residual path; the paper's treatment of them is unverified).
//   forward masking:  the worker neither stores nor runs the dropped parameters: weights, gradients, optimizer
//                     states, activations and compute scale by rho. Block granularity drops whole layers (the
//                     stage runs rho of its layers); neuron granularity drops heads and MLP columns in every layer.
//   backward masking: the forward pass uses all weights (weights, activations, forward compute unchanged); only the
//                     held parameters get gradients and optimizer states, and the backward GEMMs run for them:
//                     compute (2 + 4 rho) P per token.
// It changes what is trained (Plan::changes_training_semantics); accuracy is not modelled.
#include <cmath>

#include <cstdio>
#include <string>

#include "modeler/strategies/strategy.h"

namespace shardplan {

namespace {


class SubnetworkDataParallel final : public Strategy {
 public:
  const char* name() const override { return "sdp"; }

  void validate(const Context& ctx, Problems* problems) const override {
    const Plan& p = ctx.plan;
    const double rho = p.sdp_keep;
    if (!(rho > 0.0 && rho <= 1.0)) {
      problems->push_back({"sdp_keep_range", "sdp keep (" + num(rho) + ") must be in (0, 1]"});
      return;
    }
    if (rho == 1.0 || p.dp < 1) return;
    const double holders = rho * p.dp;
    if (holders < 1.0 || std::fabs(holders - std::round(holders)) > 1e-9)
      problems->push_back(
          {"sdp_holders", "sdp keep x dp (" + num(rho) + " x " + std::to_string(p.dp) +
                              ") must be a whole number of workers, at least 1, holding each parameter"});
  }

  void shard(const Context& ctx, Sharding* sh) const override {
    const Plan& p = ctx.plan;
    const double rho = p.sdp_keep;
    if (rho >= 1.0) return;
    sh->holder_fraction = rho;
    if (p.sdp_mask == SdpMask::backward) {
      sh->grad_fraction = rho;
      sh->backward_fraction = rho;
    } else if (p.sdp_granularity == SdpGranularity::block) {
      sh->layers *= rho;  // the busiest stage runs and holds rho of its layers on average
    } else {
      sh->heads *= rho;
      sh->kv_heads *= rho;
      sh->ffn *= rho;
      sh->expert_ffn *= rho;
      sh->shared_ffn *= rho;
      sh->weight_shard /= rho;
      sh->expert_weight_shard /= rho;
    }
  }

  void add_comm(const Context&, const Sharding&, CommPlan*) const override {}
  void schedule(const Context&, const Sharding&, Schedule*) const override {}
};

}  // namespace

const Strategy& subnetwork_data_parallel() {
  static const SubnetworkDataParallel s;
  return s;
}

}  // namespace shardplan
