// Overlap of MoE expert communication as a property of the pipeline schedule (docs/moe.md):
//   1F1B / interleaved 1F1B: a layer's dispatch and combine wait for its own compute, so they are exposed.
//   combined 1F1B (Megatron-Core --overlap-moe-expert-parallel-comm, models/common/model_chunk_schedule_plan.py):
//     in the schedule's steady state each forward pass of one micro-batch runs layer by layer together with the
//     backward pass of another; the dispatch/combine of each hides behind the other's attention and expert
//     compute (Window::paired). Warm-up forwards and cool-down backwards run alone, exposed.
//   DualPipe / DualPipeV (DeepSeek-V3 report Sec. 3.2.1 and Table 2; deepseek-ai/DualPipe README): the same
//     forward-backward pairing from both ends of the pipeline, with its own bubble and memory.
#pragma once

#include "modeler/framework.h"
#include "modeler/moe_dispatch.h"
#include "modeler/plan.h"
#include "modeler/units.h"

namespace shardplan {

/// The dispatcher a plan runs: its own choice, or the framework's default (the first it offers).
MoeDispatcher moe_dispatcher_of(const Plan& p, const Framework& f);

/// Fraction of a pipeline rank's layer passes that run paired with another micro-batch's opposite pass under the
/// combined 1F1B schedule, on the busiest (first) rank. Megatron-Core schedules.py: the interleaved schedule runs
/// (pp - 1) x 2 + (vpp - 1) x pp warm-up forward chunks of m x vpp, the non-interleaved one pp - 1 of m; without a
/// pipeline the first forward and the last backward of the step run alone (one of m). 0 when nothing pairs.
double paired_fraction(int pp, int vpp, int microbatches);

/// One layer of a paired forward-backward pass: each pass's paired-window communication and its compute split
/// into the MoE experts' part and the rest (attention, projections, norms).
struct PairedLayer {
  Seconds comm_f, comm_b;  // forward: dispatch then combine; backward: the combine's gradient then the dispatch's
  Seconds attn_f, moe_f, attn_b, moe_b;
  /// Share of the GPU's SMs the communication kernels hold while they run (DeepEP: moe_deepep_num_sms of the
  /// GPU's SMs; 0 for copy-engine or unknown). The compute they hide behind runs on the rest, so a hidden transfer
  /// still costs that share of its duration (DeepSeek-V3 report Sec. 3.2.2: 20 of 132 SMs for communication).
  double comm_sm_share = 0;
};
/// Exposed fraction of the paired-window communication. In a paired pass each transfer hides behind one compute
/// block of the other pass (DeepSeek-V3 report Fig. 4; Megatron-Core combined 1F1B, model_chunk_schedule_plan.py):
/// the backward's first transfer behind the forward's attention, the forward's dispatch behind the backward's
/// experts, the backward's second transfer behind the forward's experts, the forward's combine behind the
/// backward's attention; each pass's two transfers taken as halves of its total. Only what outlasts its block is
/// exposed; the unpaired passes (1 - paired) expose all of theirs. The hidden rest costs comm_sm_share of itself
/// (the SMs it takes from the compute), returned as part of the fraction.
double paired_exposed_fraction(const PairedLayer& l, double paired);

/// The DeepSeek-V3 report's Table 2 comparison of schedules over pp ranks, per step of many micro-batches.
/// f, b, w: one chunk's forward, backward (input gradient only where w is split out) and weight-gradient times;
/// fb: a paired forward-and-backward chunk (the overlapped pair, max-like, <= f + b).
enum class MoeSchedule { one_f_one_b, dualpipe, dualpipev };
struct ScheduleCost {
  Seconds bubble;              // idle time per step on the busiest rank
  double parameter_copies = 1; // model parameters held per rank, x one stage's
  double activation_stages = 0;// micro-batches' activations held at the peak, in units of one stage's micro-batch
};
/// 1F1B: bubble (pp - 1)(f + b + w), parameters 1x, activations pp. DualPipe: (pp/2 - 1)(fb + b - 3w), 2x,
/// pp + 1. DualPipeV (DualPipe README, "cut-in-half": one rank holds two chunks of a V layout, pp ranks for
/// 2 pp chunks): the same bubble, 1x parameters, pp + 1 activations.
ScheduleCost schedule_cost(MoeSchedule s, int pp, Seconds f, Seconds b, Seconds w, Seconds fb);

}  // namespace shardplan
