// The physical parameters `calibrate fit-runs` fits to a user's measured steps (docs/fit-runs.md), with the range
// each may take and the width of its prior. Pure data, shared by the fit (calibrate/fit_runs.h) and the profile
// loader (modeler/io/system_io.cc), which refuses a profile stating a value outside the range.
#pragma once

namespace shardplan {

enum class FitParameter {
  gemm_scale,
  attention_scale,
  memory_bw_scale,
  busbw_scale,
  overlap_efficiency,
  kernel_overhead_us,
  alltoall_scale,
  host_layer_pass_ms
};
constexpr int kNumFitParameters = 8;

struct FitParameterSpec {
  const char* name;    // as profiles and reports spell it
  double lo, hi;       // the physical range (inclusive)
  bool log;            // fitted in log space (a multiplicative scale) or linearly
  double prior_sigma;  // width of the prior around the base profile's value (log units when `log`)
  const char* why;     // the reason for the range, printed with a refusal
  // The lower end is "none" and the prior sits on it (shipped profiles state none): runs that push the value
  // below it show none of the effect, not a misconfigured cluster, so the fit pins it there and lists it as not
  // fitted instead of refusing the group.
  bool pin_at_lo = false;
};

// Ranges. A scale multiplies the base profile's tables, whose large-size values are published or measured rates
// (hwprofiles/README.md), so the ranges are about those tables, not about the runs:
// - gemm_scale [0.5, 1.25]: the shipped GEMM tables reach about 0.8 of the dense datasheet peak on large shapes
//   (H100 bf16 ~0.75-0.8, AIC measurements in hwprofiles/measured/), so 1/0.8 = 1.25 is the peak itself, which no
//   kernel exceeds; below 0.5 the GPU sustains half of what the same part measured elsewhere, a throttled or
//   misconfigured node (power cap, clocks) that a scale should not hide.
// - attention_scale [0.5, 1.5]: fused attention tables sit at 0.45-0.7 of the 16-bit peak (FlashAttention-2/3
//   papers), so 1.5 again reaches the peak; 0.5 as for GEMMs.
// - memory_bw_scale [0.5, 1.1]: the streaming-kernel curves state ~0.9 of the HBM datasheet bandwidth (STREAM-like
//   kernels reach 85-95%, hwprofiles/gpus/*.yaml), so 1.1 is the datasheet rate; 0.5 as for GEMMs.
// - busbw_scale [0.25, 1.4]: nccl-tests bus bandwidth curves reach 0.7-0.95 of the line rate (NVLS all-reduce
//   1.07, hwprofiles/README.md); 1.4 brings a 0.75 curve to the line rate; a quarter of the measured curve is a
//   fabric fault (a NIC down, traffic over PCIe), not a calibration.
// - overlap_efficiency [0.25, 1.25]: the fraction of each compute window (time_model.cc) that hides the
//   communication assigned to it. The windows approximate the schedule: above 1 the measured steps hid more than
//   the windows allow (buckets reduced before the last micro-batch, prefetch beyond one layer), capped where the
//   window would be a quarter longer than the compute it models; below 0.25 almost nothing overlaps, which is a
//   configuration (overlap turned off) to state in the plan, not to fit.
// - kernel_overhead_us [0, 50]: the fixed cost per kernel (launch and ramp, host dispatch in eager PyTorch):
//   CUDA launch latency is ~2-5 us and an eager PyTorch op's host dispatch ~5-15 us (pytorch/pytorch#41383:
//   ~5-7 us for a one-element op; TransformerEngine#2053: 13.5 us for a torch.nn.Linear forward on an H100 DGX,
//   Xeon 8480C; docs/h100-gap.md's source table); beyond 50 us per kernel the step is host-bound for another
//   reason (data loading, Python) that a per-kernel cost would misattribute.
// - alltoall_scale [0.25, 1.4]: the MoE token dispatch and combine (expert parallelism) are all-to-alls, whose
//   achieved bus bandwidth on a tier is not the ring collectives': every rank talks to every peer at once in
//   messages of S/n, bound by the NIC's message rate and the fabric's bisection rather than by a ring's
//   pipelined link (nccl-tests alltoall_perf vs all_reduce_perf; DeepEP's README states its own dispatch rates).
//   Profiles measure the tier with ring collectives, so one scale of the tier would let the MoE rows move the
//   dense rows' all-reduce and all-gather (and the reverse). The range is busbw_scale's: 1.4 brings a ~0.75
//   curve to the line rate, a quarter is a fault. With it, busbw_scale leaves the tier's all-to-all alone.
// - host_layer_pass_ms [0, 20]: host time the GPU waits for once per layer and pass (forward, backward, and the
//   re-run forward of full recompute; System::host_layer_pass, time_model.cc) -- host work of an eager
//   framework's layer that the GPU does not hide: dispatch where the host falls behind, or a stall
//   (docs/h100-gap.md: a time per layer and micro-batch that is the same on A100 and H100, and what it is not).
//   An eager transformer block pass dispatches on the order of 100 ATen ops (its GEMM, attention and elementwise
//   kernels, plus views, autocast casts and the FSDP pre/post hooks that unshard and reshard), at ~5-15 us of
//   host time each (the sources of kernel_overhead_us above; a Transformer Engine module's forward is 115-140 us,
//   TransformerEngine#1191): ~1-2 ms, the prior's width. 20 ms is ~1000 such ops, ten times a block's; beyond it
//   the host waits on something else (a host sync on a slow collective, data loading) that a per-layer time
//   would misattribute. Not negative: the GPU cannot run ahead of work the host has not issued.
// Prior widths are statements of how far a cluster is expected to differ from the shipped tables before any run
// is seen (15% for GEMMs and HBM streams, 20% for attention, communication and overlap, 4 us per kernel, 2 ms per
// layer pass of host time around a prior of 0: shipped profiles state none, time_model.cc); the data then
// narrows them where the runs are sensitive to the parameter.
inline constexpr FitParameterSpec kFitParameters[kNumFitParameters] = {
    {"gemm_scale", 0.5, 1.25, true, 0.15, "1.25 x the tables' ~0.8 of peak is the dense datasheet peak; below 0.5 "
                                          "the node is throttled or misconfigured"},
    {"attention_scale", 0.5, 1.5, true, 0.2, "1.5 x the attention tables' ~0.65 of peak is the 16-bit peak"},
    {"memory_bw_scale", 0.5, 1.1, true, 0.15, "1.1 x the profiles' ~0.9 of HBM bandwidth is the datasheet rate"},
    {"busbw_scale", 0.25, 1.4, true, 0.2, "1.4 x a ~0.75 bus-bandwidth curve is the line rate; a quarter is a "
                                          "fabric fault"},
    {"overlap_efficiency", 0.25, 1.25, false, 0.2, "beyond 1.25 the overlap windows would be a quarter longer than "
                                                   "the compute they model; below 0.25 overlap is off"},
    {"kernel_overhead_us", 0.0, 50.0, false, 4.0, "beyond 50 us per kernel the step is host-bound for another "
                                                  "reason"},
    {"alltoall_scale", 0.25, 1.4, true, 0.2, "1.4 x a ~0.75 bus-bandwidth curve is the line rate; a quarter is a "
                                             "fabric fault"},
    {"host_layer_pass_ms", 0.0, 20.0, false, 2.0, "20 ms of host time per layer pass is ~1000 eager op dispatches, "
                                                  "ten times a transformer block's; beyond it the host waits on "
                                                  "something else",
     /*pin_at_lo=*/true},
};

inline const FitParameterSpec& fit_parameter_spec(FitParameter p) { return kFitParameters[static_cast<int>(p)]; }

/// Memory reserve (GiB) a fit may state: -2 takes back at most the model's fragmentation allowance on a large
/// step; beyond 8 GiB the run holds something the model does not know (a second copy of the weights), which a
/// reserve would hide.
inline constexpr double kMemoryReserveMinGiB = -2.0, kMemoryReserveMaxGiB = 8.0;

}  // namespace shardplan
