// Data parallelism with ZeRO (Rajbhandari et al. 2020): stage 1 shards optimizer states over the data-parallel
// group, stage 2 also gradients, stage 3 (FSDP FULL_SHARD) also parameters. Megatron-Core reduces gradients over
// dp x cp ranks (context-parallel ranks hold the same weights) at stride tp.
//   zero 0: all-reduce of the gradient buffer once per step, bucketed and overlapped with the last backward.
//   zero 1: reduce-scatter of gradients + all-gather of updated parameters per step (Megatron distributed optimizer;
//           the all-gather overlaps the next forward with --overlap-param-gather).
//   zero 2: gradients reduce-scattered after every micro-batch's backward (no full gradient buffer is kept).
//   zero 3: parameters all-gathered before each layer in forward (and again in backward when resharded after
//           forward), gradients reduce-scattered per micro-batch; both prefetched behind compute.
#include <algorithm>
#include <cmath>

#include "modeler/finetune.h"
#include "modeler/precision_recipe.h"
#include "modeler/stage_params.h"
#include "modeler/strategies/strategy.h"

namespace shardplan {

namespace {

constexpr double kGatherBytes = 2.0;  // parameters are gathered in the 16-bit compute dtype

class DataParallel final : public Strategy {
 public:
  const char* name() const override { return "dp"; }

  void validate(const Context& ctx, Problems* problems) const override {
    const Plan& p = ctx.plan;
    if (p.dp < 1 || p.micro_batch < 1 || p.global_batch < 1) {
      problems->push_back({"dp_range", "dp (" + std::to_string(p.dp) + "), micro_batch (" +
                                           std::to_string(p.micro_batch) + ") and global_batch (" +
                                           std::to_string(p.global_batch) + ") must be at least 1"});
      return;
    }
    if (p.global_batch % (1LL * p.micro_batch * p.dp) != 0)  // 64-bit: each factor is at most 2^24
      problems->push_back({"dp_divides_batch", "micro_batch x dp (" + std::to_string(p.micro_batch) + " x " +
                                                   std::to_string(p.dp) + ") does not divide global_batch (" +
                                                   std::to_string(p.global_batch) + ")"});
    if (p.zero < 0 || p.zero > 3) {
      problems->push_back({"zero_range", "zero (" + std::to_string(p.zero) + ") must be 0, 1, 2 or 3"});
    } else if (std::find(ctx.framework.zero_stages.begin(), ctx.framework.zero_stages.end(), p.zero) ==
               ctx.framework.zero_stages.end()) {
      std::string stages;
      for (int z : ctx.framework.zero_stages) stages += (stages.empty() ? "" : ", ") + std::to_string(z);
      problems->push_back({"zero_unsupported", "zero " + std::to_string(p.zero) + " is not offered by " +
                                                   ctx.framework.name + " (stages " + stages + ")"});
    }
  }

  void shard(const Context& ctx, Sharding* sh) const override {
    const double group = 1.0 * ctx.plan.dp * ctx.plan.cp;
    if (ctx.plan.zero >= 1) sh->dp_shard_optimizer = group;
    if (ctx.plan.zero >= 2) sh->dp_shard_gradients = group;
    if (ctx.plan.zero >= 3) sh->dp_shard_weights = group;
  }

  void add_comm(const Context& ctx, const Sharding& sh, CommPlan* comm) const override {
    const Plan& p = ctx.plan;
    const StageParams params = busiest_stage_params(ctx, sh);
    const int group = p.dp * p.cp, stride = p.tp * p.tsp;
    if (sh.holder_fraction >= 1.0) {
      add_gradient_sync(ctx, params.dense(), params.layers, sh.layers, group, stride, comm);
      return;
    }
    // Subnetwork data parallelism: each layer parameter is held by k = keep x dp workers (with their cp ranks)
    // and reduced among them only; embeddings and LM head are kept by every worker (techniques.md section 2).
    const int holders = static_cast<int>(std::lround(sh.holder_fraction * p.dp)) * p.cp;
    add_gradient_sync(ctx, params.layers * sh.grad_fraction, params.layers * sh.grad_fraction, sh.layers, holders,
                      stride, comm);
    add_gradient_sync(ctx, params.embedding + params.head + params.final_norm + params.mtp, 0, 0, group, stride, comm);
  }

  void schedule(const Context& ctx, const Sharding&, Schedule* s) const override {
    s->microbatches = ctx.plan.num_microbatches();
  }
};

}  // namespace

void add_gradient_sync(const Context& ctx, double params, double layer_params, double layers, int group, int stride,
                       CommPlan* comm) {
  if (group <= 1 || params <= 0) return;
  const Plan& p = ctx.plan;
  const Framework& fw = ctx.framework;
  // Fine-tuning reduces (and under ZeRO 1-2 gathers back) only the trainable share; ZeRO-3 still gathers the frozen
  // base weights for every layer (finetune.h).
  const double train = trainable_share(ctx.model, p);
  const Bytes grads(params * fw.state.gradients * train);
  // Layer weights are gathered in the recipe's dtype where the framework keeps them quantized (precision_recipe.h);
  // embeddings and head stay 16-bit.
  const double layer_gather_bytes = param_gather_bytes(p, fw);
  const Bytes gathered = Bytes(layer_params * layer_gather_bytes + (params - layer_params) * kGatherBytes) * train;
  const Window reduce_w = fw.overlap_grad_reduce ? Window::last_backward : Window::exposed;
  switch (p.zero) {
    case 0:
      comm->step.push_back({CommKind::dp, Collective::all_reduce, grads, group, stride, 1, reduce_w});
      break;
    case 1:
      comm->step.push_back({CommKind::dp, Collective::reduce_scatter, grads, group, stride, 1, reduce_w});
      comm->step.push_back({CommKind::dp, Collective::all_gather, gathered, group, stride, 1,
                            fw.overlap_param_gather ? Window::next_forward : Window::exposed});
      break;
    case 2:
      comm->microbatch.push_back({CommKind::dp, Collective::reduce_scatter, grads, group, stride, 1,
                                  fw.overlap_grad_reduce ? Window::layer : Window::exposed});
      comm->step.push_back({CommKind::dp, Collective::all_gather, gathered, group, stride, 1,
                            fw.overlap_param_gather ? Window::next_forward : Window::exposed});
      break;
    default: {
      // FSDP wraps each transformer layer: its parameters are gathered before the layer runs (prefetched behind
      // the previous layer's compute) and its gradients reduce-scattered after its backward, so every layer
      // pays the collectives' latency. Embedding and head are one more unit per micro-batch.
      const Window gw = fw.overlap_param_gather ? Window::layer : Window::exposed;
      const Window rw = fw.overlap_grad_reduce ? Window::layer : Window::exposed;
      const double unit = layers > 0 ? layer_params / layers : 0.0;
      const Bytes layer_gather(unit * layer_gather_bytes), layer_grads(unit * fw.state.gradients * train);
      comm->layer_forward.push_back({CommKind::dp, Collective::all_gather, layer_gather, group, stride, 1, gw});
      if (fw.reshard_after_forward)
        comm->layer_backward.push_back({CommKind::dp, Collective::all_gather, layer_gather, group, stride, 1, gw});
      comm->layer_backward.push_back({CommKind::dp, Collective::reduce_scatter, layer_grads, group, stride, 1, rw});
      const double rest = params - (layers > 0 ? layer_params : 0.0);
      if (rest > 0) {
        comm->microbatch.push_back({CommKind::dp, Collective::all_gather, Bytes(rest * kGatherBytes), group, stride,
                                    fw.reshard_after_forward ? 2.0 : 1.0, gw});
        comm->microbatch.push_back({CommKind::dp, Collective::reduce_scatter, Bytes(rest * fw.state.gradients * train),
                                    group, stride, 1, rw});
      }
      break;
    }
  }
}

const Strategy& data_parallel() {
  static const DataParallel s;
  return s;
}

}  // namespace shardplan
