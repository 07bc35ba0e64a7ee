// RunCost: what a whole training run of one plan costs: wall-clock time, GPU-hours, money and energy, with the
// time lost to failures and checkpoints. The step time comes from an Estimate; everything here is arithmetic on
// it, so each figure can be checked by hand (docs/run-cost.md walks through one).
#pragma once

#include <optional>
#include <string>

#include "modeler/estimate.h"
#include "modeler/system.h"
#include "modeler/units.h"

namespace shardplan {

/// Per-GPU mean time between job-interrupting failures implied by Llama 3's pre-training: 419 unexpected
/// interruptions in a 54-day snapshot on 16,384 H100 GPUs (Llama 3 Herd of Models, arXiv 2407.21783, Sec. 3.3.4):
/// 54 x 24 x 16384 / 419 = 50,677 GPU-hours per interruption. Counts every cause (GPUs, HBM, network, software).
inline constexpr double kLlama3MtbfHoursPerGpu = 54.0 * 24.0 * 16384.0 / 419.0;
/// Checkpoint write bandwidth per GPU implied by Llama 3's storage: Tectonic sustains 2 TB/s for the 16K-GPU
/// cluster (same paper, Sec. 3.3.1): 2e12 / 16384 = 0.122 GB/s per GPU.
inline constexpr double kLlama3CheckpointGBpsPerGpu = 2000.0 / 16384.0;
/// Power usage effectiveness of a modern hyperscale data centre: Google's fleet-wide trailing-twelve-month PUE
/// was 1.10 in 2023 (google.com/about/datacenters/efficiency); the Uptime Institute's 2023 survey average over all
/// data centres is 1.58.
inline constexpr double kDefaultPue = 1.10;

/// What the user asked of the run. Either train_tokens or steps is set (> 0).
struct RunSpec {
  double train_tokens = 0;  // tokens to train; steps = ceil(tokens / tokens per step)
  double steps = 0;         // or the optimizer steps directly
  double gpu_hour_price = 0;  // currency per GPU-hour; 0: cost not reported
  /// Multiplier on GPU board power for the rest of the node (CPUs, memory, NICs, switches, fans). 1: GPU board
  /// power only, the convention of the Llama 3.1 model card's energy figure (GPU-hours x TDP).
  double node_overhead = 1.0;
  double pue = kDefaultPue;   // facility power / IT power (cooling, power conversion)
  /// Board power under load; 0: the profile's TDP scaled to the sustained clock (the power limit, system.h).
  double gpu_power_w = 0;
  double mtbf_hours_per_gpu = 0;  // 0: no failures modelled
  Seconds restart = Seconds(600); // from a failure to training again (detect, reschedule, load checkpoint)
  double checkpoint_gbps_per_gpu = kLlama3CheckpointGBpsPerGpu;  // storage write bandwidth, GB/s per GPU
  bool async_checkpoint = false;  // snapshot to host memory, then write in the background
  std::optional<Seconds> checkpoint_interval;  // compute between checkpoints; default Daly's optimum
};

struct RunCost {
  double steps = 0;
  double tokens = 0;
  Seconds compute;        // steps x step time: the run without failures or checkpoints
  Seconds wall;           // expected wall-clock time with checkpoints, failures, restarts and rework
  double gpu_hours = 0;   // gpus x wall
  double cost = 0;        // gpu_hours x price (0 when no price given)
  double gpu_power_w = 0;       // board power per GPU used for energy
  double it_energy_kwh = 0;     // GPUs (x node overhead) over the wall time
  double facility_energy_kwh = 0;  // it_energy x PUE
  // Failures and checkpoints (zero when no MTBF given).
  bool failures_modelled = false;
  Seconds system_mtbf;     // per-GPU MTBF / GPUs
  double expected_failures = 0;  // wall / system MTBF
  Bytes checkpoint_bytes;  // the whole model's training states (weights + optimizer)
  Seconds checkpoint_blocking;  // training stalls this long per checkpoint
  Seconds checkpoint_write;     // the write to storage (blocking unless async)
  Seconds checkpoint_interval;  // compute between checkpoints
  double goodput = 1.0;         // compute / wall
};

/// Young's first-order optimum interval between checkpoints, sqrt(2 delta M) (J. W. Young, "A first order
/// approximation to the optimum checkpoint interval", CACM 17(9), 1974).
Seconds young_interval(Seconds checkpoint_cost, Seconds mtbf);
/// Daly's higher-order optimum, sqrt(2 delta M) [1 + sqrt(delta / 2M) / 3 + delta / 18M] - delta for delta < 2M,
/// else M (J. T. Daly, "A higher order estimate of the optimum checkpoint interval for restart dumps", FGCS 22,
/// 2006).
Seconds daly_interval(Seconds checkpoint_cost, Seconds mtbf);
/// Daly's expected wall time for `solve` seconds of work under exponential failures of mean `mtbf`, with a
/// checkpoint of `checkpoint_cost` after each `interval` of work and `restart` to resume after a failure (same
/// paper): M e^(R/M) (e^((tau + delta)/M) - 1) solve / tau. Failures may strike during checkpoints and
/// restarts.
Seconds daly_wall_time(Seconds solve, Seconds interval, Seconds checkpoint_cost, Seconds restart, Seconds mtbf);

/// Bytes of one checkpoint: every parameter's weights and optimizer states at the framework's bytes per parameter.
Bytes checkpoint_bytes(double params, double weight_bytes_per_param, double optimizer_bytes_per_param);

/// The run's time, cost and energy for plan estimate `e` on `system`; `ckpt` from checkpoint_bytes. Throws
/// ConfigError for a spec without tokens or steps, or with a non-positive PUE, overhead or bandwidth.
RunCost run_cost(const Estimate& e, const System& system, Bytes ckpt, const RunSpec& spec);

}  // namespace shardplan
