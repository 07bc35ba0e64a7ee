#include "modeler/time_model.h"

#include <algorithm>

#include "modeler/collectives.h"
#include "modeler/memory_model.h"
#include "modeler/moe_overlap.h"
#include "modeler/optimizer.h"
#include "modeler/stage_params.h"

namespace shardplan {

namespace {

using PerKind = std::array<Seconds, kNumCommKinds>;

/// Exposed communication of a set of collectives against the compute they may hide behind, attributed to each
/// strategy in proportion to its share of the overlappable time, and the slowdown the hidden part causes.
struct Exposed {
  PerKind by_kind{};
  Seconds contention;  // extra compute time: overlapped compute runs on the SMs the collectives leave it
};

class Exposure {
 public:
  Exposure(const System& sys) : sys_(sys) {}

  /// Adds ops; `windows[w]` is the compute available to hide window w.
  void add(const std::vector<CommOp>& ops, double repeat = 1.0) {
    for (const CommOp& op : ops) {
      const Seconds t = collective_time(sys_, op) * (op.count * repeat);
      if (op.window == Window::gemm && op.gemm >= 0 && op.gemm < kLinearSlots) {
        Slot& s = slots_[op.gemm];
        s.by_kind[static_cast<int>(op.kind)] += t;
        s.total += t;
        s.tail += t * op.tail;
        s.hide = std::min(s.hide, op.hide);
        if (op.sm_margin)
          s.margin_sms = std::max(s.margin_sms, op.overlap_sms);
        else
          s.sm_seconds += t * op.overlap_sms;
        continue;
      }
      const int w = static_cast<int>(op.window == Window::gemm ? Window::layer : op.window);
      by_window_[w][static_cast<int>(op.kind)] += t;
      total_[w] += t;
    }
  }
  /// Exposed seconds per kind given the compute of each window and, for Window::gemm collectives, the time of each
  /// linear's GEMM in the pass (PassCost::linear); the paired window's exposure is the schedule's (moe_overlap.h).
  Exposed exposed(Seconds layer_compute, Seconds attention, Seconds last_backward, Seconds next_forward,
                  Seconds tail_exposed_fraction_of_last_backward = Seconds(0),
                  const std::array<Seconds, kLinearSlots>* linear = nullptr, double paired_exposed = 1.0) const {
    Exposed out;
    const Seconds hide[kNumWindows] = {Seconds(0),   layer_compute, attention, last_backward,
                                       next_forward, Seconds(0),    Seconds(0)};
    Seconds all, shown;
    for (int w = 0; w < kNumWindows; ++w) {
      if (total_[w].v <= 0) continue;
      Seconds excess = total_[w] - hide[w] * sys_.overlap_efficiency;  // 1 unless fitted (system.h)
      if (excess.v < 0) excess = Seconds(0);
      // The paired window's exposure is the schedule's (moe_overlap.h), from both passes together.
      if (w == static_cast<int>(Window::paired)) excess = total_[w] * paired_exposed;
      if (w == static_cast<int>(Window::last_backward))
        excess = std::max(excess, tail_exposed_fraction_of_last_backward);
      const double share = excess / total_[w];
      for (int k = 0; k < kNumCommKinds; ++k) out.by_kind[k] += by_window_[w][k] * share;
      all += total_[w];
      shown += total_[w] * share;
    }
    const Seconds h = all - shown;
    if (h.v > 0) out.contention += h * contention_slowdown(sys_.gpu);
    // A paired collective hides behind its own GEMM only, minus the share that always trails it; while it runs
    // the GEMM has its SMs less.
    for (int i = 0; i < kLinearSlots; ++i) {
      const Slot& s = slots_[i];
      if (s.total.v <= 0) continue;
      const Seconds gemm = linear ? (*linear)[i] : Seconds(0);
      const Seconds excess = std::max({s.total - gemm * s.hide, s.tail, Seconds(0)});
      const double share = std::min(1.0, excess / s.total);
      for (int k = 0; k < kNumCommKinds; ++k) out.by_kind[k] += s.by_kind[k] * share;
      const double sms = s.sm_seconds.v / s.total.v;
      out.contention +=
          s.total * (1.0 - share) * sm_slowdown(sys_.gpu, sms) + gemm * sm_slowdown(sys_.gpu, s.margin_sms);
    }
    return out;
  }
  Seconds total(Window w) const { return total_[static_cast<int>(w)]; }

 private:
  struct Slot {
    PerKind by_kind{};
    Seconds total, tail, sm_seconds;  // sm_seconds: collective seconds x SMs held, for those without a margin
    double hide = 1, margin_sms = 0;
  };
  const System& sys_;
  PerKind by_window_[kNumWindows]{};
  Seconds total_[kNumWindows]{};
  Slot slots_[kLinearSlots]{};
};

void add_scaled(PerKind* into, const PerKind& x, double k) {
  for (int i = 0; i < kNumCommKinds; ++i) (*into)[i] += x[i] * k;
}

Seconds sum(const PerKind& x) {
  Seconds s;
  for (Seconds t : x) s += t;
  return s;
}

}  // namespace

double gradient_bucket_params(int dp) { return std::max(40e6, 1e6 * dp); }

double sm_slowdown(const Gpu& gpu, double sms) {
  if (gpu.sm_count <= 0 || sms <= 0) return 0.0;
  const double f = std::min(0.5, sms / gpu.sm_count);
  return f / (1.0 - f);
}

double contention_slowdown(const Gpu& gpu) { return sm_slowdown(gpu, kCommunicationSms); }

TimeBreakdown step_time(const Context& ctx, const Sharding& sh, const Schedule& sched, const CommPlan& comm,
                        const LayerCost& layer, const LayerCost& head) {
  const Plan& p = ctx.plan;
  const System& sys = ctx.system;
  const double m = sched.microbatches, L = sh.layers;

  // One layer, one micro-batch: forward, and backward with any recompute (which repeats the forward's
  // collectives under full recompute).
  Exposure fwd(sys), bwd(sys);
  fwd.add(comm.layer_forward);
  bwd.add(comm.layer_backward);
  if (p.recompute == Recompute::full) {
    // The re-run forward repeats the forward's TP, CP and EP collectives but not FSDP's parameter all-gather: it
    // runs inside the layer's backward, on the parameters that backward gathered (FSDP's pre-backward unshard,
    // which layer_backward counts when parameters are resharded after forward) or kept (not resharded). FSDP
    // wraps the checkpointed block (torchtitan applies activation checkpointing, then fully_shard, per block), so
    // the recomputation runs the inner module without re-entering FSDP's forward hook; DeepSpeed ZeRO-3's
    // recomputation does fetch, and that fetch is the one its backward then uses: one gather per backward.
    std::vector<CommOp> rerun;
    for (const CommOp& op : comm.layer_forward)
      if (!(op.kind == CommKind::dp && op.collective == Collective::all_gather)) rerun.push_back(op);
    bwd.add(rerun, full_recompute_share(p, sh));
  }
  const bool moe_recompute = p.recompute == Recompute::selective && (p.recompute_modules & kRecomputeMoe);
  if (moe_recompute && !ctx.framework.selective_is_op_sac) {
    // A recomputed MoE layer dispatches and combines its tokens again (Megatron-Core MoELayer checkpoints the
    // router, the dispatcher and the experts together).
    std::vector<CommOp> expert_comm;
    for (const CommOp& op : comm.layer_forward)
      if (op.kind == CommKind::ep) expert_comm.push_back(op);
    bwd.add(expert_comm);
  }
  const Seconds compute_b = layer.backward.time + layer.recompute.time;
  const Seconds moe_b = layer.backward.moe + layer.recompute.moe;
  PairedLayer pair{fwd.total(Window::paired), bwd.total(Window::paired), layer.forward.time - layer.forward.moe,
                   layer.forward.moe,         compute_b - moe_b,          moe_b};
  // DeepEP/HybridEP copy on SMs (moe_overlap.h PairedLayer::comm_sm_share).
  if (deduplicates_nodes(moe_dispatcher_of(p, ctx.framework)) && sys.gpu.sm_count > 0)
    pair.comm_sm_share = static_cast<double>(kDeepepDefaultSms) / sys.gpu.sm_count;
  const double paired_exposed =
      paired_exposed_fraction(pair, paired_fraction(sh.stages, sh.chunks, sched.microbatches));
  // Under full recompute the re-run forward's paired collectives hide behind the re-run fprop GEMMs.
  std::array<Seconds, kLinearSlots> linear_b = layer.backward.linear;
  if (p.recompute == Recompute::full)
    for (int i = 0; i < kLinearSlots; ++i) linear_b[i] += layer.forward.linear[i] * full_recompute_share(p, sh);
  const Exposed ef = fwd.exposed(layer.forward.time, layer.forward.attention, Seconds(0), Seconds(0), Seconds(0),
                                 &layer.forward.linear, paired_exposed);
  const Exposed eb = bwd.exposed(compute_b, layer.backward.attention + layer.recompute.attention, Seconds(0),
                                 Seconds(0), Seconds(0), &linear_b, paired_exposed);
  const PerKind& exp_f = ef.by_kind;
  const PerKind& exp_b = eb.by_kind;

  // Collectives that run concurrently with compute take SMs from it (NCCL runs one CTA per channel; DeepSeek-V3
  // dedicates 20 of 132 H100 SMs to its communication kernels): overlapped compute runs on the rest.
  const Seconds contend_f = ef.contention, contend_b = eb.contention;
  // Host time per layer pass (System::host_layer_pass; 0 unless fitted), serial with the layer's kernels: the
  // time it stands for is the same on A100 and H100 (docs/h100-gap.md), where every kernel is 1.6-3.2x faster
  // on H100, so the GPU does not hide it behind its own work (max(host, GPU) would vanish on the slower A100).
  // It is a per-pass stall of unknown cause, not dispatch cost: asynchronous dispatch (~1-4 ms per layer and
  // micro-batch) hides behind the 10-130 ms of kernels the llm-foundry rows run per layer and micro-batch, so no
  // published per-op cost gives it a shipped value (docs/h100-gap.md, "Can the host time per layer pass be ...").
  // Passes: forward, backward, and full recompute's re-run forward (PyTorch's checkpoint re-enters the module's
  // Python forward); a selective recompute re-runs a part of the layer and counts none.
  const double rerun = full_recompute_share(p, sh);  // 0 unless full recompute
  const Seconds host_f = sys.host_layer_pass * L, host_b = sys.host_layer_pass * ((1.0 + rerun) * L);
  const Seconds t_f = (layer.forward.time + contend_f + sum(exp_f)) * L + head.forward.time + host_f;
  const Seconds t_b = (compute_b + contend_b + sum(exp_b)) * L + head.backward.time + host_b;

  Exposure mb(sys);
  mb.add(comm.microbatch);
  const Exposed emb = mb.exposed(t_f + t_b, Seconds(0), Seconds(0), Seconds(0));
  const PerKind& exp_mb = emb.by_kind;
  const Seconds contend_mb = emb.contention;

  // Per step: gradient reduction behind the last micro-batch's backward (its last bucket always exposed), the
  // distributed optimizer's parameter all-gather behind the next step's first forward.
  Exposure st(sys);
  st.add(comm.step);
  const double params = busiest_stage_params(ctx, sh).total();
  const double tail_fraction = std::min(1.0, gradient_bucket_params(p.dp) / std::max(1.0, params));
  const Exposed est = st.exposed(Seconds(0), Seconds(0), t_b, t_f, st.total(Window::last_backward) * tail_fraction);
  const PerKind& exp_step = est.by_kind;

  TimeBreakdown tb;
  const Seconds contend_step = est.contention;
  tb.compute = (layer.forward.time + compute_b + contend_f + contend_b) * (L * m) +
               (head.forward.time + head.backward.time + contend_mb) * m + contend_step;
  tb.recompute = layer.recompute.time * (L * m);
  tb.host_layer = (host_f + host_b) * m;
  tb.moe = (layer.forward.moe + layer.backward.moe + layer.recompute.moe) * (L * m);
  add_scaled(&tb.exposed_comm, exp_f, L * m);
  add_scaled(&tb.exposed_comm, exp_b, L * m);
  add_scaled(&tb.exposed_comm, exp_mb, m);
  add_scaled(&tb.exposed_comm, exp_step, 1.0);
  // The bubble is (p-1)/v of one micro-batch's whole stage time: the fill and drain wait on each stage's exposed
  // sends and on the compute the hidden ones slow, as much as on its passes (what the list-scheduled timeline
  // of the same shape produces, timeline.cc).
  tb.bubble = (t_f + t_b + contend_mb + sum(exp_mb)) * sched.bubble_fraction;

  StepShape& shape = tb.shape;
  shape.microbatches = sched.microbatches;
  shape.stages = sh.stages;
  shape.chunks = sh.chunks;
  shape.forward = t_f;
  shape.backward = t_b;
  shape.microbatch_comm = sum(exp_mb);
  shape.microbatch_contention = contend_mb;
  for (int k = 0; k < kNumCommKinds; ++k) shape.layer_comm[k] = (exp_f[k] + exp_b[k]) * L;
  shape.step_comm = sum(exp_step);
  shape.step_contention = contend_step;

  const double owned = owned_state_params(ctx, sh, false);
  tb.optimizer = optimizer_step_time(ctx, sh, owned);  // the plan's optimizer (optimizer.h)
  return tb;
}

}  // namespace shardplan
