#include "modeler/run_cost.h"

#include <doctest/doctest.h>

#include <cmath>

#include "modeler/problems.h"

using namespace shardplan;

namespace {
/// 8 GPUs (dp 8), 8 sequences of 1000 tokens a step, 2 s a step: 8,000 tokens per 2 s.
Estimate two_second_step() {
  Estimate e;
  e.plan.dp = 8;
  e.plan.global_batch = 8;
  e.plan.seq_len = 1000;
  e.time.compute = Seconds(2);
  return e;
}
System gpu_at(double tdp_w, double host_gbps) {
  System s;
  s.gpu.tdp_w = tdp_w;
  s.gpu.host_link_bw = GBps(host_gbps);
  return s;
}
}  // namespace

TEST_SUITE("run_cost") {
TEST_CASE("Young's interval is sqrt(2 delta M)") {
  CHECK(young_interval(Seconds(50), Seconds(10000)).v == doctest::Approx(1000));
  CHECK(young_interval(Seconds(2), Seconds(400)).v == doctest::Approx(40));
}

TEST_CASE("Daly's interval adds the higher-order terms and caps at the MTBF") {
  // x = 50 / 20000 = 0.0025: 1000 x (1 + 0.05/3 + 0.0025/9) - 50 = 966.944
  CHECK(daly_interval(Seconds(50), Seconds(10000)).v == doctest::Approx(966.944).epsilon(1e-5));
  CHECK(daly_interval(Seconds(300), Seconds(100)).v == doctest::Approx(100));  // delta >= 2M: M
  // Far from failures Daly tends to Young less delta.
  const double d = 1, m = 1e8;
  CHECK(daly_interval(Seconds(d), Seconds(m)).v == doctest::Approx(young_interval(Seconds(d), Seconds(m)).v - d)
                                                       .epsilon(1e-3));
}

TEST_CASE("Daly's wall time: exponential model, and the failure-free limit") {
  // M e^(R/M) (e^((tau+delta)/M) - 1) solve / tau = 1000 e^0.02 (e^0.11 - 1) x 10
  CHECK(daly_wall_time(Seconds(1000), Seconds(100), Seconds(10), Seconds(20), Seconds(1000)).v ==
        doctest::Approx(1186.2704).epsilon(1e-6));
  // M -> infinity: solve x (tau + delta) / tau, the checkpoint overhead alone.
  CHECK(daly_wall_time(Seconds(1000), Seconds(100), Seconds(10), Seconds(20), Seconds(1e12)).v ==
        doctest::Approx(1100).epsilon(1e-6));
}

TEST_CASE("the Llama 3 per-GPU MTBF: 419 interruptions in 54 days on 16,384 GPUs") {
  CHECK(kLlama3MtbfHoursPerGpu == doctest::Approx(50677.3).epsilon(1e-5));
  CHECK(kLlama3MtbfHoursPerGpu / 16384 == doctest::Approx(54.0 * 24 / 419));  // 3.09 h between interruptions
}

TEST_CASE("time, GPU-hours, cost and energy without failures") {
  RunSpec spec;
  spec.train_tokens = 80e6;  // 10,000 steps of 8,000 tokens
  spec.gpu_hour_price = 2;
  spec.pue = 1.1;
  const RunCost r = run_cost(two_second_step(), gpu_at(700, 50), Bytes(14e9), spec);
  CHECK(r.steps == 10000);
  CHECK(r.tokens == 80e6);
  CHECK(r.compute.v == doctest::Approx(20000));
  CHECK(r.wall.v == doctest::Approx(20000));
  CHECK(r.goodput == 1.0);
  CHECK_FALSE(r.failures_modelled);
  CHECK(r.gpu_hours == doctest::Approx(8 * 20000 / 3600.0));   // 44.44
  CHECK(r.cost == doctest::Approx(2 * 8 * 20000 / 3600.0));    // 88.89
  CHECK(r.gpu_power_w == 700);
  CHECK(r.it_energy_kwh == doctest::Approx(44.444444 * 0.7));  // 31.11 kWh
  CHECK(r.facility_energy_kwh == doctest::Approx(44.444444 * 0.7 * 1.1));
}

TEST_CASE("steps round the token count up; node overhead and power override scale energy") {
  RunSpec spec;
  spec.train_tokens = 8001;  // two steps
  spec.node_overhead = 1.5;
  spec.pue = 1.0;
  spec.gpu_power_w = 500;
  const RunCost r = run_cost(two_second_step(), gpu_at(700, 50), Bytes(0), spec);
  CHECK(r.steps == 2);
  CHECK(r.tokens == 16000);
  CHECK(r.it_energy_kwh == doctest::Approx(8 * 4 / 3600.0 * 500 * 1.5 / 1000).scale(0));
  CHECK(r.cost == 0);  // no price given
}

TEST_CASE("a power limit lowers the energy by the cube of the clock scale") {
  RunSpec spec;
  spec.steps = 1800;  // 3600 s
  System s = gpu_at(700, 50);
  s.gpu.clock_scale = std::cbrt(350.0 / 700.0);  // what set_power_limit(350 W) sets
  const RunCost r = run_cost(two_second_step(), s, Bytes(0), spec);
  CHECK(r.gpu_power_w == doctest::Approx(350));
  CHECK(r.it_energy_kwh == doctest::Approx(8 * 1 * 0.35));
}

TEST_CASE("failures: Daly's interval from the blocking checkpoint and the system MTBF") {
  RunSpec spec;
  spec.steps = 10000;  // 20,000 s of compute
  spec.mtbf_hours_per_gpu = 8000;  // 8 GPUs: a failure every 1000 h = 3.6e6 s
  spec.checkpoint_gbps_per_gpu = 1;  // 8 GB/s for the job: 14 GB in 1.75 s
  spec.restart = Seconds(600);
  const RunCost r = run_cost(two_second_step(), gpu_at(700, 50), Bytes(14e9), spec);
  CHECK(r.failures_modelled);
  CHECK(r.system_mtbf.v == doctest::Approx(3.6e6));
  CHECK(r.checkpoint_write.v == doctest::Approx(1.75));
  CHECK(r.checkpoint_blocking.v == doctest::Approx(1.75));
  CHECK(r.checkpoint_interval.v == doctest::Approx(daly_interval(Seconds(1.75), Seconds(3.6e6)).v));
  CHECK(r.checkpoint_interval.v == doctest::Approx(3548.3).epsilon(1e-3));  // sqrt(2 x 1.75 x 3.6e6) ~ 3550
  const double wall = daly_wall_time(Seconds(20000), r.checkpoint_interval, Seconds(1.75), Seconds(600),
                                     Seconds(3.6e6)).v;
  CHECK(r.wall.v == doctest::Approx(wall));
  CHECK(r.goodput == doctest::Approx(20000 / wall));
  CHECK(r.goodput < 1.0);
  CHECK(r.expected_failures == doctest::Approx(wall / 3.6e6).scale(0));
}

TEST_CASE("asynchronous checkpoints stall only for the copy to host memory") {
  RunSpec spec;
  spec.steps = 10000;
  spec.mtbf_hours_per_gpu = 8000;
  spec.checkpoint_gbps_per_gpu = 1;
  spec.async_checkpoint = true;
  const RunCost sync = [&] {
    RunSpec s = spec;
    s.async_checkpoint = false;
    return run_cost(two_second_step(), gpu_at(700, 50), Bytes(14e9), s);
  }();
  const RunCost r = run_cost(two_second_step(), gpu_at(700, 50), Bytes(14e9), spec);
  CHECK(r.checkpoint_blocking.v == doctest::Approx(14e9 / 8 / 50e9));  // 1.75 GB per GPU at 50 GB/s: 35 ms
  CHECK(r.checkpoint_write.v == doctest::Approx(1.75));
  CHECK(r.checkpoint_interval.v < sync.checkpoint_interval.v);  // cheaper checkpoints: more often
  CHECK(r.goodput > sync.goodput);
}

TEST_CASE("checkpoints are at most one per step") {
  RunSpec spec;
  spec.steps = 10000;
  spec.mtbf_hours_per_gpu = 8000;
  spec.checkpoint_gbps_per_gpu = 1;
  spec.async_checkpoint = true;
  System s = gpu_at(700, 50);
  Estimate e = two_second_step();
  e.time.compute = Seconds(5000);  // a step longer than Daly's interval
  CHECK(run_cost(e, s, Bytes(14e9), spec).checkpoint_interval.v == 5000);
}

TEST_CASE("an explicit interval without failures adds only the checkpoint stalls") {
  RunSpec spec;
  spec.steps = 10000;
  spec.checkpoint_gbps_per_gpu = 1;
  spec.checkpoint_interval = Seconds(1000);
  const RunCost r = run_cost(two_second_step(), gpu_at(700, 50), Bytes(14e9), spec);
  CHECK(r.wall.v == doctest::Approx(20000 + 20 * 1.75));
}

TEST_CASE("bad run specs are errors naming the flag") {
  const Estimate e = two_second_step();
  const System s = gpu_at(700, 50);
  RunSpec none;
  CHECK_THROWS_WITH_AS(run_cost(e, s, Bytes(0), none),
                       "a run needs exactly one of --train-tokens and --steps (a positive number)", ConfigError);
  RunSpec both;
  both.steps = 1;
  both.train_tokens = 1;
  CHECK_THROWS_AS(run_cost(e, s, Bytes(0), both), ConfigError);
  RunSpec pue;
  pue.steps = 1;
  pue.pue = 0.9;
  CHECK_THROWS_WITH_AS(run_cost(e, s, Bytes(0), pue), "--pue must be at least 1 (facility power over IT power)",
                       ConfigError);
  RunSpec bw;
  bw.steps = 1;
  bw.checkpoint_gbps_per_gpu = 0;
  CHECK_THROWS_WITH_AS(run_cost(e, s, Bytes(0), bw), "--checkpoint-gbps must be positive", ConfigError);
}

TEST_CASE("checkpoint bytes: weights and optimizer states of every parameter") {
  CHECK(checkpoint_bytes(405e9, 2, 12).v == doctest::Approx(5.67e12));
}
}
