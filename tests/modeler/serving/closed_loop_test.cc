#include "modeler/serving/closed_loop.h"

#include <doctest/doctest.h>

#include "tests/modeler/serving/serving_fixtures.h"

using namespace shardplan;
using namespace shardplan::serving;

namespace {
ServeInputs inputs(const ServingModel& sm, const System& sys, Engine e) {
  ServeInputs in;
  in.model = &sm;
  in.system = &sys;
  in.engine = e;
  in.workload.input_len = 1024;
  in.workload.output_len = 1;
  in.workload.concurrency = 4;
  return in;
}
}  // namespace

TEST_CASE("closed loop: prompts sent together queue behind each other's prefills") {
  const System sys = test::round_system();
  const ServingModel sm = make_serving_model(test::llama3_8b(), Precision{});
  WorkerPlan w;
  ClosedLoopOptions o;
  o.clients = 4;
  o.rounds = 1;
  o.slots = 4;
  o.budget = 1024;  // one prompt per step
  StepLoad one;
  one.prefill_tokens = 1024;
  one.prefill_keys = 512;
  one.prefill_seqs = 1;
  const double step = step_time(sm, sys, w, one).total.v;
  for (Engine e : {Engine::vllm, Engine::sglang}) {
    INFO(engine_name(e));
    const ClosedLoopResult r = simulate_closed_loop(inputs(sm, sys, e), w, o);
    // The i-th prompt gets its first token after i steps: mean (1 + 2 + 3 + 4) / 4 = 2.5 steps.
    CHECK(r.ttft.v == doctest::Approx(2.5 * step));
    CHECK(r.duration.v == doctest::Approx(4 * step));
  }
  // TRT-LLM: the same order, but each finished request rides along for one more (wasted) iteration.
  const ClosedLoopResult rt = simulate_closed_loop(inputs(sm, sys, Engine::trtllm), w, o);
  CHECK(rt.ttft.v > 2.5 * step);
}

TEST_CASE("closed loop: one client sees one prefill step and then pure decode steps") {
  const System sys = test::round_system();
  const ServingModel sm = make_serving_model(test::llama3_8b(), Precision{});
  WorkerPlan w;
  ServeInputs in = inputs(sm, sys, Engine::vllm);
  in.workload.output_len = 65;
  ClosedLoopOptions o;
  o.clients = 1;
  o.rounds = 3;
  o.slots = 8;
  o.budget = 8192;
  const ClosedLoopResult r = simulate_closed_loop(in, w, o);
  StepLoad pl;
  pl.prefill_tokens = 1024;
  pl.prefill_keys = 512;
  pl.prefill_seqs = 1;
  StepLoad dl;
  dl.decode_seqs = 1;
  dl.decode_ctx = 1024 + 32;
  CHECK(r.ttft.v == doctest::Approx(step_time(sm, sys, w, pl).total.v));
  CHECK(r.tpot.v == doctest::Approx(step_time(sm, sys, w, dl).total.v).epsilon(0.01));
  CHECK(r.mean_batch <= 1.0);
}

TEST_CASE("closed loop: SGLang pauses decoding for prefill batches, so its TPOT is no lower than vLLM's") {
  const System sys = test::round_system();
  const ServingModel sm = make_serving_model(test::llama3_8b(), Precision{});
  WorkerPlan w;
  ClosedLoopOptions o;
  o.clients = 16;
  o.rounds = 4;
  o.slots = 16;
  o.budget = 2048;
  ServeInputs v = inputs(sm, sys, Engine::vllm);
  v.workload.output_len = 64;
  ServeInputs s = v;
  s.engine = Engine::sglang;
  const ClosedLoopResult rv = simulate_closed_loop(v, w, o);
  const ClosedLoopResult rs = simulate_closed_loop(s, w, o);
  CHECK(rs.tpot.v >= rv.tpot.v * 0.999);
  CHECK(rv.ttft.v > 0);
}

TEST_CASE("closed loop: SGLang with mixed chunks decodes through prefill batches, like vLLM") {
  const System sys = test::round_system();
  const ServingModel sm = make_serving_model(test::llama3_8b(), Precision{});
  WorkerPlan w;
  ClosedLoopOptions o;
  o.clients = 16;
  o.rounds = 4;
  o.slots = 16;
  o.budget = 2048;
  ServeInputs paused = inputs(sm, sys, Engine::sglang);
  paused.workload.output_len = 64;
  ServeInputs mixed = paused;
  mixed.plan.mixed_chunk = true;
  ServeInputs v = paused;
  v.engine = Engine::vllm;
  const ClosedLoopResult rp = simulate_closed_loop(paused, w, o);
  const ClosedLoopResult rm = simulate_closed_loop(mixed, w, o);
  const ClosedLoopResult rv = simulate_closed_loop(v, w, o);
  // Decodes no longer wait out the prefill steps, so a request finishes sooner after its first token.
  CHECK(rm.tpot.v < rp.tpot.v);
  // Same budget rule as vLLM's mixed steps (decode tokens first, then prompt chunks): the same schedule.
  CHECK(rm.tpot.v == doctest::Approx(rv.tpot.v));
  CHECK(rm.ttft.v == doctest::Approx(rv.ttft.v));
}

TEST_CASE("closed loop: TRT-LLM's retiring slot delays a waiting request by one iteration") {
  const System sys = test::round_system();
  const ServingModel sm = make_serving_model(test::llama3_8b(), Precision{});
  WorkerPlan w;
  ClosedLoopOptions o;
  o.clients = 2;
  o.rounds = 1;
  o.slots = 1;  // the second request waits for the first one's slot
  o.budget = 8192;
  ServeInputs v = inputs(sm, sys, Engine::vllm);
  v.workload.output_len = 8;
  ServeInputs t = v;
  t.engine = Engine::trtllm;
  const ClosedLoopResult rv = simulate_closed_loop(v, w, o);
  const ClosedLoopResult rt = simulate_closed_loop(t, w, o);
  CHECK(rt.ttft.v > rv.ttft.v);
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
