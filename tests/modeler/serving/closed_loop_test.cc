#include "modeler/serving/closed_loop.h"

#include <doctest/doctest.h>

#include "tests/modeler/serving/serving_fixtures.h"

using namespace shardplan;
using namespace shardplan::serving;

namespace {
/// What every closed-loop case shares: Llama-3-8B on the round-number GPU, one worker, and a loop of `clients`
/// clients for `rounds` rounds over `slots` batch slots with a `budget`-token step. Not copyable: the inputs
/// point into it.
struct Loop {
  System sys = test::round_system();
  ServingModel sm = make_serving_model(test::llama3_8b(), Precision{});
  WorkerPlan w;
  ClosedLoopOptions o;

  Loop(int clients, int rounds, int slots, int budget) {
    o.clients = clients;
    o.rounds = rounds;
    o.slots = slots;
    o.budget = budget;
  }
  Loop(const Loop&) = delete;
  Loop& operator=(const Loop&) = delete;

  /// 1,024-token prompts, `output_len` tokens out, concurrency 4.
  ServeInputs inputs(Engine e, int output_len = 1) const {
    ServeInputs in;
    in.model = &sm;
    in.system = &sys;
    in.engine = e;
    in.workload.input_len = 1024;
    in.workload.output_len = output_len;
    in.workload.concurrency = 4;
    return in;
  }
  ClosedLoopResult run(const ServeInputs& in) const { return simulate_closed_loop(in, w, o); }
  double step(const StepLoad& load) const { return step_time(sm, sys, w, load).total.v; }
};
}  // namespace

TEST_CASE("closed loop: prompts sent together queue behind each other's prefills") {
  const Loop l(4, 1, 4, 1024);  // one prompt per step
  StepLoad one;
  one.prefill_tokens = 1024;
  one.prefill_keys = 512;
  one.prefill_seqs = 1;
  const double step = l.step(one);
  for (Engine e : {Engine::vllm, Engine::sglang}) {
    INFO(engine_name(e));
    const ClosedLoopResult r = l.run(l.inputs(e));
    // The i-th prompt gets its first token after i steps: mean (1 + 2 + 3 + 4) / 4 = 2.5 steps.
    CHECK(r.ttft.v == doctest::Approx(2.5 * step));
    CHECK(r.duration.v == doctest::Approx(4 * step));
  }
  // TRT-LLM: the same order, but each finished request rides along for one more (wasted) iteration.
  const ClosedLoopResult rt = l.run(l.inputs(Engine::trtllm));
  CHECK(rt.ttft.v > 2.5 * step);
}

TEST_CASE("closed loop: one client sees one prefill step and then pure decode steps") {
  const Loop l(1, 3, 8, 8192);
  const ClosedLoopResult r = l.run(l.inputs(Engine::vllm, 65));
  StepLoad pl;
  pl.prefill_tokens = 1024;
  pl.prefill_keys = 512;
  pl.prefill_seqs = 1;
  StepLoad dl;
  dl.decode_seqs = 1;
  dl.decode_ctx = 1024 + 32;
  CHECK(r.ttft.v == doctest::Approx(l.step(pl)));
  CHECK(r.tpot.v == doctest::Approx(l.step(dl)).epsilon(0.01).scale(0));
  CHECK(r.mean_batch <= 1.0);
}

TEST_CASE("closed loop: SGLang pauses decoding for prefill batches, so its TPOT is no lower than vLLM's") {
  const Loop l(16, 4, 16, 2048);
  const ClosedLoopResult rv = l.run(l.inputs(Engine::vllm, 64));
  const ClosedLoopResult rs = l.run(l.inputs(Engine::sglang, 64));
  CHECK(rs.tpot.v >= rv.tpot.v * 0.999);
  CHECK(rv.ttft.v > 0);
}

TEST_CASE("closed loop: SGLang with mixed chunks decodes through prefill batches, like vLLM") {
  const Loop l(16, 4, 16, 2048);
  const ServeInputs paused = l.inputs(Engine::sglang, 64);
  ServeInputs mixed = paused;
  mixed.plan.mixed_chunk = true;
  const ClosedLoopResult rp = l.run(paused);
  const ClosedLoopResult rm = l.run(mixed);
  const ClosedLoopResult rv = l.run(l.inputs(Engine::vllm, 64));
  // Decodes no longer wait out the prefill steps, so a request finishes sooner after its first token.
  CHECK(rm.tpot.v < rp.tpot.v);
  // Same budget rule as vLLM's mixed steps (decode tokens first, then prompt chunks): the same schedule.
  CHECK(rm.tpot.v == doctest::Approx(rv.tpot.v));
  CHECK(rm.ttft.v == doctest::Approx(rv.ttft.v));
}

TEST_CASE("closed loop: TRT-LLM's retiring slot delays a waiting request by one iteration") {
  const Loop l(2, 1, 1, 8192);  // one slot: the second request waits for the first one's
  const ClosedLoopResult rv = l.run(l.inputs(Engine::vllm, 8));
  const ClosedLoopResult rt = l.run(l.inputs(Engine::trtllm, 8));
  CHECK(rt.ttft.v > rv.ttft.v);
}

TEST_CASE("closed loop: a client's next request misses the steps a busy engine runs before it arrives") {
  // Two clients, one prompt per step: client 0 finishes one step before client 1, while the engine is busy.
  Loop l(2, 3, 2, 1024);
  const ServeInputs in = l.inputs(Engine::vllm, 9);
  const double lag0 = l.run(in).ttft.v;
  l.o.client_lag_steps = 1;
  const double lag1 = l.run(in).ttft.v;
  l.o.client_lag_steps = 2;
  const double lag2 = l.run(in).ttft.v;
  CHECK(lag1 > lag0);
  CHECK(lag2 > lag1);
  // One client: the engine idles when the request comes back and waits for it, so the lag costs nothing.
  Loop one(1, 3, 1, 1024);
  const double idle0 = one.run(in).ttft.v;
  one.o.client_lag_steps = 2;
  CHECK(one.run(in).ttft.v == doctest::Approx(idle0));
}

TEST_CASE("disaggregated closed loop: FCFS prefill steps of per_step prompts") {
  // 4 prompts, one per 1 s step: first tokens at 1, 2, 3, 4 s.
  CHECK(disaggregated_closed_loop_ttft(4, 1, 1, Seconds(1), Seconds(10)).v == doctest::Approx(2.5));
  // Two per step: 1, 1, 2, 2.
  CHECK(disaggregated_closed_loop_ttft(4, 1, 2, Seconds(1), Seconds(10)).v == doctest::Approx(1.5));
  // Second round: the clients return 10 s after their first token, in the order they were served, one step
  // apart, so the pool serves each at once: TTFT 1 s each; mean over 8 requests (2.5 + 1) / 2.
  CHECK(disaggregated_closed_loop_ttft(4, 2, 1, Seconds(1), Seconds(10)).v == doctest::Approx(1.75));
}
