#include "modeler/moe_overlap.h"

#include <doctest/doctest.h>

#include "tests/modeler/test_fixtures.h"

using namespace shardplan;

TEST_SUITE("moe_overlap") {

TEST_CASE("the plan's dispatcher, else the framework's first") {
  Plan p;
  Framework f = test::synthetic_framework();
  f.moe_dispatchers = {MoeDispatcher::allgather, MoeDispatcher::alltoall};
  CHECK(moe_dispatcher_of(p, f) == MoeDispatcher::allgather);
  p.moe_dispatcher = MoeDispatcher::deepep;
  CHECK(moe_dispatcher_of(p, f) == MoeDispatcher::deepep);
}

TEST_CASE("paired fraction: the steady state of each schedule") {
  // No pipeline, 8 micro-batches: all but the first forward and last backward pair: 7/8.
  CHECK(paired_fraction(1, 1, 8) == doctest::Approx(7.0 / 8.0));
  CHECK(paired_fraction(1, 1, 1) == 0.0);
  // 1F1B, pp 4, 16 micro-batches: 3 warm-up forwards of 16.
  CHECK(paired_fraction(4, 1, 16) == doctest::Approx(13.0 / 16.0));
  // Interleaved pp 8 vpp 4, 128 micro-batches (DeepSeek-V3 on 1,024 H100s): 2x7 + 3x8 = 38 warm-up chunks of 512.
  CHECK(paired_fraction(8, 4, 128) == doctest::Approx(1.0 - 38.0 / 512.0));
  // Fewer micro-batches than warm-up: nothing pairs.
  CHECK(paired_fraction(8, 4, 4) == 0.0);
}

TEST_CASE("paired window: each transfer hides behind one compute block of the other pass") {
  const Seconds ms(1e-3);
  // 4 ms of forward and 6 ms of backward transfers (2+2, 3+3) against blocks of 5 ms: all hidden.
  CHECK(paired_exposed_fraction(PairedLayer{ms * 4, ms * 6, ms * 5, ms * 5, ms * 5, ms * 5}, 1.0) == 0.0);
  // The same transfers against 1 ms blocks: (3-1) + (2-1) + (3-1) + (2-1) = 6 of 10 ms exposed.
  CHECK(paired_exposed_fraction(PairedLayer{ms * 4, ms * 6, ms, ms, ms, ms}, 1.0) == doctest::Approx(0.6));
  // Only the small forward experts block is short: the backward's second transfer (3 ms) outlasts it by 2.5 ms.
  CHECK(paired_exposed_fraction(PairedLayer{ms * 4, ms * 6, ms * 9, ms * 0.5, ms * 9, ms * 9}, 1.0) ==
        doctest::Approx(0.25));
  // Unpaired passes expose everything: 75% paired -> 0.75 x 0.6 + 0.25.
  CHECK(paired_exposed_fraction(PairedLayer{ms * 4, ms * 6, ms, ms, ms, ms}, 0.75) == doctest::Approx(0.7));
  CHECK(paired_exposed_fraction(PairedLayer{}, 1.0) == 0.0);
  // Communication on 20 of 132 SMs: the hidden 40% still costs 20/132 of itself.
  PairedLayer sm{ms * 4, ms * 6, ms, ms, ms, ms};
  sm.comm_sm_share = 20.0 / 132.0;
  CHECK(paired_exposed_fraction(sm, 1.0) == doctest::Approx(0.6 + 0.4 * 20.0 / 132.0));
  sm = PairedLayer{ms * 4, ms * 6, ms * 5, ms * 5, ms * 5, ms * 5};
  sm.comm_sm_share = 0.25;
  CHECK(paired_exposed_fraction(sm, 1.0) == doctest::Approx(0.25));
}

TEST_CASE("DeepSeek-V3 Table 2: bubbles, parameter copies and activations of 1F1B, DualPipe and DualPipeV") {
  const Seconds f(1.0), b(2.0), w(1.0), fb(2.5);  // b includes w here as the report's B is the full backward
  const ScheduleCost one = schedule_cost(MoeSchedule::one_f_one_b, 8, f, b, Seconds(0), fb);
  CHECK(one.bubble.v == doctest::Approx(7.0 * 3.0));
  CHECK(one.parameter_copies == 1);
  CHECK(one.activation_stages == 8);
  const ScheduleCost dual = schedule_cost(MoeSchedule::dualpipe, 8, f, b, w, fb);
  CHECK(dual.bubble.v == doctest::Approx(3.0 * (2.5 + 2.0 - 3.0)));  // (PP/2 - 1)(F&B + B - 3W)
  CHECK(dual.parameter_copies == 2);
  CHECK(dual.activation_stages == 9);
  const ScheduleCost v = schedule_cost(MoeSchedule::dualpipev, 8, f, b, w, fb);
  CHECK(v.bubble.v == doctest::Approx(dual.bubble.v));
  CHECK(v.parameter_copies == 1);
}

}  // TEST_SUITE
