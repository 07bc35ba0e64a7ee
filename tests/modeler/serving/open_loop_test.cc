#include "modeler/serving/open_loop.h"

#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include "modeler/serving/closed_loop.h"
#include "tests/modeler/serving/serving_fixtures.h"

using namespace shardplan;
using namespace shardplan::serving;

namespace {
constexpr double kInf = std::numeric_limits<double>::infinity();

/// Llama-3-8B on the round-number GPU, one worker; not copyable (the inputs point into it).
struct Open {
  System sys = test::round_system();
  ServingModel sm = make_serving_model(test::llama3_8b(), Precision{});
  WorkerPlan w;
  OpenLoopOptions o;

  Open() = default;
  Open(const Open&) = delete;
  Open& operator=(const Open&) = delete;

  ServeInputs inputs(Engine e) const {
    ServeInputs in;
    in.model = &sm;
    in.system = &sys;
    in.engine = e;
    return in;
  }
  OpenLoopResult run(const ServeInputs& in, const std::vector<OpenLoopRequest>& r) const {
    return simulate_open_loop(in, w, r, o);
  }
  double step(const StepLoad& l) const { return step_time(sm, sys, w, l).total.v; }
};

std::vector<OpenLoopRequest> at(const std::vector<double>& times, int in, int out) {
  return make_requests(times, std::vector<LengthPair>(times.size(), LengthPair{in, out}));
}
}  // namespace

TEST_CASE("poisson arrivals: first at 0, mean interval 1 / rate, deterministic per seed; inf: all at 0") {
  const std::vector<double> a = poisson_arrivals(20001, 4.0, 0);
  CHECK(a.front() == 0.0);
  for (size_t i = 1; i < a.size(); ++i) REQUIRE(a[i] >= a[i - 1]);
  CHECK(a.back() / 20000.0 == doctest::Approx(0.25).epsilon(0.03));
  CHECK(poisson_arrivals(50, 4.0, 0) == poisson_arrivals(50, 4.0, 0));
  CHECK(poisson_arrivals(50, 4.0, 0) != poisson_arrivals(50, 4.0, 1));
  for (double t : poisson_arrivals(10, kInf, 3)) CHECK(t == 0.0);
}

TEST_CASE("open loop: one request sees one prefill step, then decode steps; ITL is the decode step") {
  const Open l;
  const OpenLoopResult r = l.run(l.inputs(Engine::vllm), at({0.0}, 1024, 65));
  StepLoad pl;
  pl.prefill_tokens = 1024;
  pl.prefill_keys = 512;
  pl.prefill_seqs = 1;
  StepLoad dl;
  dl.decode_seqs = 1;
  dl.decode_ctx = 1024 + 32;
  CHECK(r.ttft.mean == doctest::Approx(l.step(pl)));
  CHECK(r.tpot.mean == doctest::Approx(l.step(dl)).epsilon(0.01));
  CHECK(r.itl.count == 64);
  CHECK(r.itl.mean == doctest::Approx(r.tpot.mean));
  CHECK(r.e2e.mean == doctest::Approx(r.ttft.mean + 64 * r.tpot.mean));
  CHECK(r.requests_per_s == doctest::Approx(1.0 / r.duration));
}

TEST_CASE("open loop: requests sent at once are the closed loop's first round") {
  // Same schedulers: with every request at t = 0 and room for all, the open loop is one round of the closed loop.
  const Open l;
  ClosedLoopOptions co;
  co.clients = 6;
  co.rounds = 1;
  co.slots = 6;
  co.budget = 2048;
  for (Engine e : {Engine::vllm, Engine::sglang, Engine::trtllm}) {
    INFO(engine_name(e));
    ServeInputs in = l.inputs(e);
    in.workload.input_len = 1024;
    in.workload.output_len = 33;
    const ClosedLoopResult c = simulate_closed_loop(in, l.w, co);
    OpenLoopOptions o;
    o.slots = 6;
    o.budget = 2048;
    const OpenLoopResult r = simulate_open_loop(in, l.w, at(std::vector<double>(6, 0.0), 1024, 33), o);
    CHECK(r.ttft.mean == doctest::Approx(c.ttft.v).epsilon(1e-3));
    CHECK(r.tpot.mean == doctest::Approx(c.tpot.v).epsilon(1e-3));
    CHECK(r.duration == doctest::Approx(c.duration.v).epsilon(1e-3));
  }
}

TEST_CASE("open loop: spread arrivals do not queue, a burst does; percentiles order") {
  const Open l;
  const ServeInputs in = l.inputs(Engine::vllm);
  // Ten requests 10 s apart: each finds the engine idle, so every TTFT is one prefill step.
  std::vector<double> spread;
  for (int i = 0; i < 10; ++i) spread.push_back(10.0 * i);
  const OpenLoopResult s = l.run(in, at(spread, 4096, 8));
  CHECK(s.ttft.p99 == doctest::Approx(s.ttft.p50));
  CHECK(s.max_waiting == 1);
  // The same ten at once, 4096-token prompts and an 8192-token budget: two prompts a step, TTFT up to 5 steps.
  const OpenLoopResult b = l.run(in, at(std::vector<double>(10, 0.0), 4096, 8));
  CHECK(b.ttft.p99 > 4 * s.ttft.p50);
  CHECK(b.ttft.p50 < b.ttft.p99);
  CHECK(b.ttft.mean > s.ttft.mean);
  CHECK(b.max_waiting == 10);
}

TEST_CASE("open loop: a longer prompt takes longer to its first token; the KV cache limits admission") {
  Open l;
  const ServeInputs in = l.inputs(Engine::vllm);
  const OpenLoopResult shorter = l.run(in, at({0.0}, 512, 4));
  const OpenLoopResult longer = l.run(in, at({0.0}, 8192, 4));
  CHECK(longer.ttft.mean > shorter.ttft.mean);
  // Room for one 1,100-token sequence: the second request waits for the first to finish.
  const OpenLoopResult both = l.run(in, at({0.0, 0.0}, 1024, 64));
  l.o.kv_tokens = 1500;
  const OpenLoopResult one_at_a_time = l.run(in, at({0.0, 0.0}, 1024, 64));
  CHECK(one_at_a_time.ttft.p99 > both.ttft.p99 + 0.5 * both.e2e.p50);
}

TEST_CASE("open loop prediction: stable below the capacity, unstable above, and bad input refused") {
  const Open l;
  ServeInputs in = l.inputs(Engine::vllm);
  OpenLoopWorkload wl;
  wl.lengths.assign(200, LengthPair{1024, 128});
  wl.rate = 1.0;
  const OpenLoopPrediction low = predict_open_loop(in, wl);
  CHECK(low.stable);
  CHECK(low.capacity_rps > 1.0);
  CHECK(low.run.requests_per_s == doctest::Approx(1.0).epsilon(0.25));
  wl.rate = 10 * low.capacity_rps;
  const OpenLoopPrediction high = predict_open_loop(in, wl);
  CHECK_FALSE(high.stable);
  CHECK(high.queue_growth_rps == doctest::Approx(wl.rate - high.capacity_rps));
  CHECK(high.run.ttft.p99 > 10 * low.run.ttft.p99);
  CHECK(high.run.requests_per_s < wl.rate);
  // Two workers share the requests round-robin: each serves every other request, so 200 requests on two
  // workers, all sent at once, run as 100 on one: twice the capacity.
  ServeInputs two = in;
  two.plan.agg.workers = 2;
  OpenLoopWorkload half = wl;
  half.lengths.resize(100);
  const OpenLoopPrediction one = predict_open_loop(in, half);
  const OpenLoopPrediction both = predict_open_loop(two, wl);
  CHECK(both.ranks == 2);
  CHECK(both.capacity_rps == doctest::Approx(2 * one.capacity_rps));
  wl.rate = 0;
  CHECK_THROWS_AS(predict_open_loop(in, wl), ConfigError);
  wl.rate = 1;
  ServeInputs dis = in;
  dis.plan.mode = Mode::disaggregated;
  CHECK_THROWS_AS(predict_open_loop(dis, wl), ConfigError);
  ServeInputs stat = in;
  stat.static_batch = 4;
  CHECK_THROWS_AS(predict_open_loop(stat, wl), ConfigError);
  CHECK_THROWS_AS(simulate_open_loop(in, l.w, {}, l.o), ConfigError);
  CHECK_THROWS_AS(simulate_open_loop(in, l.w, at({1.0, 0.0}, 8, 8), l.o), ConfigError);
}
