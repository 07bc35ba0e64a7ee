#include "modeler/timeline.h"

#include <doctest/doctest.h>

#include <map>

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

TEST_CASE("timeline: an invalid estimate is an internal error") {
  CHECK_THROWS_AS(build_timeline(Estimate{}), std::logic_error);
}
