// Context parallelism: the sequence is split over cp ranks for the whole layer. Attention needs every rank's keys
// and values. Megatron-Core / Transformer Engine pass K/V blocks around a ring (cp-1 steps per layer, overlapped
// with the attention kernel) with the load-balanced causal split (each rank holds chunks i and 2cp-1-i), so every
// rank does 1/cp of the causal attention work. The all-gather variant (Llama 3 paper, Sec. 3.3.2) gathers K/V
// once per layer and reduce-scatters their gradients in backward. PyTorch's ring (torch/distributed/tensor/
// experimental/_attention.py) rotates dK/dV by all-to-all after every step's kernel, in fp32; its all-gather
// rotater keeps that loop and gathers K/V once per pass, behind the first step's kernel only.
#include <algorithm>

#include "modeler/attention_cost.h"
#include "modeler/collectives.h"
#include "modeler/strategies/strategy.h"

namespace shardplan {

namespace {

/// A collective issued before the first ring step's kernel and waited at the second (PyTorch's _AllGatherRotater:
/// exchange_buffers at step 0, next_buffer at step 1): the part that fits in that kernel's time is hidden
/// (Window::attention, which then holds nothing else of that pass's K/V exchange), the rest exposed. Each part is
/// one op with its seconds fixed and its bytes in proportion (CommOp::fixed_s).
void add_behind_first_step(const Context& ctx, CommOp op, Seconds first_step, std::vector<CommOp>* into) {
  const Seconds t = collective_time(ctx.system, op) * op.count;
  if (t.v <= 0) return;
  const Seconds hidden = std::min(t, first_step * ctx.system.overlap_efficiency);
  const double share = hidden / t;
  const Bytes bytes = op.bytes * op.count;
  op.count = 1;
  if (hidden.v > 0) {
    CommOp h = op;
    h.window = Window::attention;
    h.fixed_s = hidden.v;
    h.bytes = bytes * share;
    into->push_back(h);
  }
  if (share < 1.0) {
    op.window = Window::exposed;
    op.fixed_s = (t - hidden).v;
    op.bytes = bytes * (1.0 - share);
    into->push_back(op);
  }
}

/// PyTorch's CP loop traced by torch.compile: every collective is waited where it is issued (framework.h
/// cp_comm_waited_at_issue), so the ring's sends (or the all-gather rotater's gather) and the dK/dV rotation are
/// all exposed. The collectives and their bytes are those of the eager loop.
void add_waited_at_issue(const Context& ctx, Bytes kv, int cp, int stride, CommPlan* comm) {
  const double grads = ctx.framework.cp_grad_kv_bytes / 2.0;
  if (ctx.plan.cp_kind == CpKind::ring) {
    comm->layer_forward.push_back({CommKind::cp, Collective::send_recv, kv, cp, stride, cp - 1.0, Window::exposed});
    comm->layer_backward.push_back({CommKind::cp, Collective::send_recv, kv, cp, stride, cp - 1.0, Window::exposed});
  } else {
    const CommOp gather{CommKind::cp, Collective::all_gather, kv * cp, cp, stride, 1, Window::exposed};
    comm->layer_forward.push_back(gather);
    comm->layer_backward.push_back(gather);
  }
  // dK/dV always go round the ring (dkv_rotater: _RotateMethod.ALL_TO_ALL), cp - 1 sends plus the last one.
  comm->layer_backward.push_back({CommKind::cp, Collective::send_recv, kv * grads, cp, stride, cp * 1.0,
                                  Window::exposed});
}

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
    if (fw.cp_comm_waited_at_issue) {
      // Compiled PyTorch CP (framework.h cp_comm_waited_at_issue): the same collectives as below, each exposed.
      add_waited_at_issue(ctx, kv, cp, stride, comm);
      return;
    }
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
    } else if (fw.cp_allgather_runs_ring_loop) {
      // PyTorch's _AllGatherRotater (torch/distributed/tensor/experimental/_attention.py, late 2024): at step 0 the
      // loop concatenates the rank's K and V and all-gathers them (ft_c.all_gather_tensor, gather_dim 0: cp x the
      // local, repeated, 16-bit K/V), runs step 0's kernel and waits at step 1; later steps slice the gathered
      // buffer. The backward's kv_rotater gathers K/V again the same way; its dkv_rotater is always the ring
      // (_RotateMethod.ALL_TO_ALL): each step's dK/dV, fp32, sent after that step's kernel and waited behind the
      // next one's, the last after the loop. Nothing is reduce-scattered.
      const CommOp gather{CommKind::cp, Collective::all_gather, kv * cp, cp, stride, 1, Window::exposed};
      add_behind_first_step(ctx, gather, ring_step_kernel_time(ctx, sh, false), &comm->layer_forward);
      add_behind_first_step(ctx, gather, ring_step_kernel_time(ctx, sh, true), &comm->layer_backward);
      const double grads = fw.cp_grad_kv_bytes / 2.0;
      comm->layer_backward.push_back(
          {CommKind::cp, Collective::send_recv, kv * grads, cp, stride, cp - 1.0, Window::attention});
      comm->layer_backward.push_back({CommKind::cp, Collective::send_recv, kv * grads, cp, stride, 1,
                                      fw.cp_last_grad_kv_exposed ? Window::exposed : Window::attention});
    } else {
      // Transformer Engine's all-gather variant (AttnFuncWithCPAndKVAllGather): K/V gathered before the local
      // chunks' attention, dK/dV reduce-scattered after it.
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
