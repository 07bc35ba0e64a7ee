#include "modeler/run_cost.h"

#include <algorithm>
#include <cmath>

#include "modeler/problems.h"

namespace shardplan {

Seconds young_interval(Seconds checkpoint_cost, Seconds mtbf) {
  return Seconds(std::sqrt(2.0 * checkpoint_cost.v * mtbf.v));
}

Seconds daly_interval(Seconds checkpoint_cost, Seconds mtbf) {
  const double d = checkpoint_cost.v, m = mtbf.v;
  if (d >= 2.0 * m) return mtbf;  // checkpoints cost more than failures lose: checkpoint once per MTBF
  const double x = d / (2.0 * m);
  return Seconds(std::sqrt(2.0 * d * m) * (1.0 + std::sqrt(x) / 3.0 + x / 9.0) - d);
}

Seconds daly_wall_time(Seconds solve, Seconds interval, Seconds checkpoint_cost, Seconds restart, Seconds mtbf) {
  const double m = mtbf.v;
  // expm1 keeps the small-exponent case (MTBF >> interval) exact to rounding.
  return Seconds(m * std::exp(restart.v / m) * std::expm1((interval.v + checkpoint_cost.v) / m) * solve.v /
                 interval.v);
}

Bytes checkpoint_bytes(double params, double weight_bytes_per_param, double optimizer_bytes_per_param) {
  return Bytes(params * (weight_bytes_per_param + optimizer_bytes_per_param));
}

RunCost run_cost(const Estimate& e, const System& system, Bytes ckpt, const RunSpec& spec) {
  if ((spec.train_tokens > 0) == (spec.steps > 0))
    throw ConfigError("a run needs exactly one of --train-tokens and --steps (a positive number)");
  if (!(spec.pue >= 1.0)) throw ConfigError("--pue must be at least 1 (facility power over IT power)");
  if (!(spec.node_overhead >= 1.0)) throw ConfigError("--node-overhead must be at least 1 (node power over GPU power)");
  if (spec.gpu_hour_price < 0) throw ConfigError("--gpu-hour-price must not be negative");
  if (spec.gpu_power_w < 0) throw ConfigError("--gpu-power-w must not be negative");
  if (spec.mtbf_hours_per_gpu < 0) throw ConfigError("--mtbf-hours must not be negative");
  if (spec.restart.v < 0) throw ConfigError("--restart-min must not be negative");
  if (!(spec.checkpoint_gbps_per_gpu > 0)) throw ConfigError("--checkpoint-gbps must be positive");
  if (spec.checkpoint_interval && !(spec.checkpoint_interval->v > 0))
    throw ConfigError("--checkpoint-interval-min must be positive");

  RunCost r;
  const int gpus = e.plan.gpus();
  const double tokens_per_step = static_cast<double>(e.plan.global_batch) * e.plan.seq_len;
  r.steps = spec.steps > 0 ? spec.steps : std::ceil(spec.train_tokens / tokens_per_step);
  r.tokens = r.steps * tokens_per_step;
  r.compute = e.time.step() * r.steps;

  // Checkpoints: every rank writes its shard in parallel (Megatron's fully parallel distributed checkpoint,
  // torch.distributed.checkpoint), so the job writes at gpus x the per-GPU bandwidth.
  r.checkpoint_bytes = ckpt;
  r.checkpoint_write = ckpt / BytesPerSec(spec.checkpoint_gbps_per_gpu * 1e9 * gpus);
  // Asynchronous checkpointing (torch.distributed.checkpoint.async_save, Megatron --async-save) stalls training
  // only to copy each rank's shard to host memory; the write runs behind the next steps.
  const BytesPerSec host = system.gpu.host_link_bw;
  r.checkpoint_blocking = spec.async_checkpoint && host.v > 0 ? (ckpt / static_cast<double>(gpus)) / host
                                                              : r.checkpoint_write;

  if (spec.mtbf_hours_per_gpu > 0) {
    r.failures_modelled = true;
    r.system_mtbf = Seconds(spec.mtbf_hours_per_gpu * 3600.0 / gpus);
    Seconds tau = spec.checkpoint_interval ? *spec.checkpoint_interval
                                           : daly_interval(r.checkpoint_blocking, r.system_mtbf);
    // Checkpoints are taken between optimizer steps: at most one per step.
    tau = Seconds(std::max(tau.v, e.time.step().v));
    Seconds restart = spec.restart;
    if (spec.async_checkpoint) {
      // The next checkpoint cannot start before the last write finished, and a failure during the write falls
      // back one checkpoint further: charged to every restart (an upper bound).
      tau = Seconds(std::max(tau.v, r.checkpoint_write.v));
      restart += r.checkpoint_write;
    }
    r.checkpoint_interval = tau;
    r.wall = daly_wall_time(r.compute, tau, r.checkpoint_blocking, restart, r.system_mtbf);
    r.expected_failures = r.wall.v / r.system_mtbf.v;
  } else if (spec.checkpoint_interval) {
    r.checkpoint_interval = *spec.checkpoint_interval;
    r.wall = r.compute + r.checkpoint_blocking * (r.compute.v / r.checkpoint_interval.v);
  } else {
    r.wall = r.compute;
  }
  r.goodput = r.wall.v > 0 ? r.compute.v / r.wall.v : 1.0;

  r.gpu_hours = gpus * r.wall.v / 3600.0;
  r.cost = r.gpu_hours * spec.gpu_hour_price;
  // Dense training holds the board at its power limit; under a limit below TDP the clock falls as the cube root
  // of power (system.h set_power_limit), so power = TDP x clock_scale^3 inverts that model.
  r.gpu_power_w = spec.gpu_power_w > 0 ? spec.gpu_power_w : system.gpu.tdp_w * std::pow(system.gpu.clock_scale, 3);
  // Restarts and checkpoint stalls are charged at full power: an upper bound on the energy.
  r.it_energy_kwh = r.gpu_hours * r.gpu_power_w * spec.node_overhead / 1000.0;
  r.facility_energy_kwh = r.it_energy_kwh * spec.pue;
  return r;
}

}  // namespace shardplan
