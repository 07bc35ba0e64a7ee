#include "modeler/timeline.h"

#include <doctest/doctest.h>

#include <map>

#include "tests/modeler/test_fixtures.h"

using namespace shardplan;

namespace {

// A hand-made estimate: forward 1 ms and backward 2 ms per micro-batch on every stage, nothing exposed.
Estimate shaped(int stages, int chunks, int microbatches) {
  Estimate e;
  e.time.compute = Seconds(1);
  e.time.shape.stages = stages;
  e.time.shape.chunks = chunks;
  e.time.shape.microbatches = microbatches;
  e.time.shape.forward = Seconds(1e-3);
  e.time.shape.backward = Seconds(2e-3);
  return e;
}

double busy_us(const Timeline& t, int stage, Track track) {
  double s = 0;
  for (const TimelineEvent& e : t.events)
    if (e.stage == stage && e.track == track) s += e.dur_us;
  return s;
}

}  // namespace

TEST_CASE("timeline: 1F1B takes (m + p - 1)(f + b) and each stage idles (p - 1)(f + b)") {
  const Timeline t = build_timeline(shaped(4, 1, 8));
  CHECK(t.stages == 4);
  CHECK(t.pipeline_us == doctest::Approx((8 + 4 - 1) * 3000.0));
  for (int st = 0; st < 4; ++st) {
    CHECK(busy_us(t, st, Track::compute) == doctest::Approx(8 * 3000.0));
    CHECK(busy_us(t, st, Track::bubble) == doctest::Approx(3 * 3000.0));
  }
  // Stage 0 runs F0 F1 F2 F3 (warm-up p - 1 = 3, then 1F1B) before its first backward.
  std::vector<std::string> first;
  for (const TimelineEvent& e : t.events)
    if (e.stage == 0 && e.track == Track::compute && first.size() < 6) first.push_back(e.name);
  CHECK(first == std::vector<std::string>{"F0", "F1", "F2", "F3", "B0", "F4"});
}

TEST_CASE("timeline: interleaving divides the bubble by the chunks") {
  const Timeline t = build_timeline(shaped(4, 2, 8));
  CHECK(t.pipeline_us == doctest::Approx(8 * 3000.0 + 3 * 3000.0 / 2));
  std::map<int, int> per_chunk;
  for (const TimelineEvent& e : t.events)
    if (e.stage == 1 && e.track == Track::compute) ++per_chunk[e.chunk];
  CHECK(per_chunk[0] == 16);  // 8 forwards + 8 backwards per chunk
  CHECK(per_chunk[1] == 16);
}

TEST_CASE("timeline: exposed communication gets its own track; step ends with step comm and optimizer") {
  Estimate e = shaped(1, 1, 2);
  e.time.shape.layer_comm[static_cast<int>(CommKind::tp)] = Seconds(0.3e-3);  // per micro-batch, fwd + bwd
  e.time.shape.step_comm = Seconds(1e-3);
  e.time.optimizer = Seconds(0.5e-3);
  const Timeline t = build_timeline(e);
  CHECK(busy_us(t, 0, Track::comm_tp) == doctest::Approx(2 * 300.0));
  CHECK(busy_us(t, 0, Track::bubble) == 0);
  CHECK(t.pipeline_us == doctest::Approx(2 * 3000.0));
  CHECK(t.step_us == doctest::Approx(2 * 3000.0 + 1000 + 500));
}

TEST_CASE("timeline: the trace's step is the reported step, for evaluated plans of every schedule") {
  // Real evaluations, so exposed pipeline sends, the contention of hidden traffic and per-step communication are
  // all present: the list-scheduled step must end where TimeBreakdown::step() says.
  struct Case {
    const char* name;
    ModelDesc model;
    Plan plan;
  };
  ModelDesc eight = test::tiny_model();
  eight.layers = 8;
  ModelDesc moe = test::tiny_moe();
  moe.layers = 8;
  moe.moe->dense_layers = 1;
  Plan dense = test::plan_of(2, 1, 4, 1, 1, 32, 128);
  Plan pp = test::plan_of(2, 2, 2, 1, 1, 16, 128);
  Plan interleaved = test::plan_of(1, 4, 2, 1, 1, 16, 128);
  interleaved.vpp = 2;
  Plan zero3_pp = test::plan_of(1, 2, 4, 1, 2, 32, 128);
  zero3_pp.zero = 3;
  Plan uneven = test::plan_of(1, 3, 2, 1, 1, 12, 128);
  uneven.uneven_pipeline = true;
  Plan experts = test::plan_of(1, 2, 4, 1, 1, 32, 128);
  experts.ep = 4;
  experts.etp = 1;
  Plan overlapped = experts;
  overlapped.ep_comm_overlap = true;
  overlapped.tp = 2;
  overlapped.dp = 2;
  overlapped.etp = 1;
  overlapped.ep = 2;
  overlapped.pp = 1;  // combined 1F1B needs vpp > 1 under a pipeline (Megatron-Core); none here
  overlapped.sequence_parallel = true;
  overlapped.tp_comm_overlap = true;
  Plan zero1_dp = test::plan_of(1, 1, 8, 1, 1, 16, 512);  // gradient buckets far smaller than the model: hidden
  zero1_dp.zero = 1;
  double mb_contention = 0, step_contention = 0, mb_comm = 0;
  for (const Case& c : {Case{"dense tp2 dp4", eight, dense}, Case{"1F1B pp2", eight, pp},
                        Case{"interleaved pp4 vpp2", eight, interleaved}, Case{"zero3 pp2", eight, zero3_pp},
                        Case{"uneven pp3", eight, uneven}, Case{"moe ep4 pp2", moe, experts},
                        Case{"moe tp2 ep2 overlap", moe, overlapped},
                        Case{"llama-2-7b dp8 zero1", test::llama2_7b(), zero1_dp}}) {
    CAPTURE(c.name);
    test::Setup su(c.model, c.plan);
    su.framework.launcher = Launcher::none;  // the schedule's physics, not a launcher's rules (framework_rules.h)
    su.system.gpu.sm_count = 132;  // H100's SMs: collectives that run beside compute take some (time_model.cc)
    const Estimate e = evaluate(su.model, su.system, su.plan, su.framework);
    REQUIRE(e.time.compute.v > 0);
    const Timeline t = build_timeline(e);
    CHECK(t.step_us == doctest::Approx(e.time.step().v * 1e6).epsilon(1e-9));
    if (c.plan.pp > 1) {
      CHECK(e.time.bubble.v > 0);
    }
    mb_contention += e.time.shape.microbatch_contention.v;
    step_contention += e.time.shape.step_contention.v;
    mb_comm += e.time.shape.microbatch_comm.v;
  }
  // The cases exercise every term the trace once left out (the reason it ended 0.2-0.6% early or late).
  CHECK(mb_contention > 0);
  CHECK(step_contention > 0);
  CHECK(mb_comm > 0);
}

TEST_CASE("timeline: an invalid estimate is an internal error") {
  CHECK_THROWS_AS(build_timeline(Estimate{}), std::logic_error);
}
