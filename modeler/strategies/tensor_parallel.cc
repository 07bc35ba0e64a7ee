// Tensor parallelism (Megatron-LM, Shoeybi et al. 2019): attention heads and the MLP width are split over tp ranks;
// each layer needs two collectives in forward and two in backward. With sequence parallelism (Korthikanti et al.
// 2022, Sec. 4.2.2) the all-reduce becomes an all-gather + reduce-scatter pair of the same total bytes, norms and
// residuals run on 1/tp of the tokens, and backward repeats the all-gather of the layer input for the weight
// gradient (overlapped with the data-gradient GEMM in Megatron).
#include "modeler/strategies/strategy.h"

namespace shardplan {

namespace {

class TensorParallel final : public Strategy {
 public:
  const char* name() const override { return "tp"; }

  void validate(const Context& ctx, Problems* problems) const override {
    const int tp = ctx.plan.tp;
    const ModelDesc& m = ctx.model;
    if (tp < 1) {
      problems->push_back({"tp_range", "tp (" + std::to_string(tp) + ") must be at least 1"});
      return;
    }
    if (ctx.plan.tp_comm_overlap && tp > 1 && !ctx.framework.offers_tp_overlap)
      problems->push_back({"tp_overlap_unsupported",
                           ctx.framework.name + " does not overlap tensor-parallel collectives (--tp-overlap)"});
    if (m.heads % tp != 0)
      problems->push_back({"tp_divides_heads",
                           "tp (" + std::to_string(tp) + ") does not divide heads (" + std::to_string(m.heads) + ")"});
    // Megatron-Core requires num_query_groups % tp == 0 (TransformerConfig); K/V heads are not replicated.
    if (m.kv_heads % tp != 0)
      problems->push_back({"tp_divides_kv_heads", "tp (" + std::to_string(tp) + ") does not divide kv_heads (" +
                                                      std::to_string(m.kv_heads) + ")"});
    if (m.ffn_hidden % tp != 0)
      problems->push_back({"tp_divides_ffn", "tp (" + std::to_string(tp) + ") does not divide ffn_hidden (" +
                                                 std::to_string(m.ffn_hidden) + ")"});
  }

  void shard(const Context& ctx, Sharding* sh) const override {
    const double tp = ctx.plan.tp;
    sh->heads /= tp;
    sh->kv_heads /= tp;
    sh->ffn /= tp;
    sh->vocab /= tp;  // vocabulary-parallel embedding and LM head (Megatron pads V to a multiple of tp)
    sh->weight_shard *= tp;
    sh->embedding_shard *= tp;
    if (ctx.plan.sequence_parallel) sh->norm_tokens /= tp;
  }

  void add_comm(const Context& ctx, const Sharding& sh, CommPlan* comm) const override {
    const int tp = ctx.plan.tp;
    if (tp == 1) return;
    const Bytes act(sh.tokens * ctx.model.hidden * 2.0);  // [tokens x h] activation in 16 bits
    const Window w = ctx.plan.tp_comm_overlap ? Window::layer : Window::exposed;
    if (ctx.plan.sequence_parallel) {
      // Forward: all-gather before QKV and before MLP-up, reduce-scatter after out-proj and MLP-down.
      comm->layer_forward.push_back({CommKind::tp, Collective::all_gather, act, tp, 1, 2, w});
      comm->layer_forward.push_back({CommKind::tp, Collective::reduce_scatter, act, tp, 1, 2, w});
      // Backward: the conjugates, plus the repeated input all-gather for weight gradients (overlapped).
      comm->layer_backward.push_back({CommKind::tp, Collective::all_gather, act, tp, 1, 2, w});
      comm->layer_backward.push_back({CommKind::tp, Collective::reduce_scatter, act, tp, 1, 2, w});
      comm->layer_backward.push_back({CommKind::tp, Collective::all_gather, act, tp, 1, 2, Window::layer});
    } else {
      comm->layer_forward.push_back({CommKind::tp, Collective::all_reduce, act, tp, 1, 2, w});
      comm->layer_backward.push_back({CommKind::tp, Collective::all_reduce, act, tp, 1, 2, w});
    }
  }

  void schedule(const Context&, const Sharding&, Schedule*) const override {}
};

}  // namespace

const Strategy& tensor_parallel() {
  static const TensorParallel s;
  return s;
}

}  // namespace shardplan
