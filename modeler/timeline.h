// Timeline: the simulated step of an Estimate as intervals on tracks, for trace viewers (Perfetto, chrome://tracing).
// Built from Estimate.time.shape: every pipeline stage runs its forward and backward micro-batch passes in the
// order of Megatron's schedules (1F1B, Narayanan et al. 2021 Sec. 2.2.1; interleaved 1F1B with micro-batches in
// groups of pp, Sec. 2.2.2), each pass starting when its stage is free and its input has arrived. Stages are
// assumed as fast as the busiest one. Idle gaps are the bubble. Exposed communication is drawn at the end of the
// pass that waits for it, split between forward and backward in proportion to their times (the Estimate keeps the
// per-micro-batch sum only); compute slowed by the traffic it hides lengthens the passes (per micro-batch) or is
// drawn after the last backward (per step), so the trace's step ends exactly at TimeBreakdown::step(). Pure: no I/O.
#pragma once

#include <string>
#include <vector>

#include "modeler/estimate.h"

namespace shardplan {

enum class Track { compute, bubble, comm_tp, comm_cp, comm_pp, comm_dp, comm_ep, microbatch_comm, step_comm };
constexpr int kNumTracks = 9;
const char* to_string(Track t);

struct TimelineEvent {
  std::string name;  // "F3" (forward of micro-batch 3), "B3.1" (backward, chunk 1), "bubble", "tp", ...
  int stage = 0;     // pipeline stage (trace process)
  Track track = Track::compute;
  double start_us = 0, dur_us = 0;
  int microbatch = -1, chunk = -1;  // -1: not a per-micro-batch event
};

struct Timeline {
  int stages = 1;
  std::vector<TimelineEvent> events;  // per stage in time order
  double pipeline_us = 0;             // end of the last backward pass
  double step_us = 0;                 // + exposed per-step communication + optimizer
};

/// The step of a valid estimate (compute time > 0). Throws std::logic_error (an internal error) otherwise.
Timeline build_timeline(const Estimate& e);

}  // namespace shardplan
