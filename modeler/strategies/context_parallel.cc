// Context parallelism: the sequence is split over cp ranks for the whole layer. Attention needs every rank's keys
// and values. Megatron-Core / Transformer Engine pass K/V blocks around a ring (cp-1 steps per layer, overlapped
// with the attention kernel) with the load-balanced causal split (each rank holds chunks i and 2cp-1-i), so every
// rank does 1/cp of the causal attention work. The all-gather variant (Llama 3 paper, Sec. 3.3.2) gathers K/V
// once per layer and reduce-scatters their gradients in backward. PyTorch's ring (torch/distributed/tensor/
// experimental/_attention.py) rotates dK/dV by all-to-all after every step's kernel, in fp32.
#include <algorithm>

#include "modeler/strategies/strategy.h"

namespace shardplan {

namespace {

class ContextParallel final : public Strategy {
 public:
  const char* name() const override { return "cp"; }

  void validate(const Context& ctx, Problems* problems) const override {
    const int cp = ctx.plan.cp;
    if (cp < 1) {
      problems->push_back({"cp_range", "cp (" + std::to_string(cp) + ") must be at least 1"});
      return;
    }
    if (cp > 1 && ctx.plan.seq_len % (2 * cp) != 0)
      problems->push_back({"cp_divides_seq", "2 x cp (" + std::to_string(2 * cp) +
                                                 ") does not divide the sequence length (" +
                                                 std::to_string(ctx.plan.seq_len) + ") for the load-balanced split"});
  }

  void shard(const Context& ctx, Sharding* sh) const override {
    const double cp = ctx.plan.cp;
    sh->seq_q /= cp;
    sh->tokens /= cp;
    sh->norm_tokens /= cp;
  }

  void add_comm(const Context& ctx, const Sharding& sh, CommPlan* comm) const override {
    const int cp = ctx.plan.cp;
    if (cp == 1) return;
    // K and V of this rank's tokens, local heads, 16 bits; the query heads' where the framework repeats the kv
    // heads before the attention call (torchtitan's repeat_kv: the ring then carries the repeated tensors).
    const Framework& fw = ctx.framework;
    const double heads = fw.gqa_repeats_kv ? std::max(sh.heads, sh.kv_heads) : sh.kv_heads;
    const Bytes kv(2.0 * sh.tokens * heads * ctx.model.head_dim * 2.0);
    const int stride = ctx.plan.tp * ctx.plan.tsp;
    if (ctx.plan.cp_kind == CpKind::ring) {
      comm->layer_forward.push_back({CommKind::cp, Collective::send_recv, kv, cp, stride, cp - 1.0, Window::attention});
      // Backward passes K/V again and the partial dK/dV with them, at the framework's accumulation precision.
      const double grads = fw.cp_grad_kv_bytes / 2.0;
      comm->layer_backward.push_back(
          {CommKind::cp, Collective::send_recv, kv * (1.0 + grads), cp, stride, cp - 1.0, Window::attention});
      // PyTorch sends each step's dK/dV on after that step's kernel and waits for it behind the next step's: the
      // last step's arrives after the loop, with no kernel left to hide it (_templated_ring_attention_backward).
      if (fw.cp_last_grad_kv_exposed)
        comm->layer_backward.push_back(
            {CommKind::cp, Collective::send_recv, kv * grads, cp, stride, 1, Window::exposed});
    } else {
      comm->layer_forward.push_back({CommKind::cp, Collective::all_gather, kv * cp, cp, stride, 1, Window::exposed});
      comm->layer_backward.push_back(
          {CommKind::cp, Collective::reduce_scatter, kv * cp, cp, stride, 1, Window::exposed});
    }
  }

  void schedule(const Context&, const Sharding&, Schedule*) const override {}
};

}  // namespace

const Strategy& context_parallel() {
  static const ContextParallel s;
  return s;
}

}  // namespace shardplan
