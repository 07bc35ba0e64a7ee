#include "modeler/timeline.h"

#include <algorithm>
#include <stdexcept>

#include "modeler/problems.h"

namespace shardplan {

namespace {

struct Op {
  bool forward = true;
  int microbatch = 0, chunk = 0;
};

/// The order in which one pipeline rank runs its passes (Megatron-LM schedules.py): warm-up forwards, then
/// one forward and one backward alternately, then the remaining backwards. Interleaved: the k-th forward runs
/// chunk (k / p) % v of micro-batch (k / (p v)) p + k % p; backwards visit the chunks in reverse.
std::vector<Op> rank_order(int stage, int p, int v, int m) {
  const int total = m * v;
  const int warmup = std::min(total, v == 1 ? p - stage - 1 : (p - stage - 1) * 2 + (v - 1) * p);
  auto op = [p, v](bool fwd, int k) {
    const int chunk = v == 1 ? 0 : (k / p) % v;
    const int mb = v == 1 ? k : (k / (p * v)) * p + k % p;
    return Op{fwd, mb, fwd ? chunk : v - 1 - chunk};
  };
  std::vector<Op> out;
  int f = 0, b = 0;
  for (; f < warmup; ++f) out.push_back(op(true, f));
  while (f < total) {
    out.push_back(op(true, f++));
    out.push_back(op(false, b++));
  }
  while (b < total) out.push_back(op(false, b++));
  return out;
}

}  // namespace

const char* to_string(Track t) {
  static const char* names[kNumTracks] = {"compute", "bubble",  "tp comm",           "cp comm",      "pp comm",
                                          "dp comm", "ep comm", "micro-batch comm", "step comm"};
  return names[static_cast<int>(t)];
}

Timeline build_timeline(const Estimate& e) {
  const StepShape& s = e.time.shape;
  if (e.time.compute.v <= 0) throw std::logic_error("build_timeline: the plan has no time breakdown");
  const int p = std::max(1, s.stages), v = std::max(1, s.chunks), m = std::max(1, s.microbatches);
  const double f_us = s.forward.v * 1e6, b_us = s.backward.v * 1e6, mb_comm_us = s.microbatch_comm.v * 1e6;
  const double fwd_share = f_us + b_us > 0 ? f_us / (f_us + b_us) : 0.5;
  // Compute slowed by the per-micro-batch traffic it hides (pipeline sends, ZeRO-3 gathers) lengthens the passes,
  // split between forward and backward as their times are.
  const double f_cont_us = s.microbatch_contention.v * 1e6 * fwd_share;
  const double b_cont_us = s.microbatch_contention.v * 1e6 * (1 - fwd_share);

  Timeline t;
  t.stages = p;
  // Finish time of each pass, indexed [forward?][micro-batch][virtual stage].
  const int vstages = p * v;
  std::vector<double> done(2 * static_cast<size_t>(m) * vstages, -1);
  auto slot = [m, vstages](bool fwd, int mb, int vs) {
    return (static_cast<size_t>(fwd ? 0 : 1) * m + mb) * vstages + vs;
  };
  std::vector<std::vector<Op>> orders;
  for (int st = 0; st < p; ++st) orders.push_back(rank_order(st, p, v, m));
  std::vector<size_t> next(static_cast<size_t>(p), 0);
  std::vector<double> free_at(static_cast<size_t>(p), 0);
  std::vector<std::vector<std::pair<double, double>>> busy(static_cast<size_t>(p));

  // List scheduling: place every rank's next pass once its input is ready, until all are placed.
  for (bool progress = true; progress;) {
    progress = false;
    for (int st = 0; st < p; ++st) {
      auto& n = next[static_cast<size_t>(st)];
      while (n < orders[static_cast<size_t>(st)].size()) {
        const Op& op = orders[static_cast<size_t>(st)][n];
        const int vs = op.chunk * p + st;
        double ready = 0;
        if (op.forward && vs > 0) ready = done[slot(true, op.microbatch, vs - 1)];
        if (!op.forward) ready = vs == vstages - 1 ? done[slot(true, op.microbatch, vs)]
                                                   : done[slot(false, op.microbatch, vs + 1)];
        if (ready < 0) break;  // input not produced yet
        const double start = std::max(ready, free_at[static_cast<size_t>(st)]);
        const double dur = (op.forward ? f_us + f_cont_us : b_us + b_cont_us) / v;
        const double comm_scale = (op.forward ? fwd_share : 1 - fwd_share) / v;
        // The compute part, then the exposed communication this pass waits for, one track per kind.
        std::vector<std::pair<Track, double>> comm;
        for (int k = 0; k < kNumCommKinds; ++k)
          if (s.layer_comm[k].v > 0) comm.push_back({static_cast<Track>(2 + k), s.layer_comm[k].v * 1e6 * comm_scale});
        if (mb_comm_us > 0) comm.push_back({Track::microbatch_comm, mb_comm_us * 0.5 / v});
        double comm_total = 0;
        for (const auto& c : comm) comm_total += c.second;
        const double end = start + dur + (mb_comm_us > 0 ? mb_comm_us * 0.5 / v : 0);
        const std::string name = std::string(op.forward ? "F" : "B") + std::to_string(op.microbatch) +
                                 (v > 1 ? "." + std::to_string(op.chunk) : "");
        double at = end - comm_total;
        t.events.push_back({name, st, Track::compute, start, std::max(0.0, at - start), op.microbatch, op.chunk});
        for (const auto& [track, us] : comm) {
          t.events.push_back({name + " " + to_string(track), st, track, at, us, op.microbatch, op.chunk});
          at += us;
        }
        done[slot(op.forward, op.microbatch, vs)] = end;
        free_at[static_cast<size_t>(st)] = end;
        busy[static_cast<size_t>(st)].push_back({start, end});
        ++n;
        progress = true;
      }
    }
  }
  for (int st = 0; st < p; ++st)
    SHARDPLAN_CHECK(next[static_cast<size_t>(st)] == orders[static_cast<size_t>(st)].size());  // no deadlock
  t.pipeline_us = *std::max_element(free_at.begin(), free_at.end());

  // Idle time inside the pipeline is the bubble. Each rank's passes were placed in time order.
  for (int st = 0; st < p; ++st) {
    double cursor = 0;
    for (const auto& [start, end] : busy[static_cast<size_t>(st)]) {
      if (start > cursor + 1e-9) t.events.push_back({"bubble", st, Track::bubble, cursor, start - cursor});
      cursor = end;
    }
    if (t.pipeline_us > cursor + 1e-9)
      t.events.push_back({"bubble", st, Track::bubble, cursor, t.pipeline_us - cursor});
  }

  // Per step, after the last backward: the compute the hidden gradient sync and parameter gather slowed (drawn
  // in one piece: the Estimate keeps only its sum), the exposed gradient/parameter communication, the optimizer.
  const double cont_us = s.step_contention.v * 1e6, step_comm_us = s.step_comm.v * 1e6;
  // Exposed per-layer offload copies (parameter and activation offload) are drawn with the optimizer step.
  const double opt_us = (e.time.optimizer.v + e.time.host_transfer.v) * 1e6;
  for (int st = 0; st < p; ++st) {
    double at = t.pipeline_us;
    if (cont_us > 0) t.events.push_back({"step comm contention", st, Track::compute, at, cont_us});
    at += cont_us;
    if (step_comm_us > 0) t.events.push_back({"step comm", st, Track::step_comm, at, step_comm_us});
    at += step_comm_us;
    if (opt_us > 0) t.events.push_back({"optimizer", st, Track::compute, at, opt_us});
  }
  t.step_us = t.pipeline_us + cont_us + step_comm_us + opt_us;
  return t;
}

}  // namespace shardplan
