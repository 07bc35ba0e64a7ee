#include <doctest/doctest.h>

#include "tests/modeler/test_fixtures.h"

using namespace shardplan;

namespace {
// The tiny model with 8 layers, so that pp x vpp has room.
test::Setup with_pp(int pp, int vpp, int gbs = 16, int tp = 1, int dp = 1) {
  ModelDesc m = test::tiny_model();
  m.layers = 8;
  Plan p = test::plan_of(tp, pp, dp, 1, 1, gbs, 128);
  p.vpp = vpp;
  return test::Setup(m, p);
}
}  // namespace

TEST_SUITE("pipeline_parallel") {

TEST_CASE("bubble (p - 1) / v micro-batch times (Narayanan et al. 2021, Sec. 2.2)") {
  CHECK(with_pp(1, 1).schedule().bubble_fraction == 0);
  CHECK(with_pp(2, 1).schedule().bubble_fraction == 1);
  CHECK(with_pp(4, 1).schedule().bubble_fraction == 3);
  CHECK(with_pp(4, 2).schedule().bubble_fraction == 1.5);
  CHECK(with_pp(2, 4).schedule().bubble_fraction == 0.25);
  CHECK(with_pp(4, 2).schedule().microbatches == 16);
}

TEST_CASE("in flight: p micro-batches under 1F1B, x (1 + (p - 1) / (p v)) interleaved, at most m") {
  CHECK(with_pp(1, 1).schedule().in_flight == 1);
  CHECK(with_pp(4, 1).schedule().in_flight == 4);
  // p 4, v 2: 4 x (1 + 3/8) = 5.5 (Korthikanti et al. 2022, Sec. 4.2.3).
  CHECK(with_pp(4, 2).schedule().in_flight == 5.5);
  // p 2, v 4: 2 x (1 + 1/8) = 2.25.
  CHECK(with_pp(2, 4).schedule().in_flight == 2.25);
  // Fewer micro-batches than stages: only m are ever in flight.
  CHECK(with_pp(4, 1, 2).schedule().in_flight == 2);
  // Interleaved with m = p: the warm-up runs all m v chunk-micro-batches, m whole-stage micro-batches, not 5.5.
  CHECK(with_pp(4, 2, 4).schedule().in_flight == 4);
  CHECK(with_pp(4, 2, 8).schedule().in_flight == 5.5);
}

TEST_CASE("shard: layers over stages; chunks per stage recorded") {
  const Sharding sh = with_pp(4, 2).sharding();
  CHECK(sh.layers == 2);
  CHECK(sh.stages == 4);
  CHECK(sh.chunks == 2);
  // Uneven splits: the busiest stage holds ceil(layers / (p v)) layers per chunk.
  test::Setup su = with_pp(3, 1);
  su.plan.uneven_pipeline = true;
  CHECK(su.sharding().layers == 3);  // 8 layers over 3 stages: 3, 3, 2
  su.plan.vpp = 2;
  CHECK(su.sharding().layers == 4);  // 6 chunks of at most 2 layers, 2 chunks per stage
}

TEST_CASE("sends: the [tokens x h] activation split over tp, forward and backward per chunk boundary") {
  // tp 2, dp 2, pp 2: stride tp x cp x dp = 4. 128 tokens x 64 x 2 bytes / tp 2 = 8,192 bytes.
  const CommPlan c = with_pp(2, 1, 16, 2, 2).comm();
  const CommOp* send = nullptr;
  for (const CommOp& op : c.microbatch)
    if (op.kind == CommKind::pp) send = &op;
  REQUIRE(send != nullptr);
  CHECK(send->collective == Collective::send_recv);
  CHECK(send->bytes.v == 8192);
  CHECK(send->group == 2);
  CHECK(send->stride == 4);
  CHECK(send->count == 2);
  CHECK(send->window == Window::exposed);
  // Interleaved: v times the boundaries, overlapped with compute.
  const CommPlan ci = with_pp(2, 2, 16, 2, 2).comm();
  for (const CommOp& op : ci.microbatch)
    if (op.kind == CommKind::pp) {
      CHECK(op.count == 4);
      CHECK(op.window == Window::layer);
    }
  CHECK(with_pp(1, 1).comm().microbatch.empty());
}

TEST_CASE("problems: layers, interleaving, micro-batch groups") {
  Problems ps = with_pp(3, 1).problems(pipeline_parallel());
  REQUIRE(ps.size() == 1);
  CHECK(ps[0].code == "pp_divides_layers");
  CHECK(ps[0].message == "pp x vpp (3 x 1) does not divide layers (8); --uneven-pp allows an uneven split");
  test::Setup uneven = with_pp(3, 1);
  uneven.plan.uneven_pipeline = true;
  CHECK(uneven.problems(pipeline_parallel()).empty());
  uneven.plan.pp = 16;  // more stages than layers, even when uneven splits are allowed
  ps = uneven.problems(pipeline_parallel());
  CHECK(test::codes(ps) == "pp_exceeds_layers");
  CHECK(ps[0].message == "pp x vpp (16) exceeds layers (8)");
  ps = with_pp(1, 2).problems(pipeline_parallel());
  CHECK(test::codes(ps) == "vpp_needs_pp");
  CHECK(ps[0].message == "vpp (2) needs pp > 1");
  // 6 micro-batches do not split into groups of pp 4.
  ps = with_pp(4, 2, 6).problems(pipeline_parallel());
  CHECK(test::codes(ps) == "vpp_microbatches");
  CHECK(ps[0].message == "interleaved schedule needs micro-batches per step (6) divisible by pp (4)");
  ps = with_pp(0, 1).problems(pipeline_parallel());
  REQUIRE(ps.size() == 1);
  CHECK(ps[0].message == "pp (0) and vpp (1) must be at least 1");
  CHECK(with_pp(4, 2).problems(pipeline_parallel()).empty());
  CHECK(std::string(pipeline_parallel().name()) == "pp");
}


TEST_CASE("MTP modules without a layout: on the last rank, with the loss; one more layer there") {
  test::Setup s = with_pp(4, 1);
  s.model.mtp_layers = 1;
  s.plan.mtp_layers = 1;
  const Sharding sh = s.sharding();
  CHECK(sh.layers == 3);  // 2 layers + the MTP module's layer
  REQUIRE(sh.ends.has_value());
  CHECK(sh.ends->loss);
  CHECK_FALSE(sh.ends->embedding);
  CHECK(sh.ends->mtp == 1);
  CHECK_FALSE(with_pp(4, 1).sharding().ends.has_value());  // no MTP, no layout: as before
}

TEST_CASE("a custom layout: every distinct rank load in rank order; Sharding::rank_load names the one applied") {
  test::Setup s = with_pp(2, 2);
  s.model.mtp_layers = 1;
  s.plan.mtp_layers = 1;
  s.plan.pipeline_layout = "Et|t*3|t*3|tmL";  // rank 0: stages 0, 2 (E + 4); rank 1: stages 1, 3 (4 + mtp + L)
  const Sharding sh = s.sharding();
  REQUIRE(sh.rank_loads.size() == 2);
  CHECK(sh.layers == 4);  // rank 0's, applied by default
  CHECK(sh.ends->embedding);
  CHECK(sh.rank_loads[1].layers == 5);
  CHECK(sh.rank_loads[1].ends.loss);
  CHECK(sh.rank_loads[1].ends.mtp == 1);
  Sharding last = s.unsharded();
  last.rank_load = 1;
  for (const Strategy* st : all_strategies()) st->shard(s.ctx(), &last);
  CHECK(last.layers == 5);
  CHECK(last.ends->loss);
  CHECK_FALSE(last.ends->embedding);
  CHECK(last.rank_loads.size() == 2);
  // Equal loads are one: ranks 1 and 2 of "Et*2|t*2|t*2|t*2L" hold the same.
  s.plan.mtp_layers = 0;
  s.plan.pp = 4;
  s.plan.vpp = 1;
  s.plan.pipeline_layout = "Et*2|t*2|t*2|t*2L";
  CHECK(s.sharding().rank_loads.size() == 3);
  CHECK(s.problems(pipeline_parallel()).empty());
}

TEST_CASE("a custom layout: a later rank holds fewer micro-batches in flight (Megatron's warm-up per rank)") {
  auto in_flight = [](const test::Setup& s, int load) {
    Sharding sh = s.unsharded();
    sh.rank_load = load;
    for (const Strategy* st : all_strategies()) st->shard(s.ctx(), &sh);
    Schedule sched;
    for (const Strategy* st : all_strategies()) st->schedule(s.ctx(), sh, &sched);
    return sched.in_flight;
  };
  // 1F1B, pp 4, 16 micro-batches: rank r holds pp - r. Loads: rank 0 (E), ranks 1-2 (equal: rank 1's), rank 3 (L).
  test::Setup s = with_pp(4, 1);
  s.plan.pipeline_layout = "Et*2|t*2|t*2|t*2L";
  CHECK(in_flight(s, 0) == 4);
  CHECK(in_flight(s, 1) == 3);
  CHECK(in_flight(s, 2) == 1);
  // Interleaved, pp 2, v 2: rank 0 (2 x 2 + 2 - 1) / 2 = 2.5 chunk-micro-batches of the stage (the even split's),
  // rank 1 (2 x 2 + 2 - 1 - 2) / 2 = 1.5.
  test::Setup v = with_pp(2, 2);
  v.plan.pipeline_layout = "Et|t*3|t*3|tL";
  CHECK(in_flight(v, 0) == 2.5);
  CHECK(in_flight(v, 0) == with_pp(2, 2).schedule().in_flight);
  CHECK(in_flight(v, 1) == 1.5);
  // Fewer micro-batches than the warm-up: at most m.
  test::Setup few = with_pp(4, 1, 2);
  few.plan.pipeline_layout = "Et*2|t*2|t*2|t*2L";
  CHECK(in_flight(few, 1) == 2);
}

TEST_CASE("a custom layout: each rank's MoE layers counted by index (the dense first layers on the first stage)") {
  ModelDesc m = test::tiny_moe();
  m.layers = 8;
  m.moe->dense_layers = 3;  // layers 0-2 dense, as DeepSeek-V3's first_k_dense_replace
  Plan p = test::plan_of(1, 2, 1, 1, 1, 16, 128);
  p.pipeline_layout = "Et*4|t*4L";  // rank 0: layers 0-3 (1 MoE of 4); rank 1: layers 4-7 (all MoE)
  test::Setup s(m, p);
  const Sharding sh = s.sharding();
  REQUIRE(sh.rank_loads.size() == 2);
  CHECK(sh.rank_loads[0].moe_layer_share == 0.25);
  CHECK(sh.rank_loads[1].moe_layer_share == 1.0);
  CHECK(sh.rank_loads[1].ends.loss);
  CHECK(sh.moe_layer_share == 0.25);
  // Without a layout: the model's mean layer (share unset), as before.
  s.plan.pipeline_layout.clear();
  CHECK(s.sharding().moe_layer_share < 0);
  // A dense model's ranks carry no MoE share.
  test::Setup dense = with_pp(2, 1);
  dense.plan.pipeline_layout = "Et*4|t*4L";
  CHECK(dense.sharding().rank_loads[0].moe_layer_share < 0);
}

TEST_CASE("problems: MTP beyond the model's, a layout that does not fit, a framework without them") {
  test::Setup s = with_pp(2, 1);
  s.plan.mtp_layers = 1;
  Problems ps = s.problems(pipeline_parallel());
  CHECK(test::codes(ps) == "mtp_layers");
  CHECK(ps[0].message == "mtp_layers (1) must be between 0 and the model's MTP modules (0)");
  s.model.mtp_layers = 1;
  s.plan.pipeline_layout = "Et*4|t*4L";  // 8 layers but no 'm'
  ps = s.problems(pipeline_parallel());
  CHECK(test::codes(ps) == "pipeline_layout");
  CHECK(ps[0].message == "pipeline_layout 'Et*4|t*4L' has 0 MTP modules ('m'); the plan runs 1 (mtp_layers)");
  s.plan.pipeline_layout = "Et*3|t*5mL";  // an uneven split the layout states: no divisibility rule
  s.plan.pp = 2;
  CHECK(s.problems(pipeline_parallel()).empty());
  s.framework.offers_mtp_and_layout = false;
  CHECK(test::codes(s.problems(pipeline_parallel())) == "mtp_layout_unsupported");
}

}
