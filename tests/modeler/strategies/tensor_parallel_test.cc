#include <doctest/doctest.h>

#include "modeler/collectives.h"
#include "tests/modeler/test_fixtures.h"

using namespace shardplan;

namespace {
test::Setup with_tp(int tp, bool sp = false, const ModelDesc& m = test::tiny_model()) {
  Plan p = test::plan_of(tp, 1, 1, 1, 2, 2, 128);
  p.sequence_parallel = sp;
  return test::Setup(m, p);
}
Seconds total_time(const System& sys, const std::vector<CommOp>& ops) {
  Seconds t;
  for (const CommOp& op : ops) t += collective_time(sys, op) * op.count;
  return t;
}
}  // namespace

TEST_SUITE("tensor_parallel") {

TEST_CASE("divisibility problems, with codes and actual values") {
  // tiny: 4 heads, 4 kv heads, ffn 256. tp 3 divides none of them.
  Problems ps = with_tp(3).problems(tensor_parallel());
  CHECK(test::codes(ps) == "tp_divides_heads,tp_divides_kv_heads,tp_divides_ffn");
  REQUIRE(ps.size() == 3);
  CHECK(ps[0].message == "tp (3) does not divide heads (4)");
  CHECK(ps[1].message == "tp (3) does not divide kv_heads (4)");
  CHECK(ps[2].message == "tp (3) does not divide ffn_hidden (256)");
  // GQA with 2 K/V heads: tp 4 splits the queries but not the K/V heads (Megatron-Core refuses).
  ps = with_tp(4, false, test::tiny_gqa_gated()).problems(tensor_parallel());
  REQUIRE(ps.size() == 1);
  CHECK(ps[0].message == "tp (4) does not divide kv_heads (2)");
  ps = with_tp(0).problems(tensor_parallel());
  REQUIRE(ps.size() == 1);
  CHECK(ps[0].code == "tp_range");
  CHECK(ps[0].message == "tp (0) must be at least 1");
  CHECK(with_tp(4).problems(tensor_parallel()).empty());
}

TEST_CASE("shard: heads, K/V heads, MLP width, vocabulary and weights over tp; tokens only under SP") {
  for (bool sp : {false, true}) {
    CAPTURE(sp);
    const Sharding sh = with_tp(4, sp).sharding();
    CHECK(sh.heads == 1);
    CHECK(sh.kv_heads == 1);
    CHECK(sh.ffn == 64);
    CHECK(sh.vocab == 32);
    CHECK(sh.weight_shard == 4);
    CHECK(sh.tokens == 256);
    CHECK(sh.norm_tokens == (sp ? 64 : 256));
  }
}

TEST_CASE("tp 1 adds no communication") {
  for (bool sp : {false, true}) {
    const CommPlan c = with_tp(1, sp).comm();
    CHECK(c.layer_forward.empty());
    CHECK(c.layer_backward.empty());
  }
}

TEST_CASE("without SP: two all-reduces of the [tokens x h] activation per layer, forward and backward") {
  const test::Setup su = with_tp(4);
  const CommPlan c = su.comm();
  REQUIRE(c.layer_forward.size() == 1);
  REQUIRE(c.layer_backward.size() == 1);
  const CommOp& f = c.layer_forward[0];
  CHECK(f.kind == CommKind::tp);
  CHECK(f.collective == Collective::all_reduce);
  CHECK(f.bytes.v == 256.0 * 64 * 2);  // T x h x 2 bytes
  CHECK(f.group == 4);
  CHECK(f.stride == 1);  // tp is innermost
  CHECK(f.count == 2);   // after attention and after the MLP
  CHECK(f.window == Window::exposed);
  CHECK(c.layer_backward[0].collective == Collective::all_reduce);
  CHECK(c.layer_backward[0].count == 2);
  // Per layer and direction each rank moves 2 x S x 2(t-1)/t: 2 x 32,768 x 1.5 bytes at 100 GB/s.
  CHECK(total_time(su.system, c.layer_forward).v == doctest::Approx(2 * 32768 * 1.5 / test::kNvlink));
}

TEST_CASE("with SP: all-gather + reduce-scatter pairs move what the all-reduces moved") {
  const test::Setup sp = with_tp(4, true), ar = with_tp(4, false);
  const CommPlan c = sp.comm();
  REQUIRE(c.layer_forward.size() == 2);
  CHECK(c.layer_forward[0].collective == Collective::all_gather);
  CHECK(c.layer_forward[1].collective == Collective::reduce_scatter);
  CHECK(c.layer_forward[0].bytes.v == 256.0 * 64 * 2);  // the gathered [T x h], nccl-tests all_gather size
  CHECK(c.layer_forward[0].count == 2);
  CHECK(c.layer_forward[1].count == 2);
  CHECK(total_time(sp.system, c.layer_forward).v == doctest::Approx(total_time(ar.system, ar.comm().layer_forward).v));
  // Backward: the conjugate pair exposed like forward, plus the weight-gradient input all-gather overlapped.
  REQUIRE(c.layer_backward.size() == 3);
  CHECK(c.layer_backward[0].window == Window::exposed);
  CHECK(c.layer_backward[1].window == Window::exposed);
  CHECK(c.layer_backward[2].collective == Collective::all_gather);
  CHECK(c.layer_backward[2].window == Window::layer);
}

TEST_CASE("tp_comm_overlap moves the collectives into the layer window") {
  test::Setup su = with_tp(2, true);
  su.plan.tp_comm_overlap = true;
  for (const CommOp& op : su.comm().layer_forward) CHECK(op.window == Window::layer);
  for (const CommOp& op : su.comm().layer_backward) CHECK(op.window == Window::layer);
}

TEST_CASE("schedule is untouched by tp") {
  Schedule s;
  s.microbatches = 3;
  tensor_parallel().schedule(with_tp(4).ctx(), with_tp(4).sharding(), &s);
  CHECK(s.microbatches == 3);
  CHECK(s.bubble_fraction == 0);
  CHECK(s.in_flight == 1);
  CHECK(std::string(tensor_parallel().name()) == "tp");
}

}

TEST_CASE("TP overlap the framework does not offer is a problem") {
  test::Setup su(test::tiny_model(), test::plan_of(2, 1, 1));
  su.plan.tp_comm_overlap = true;
  su.framework.name = "llm-foundry";
  su.framework.offers_tp_overlap = false;
  Problems problems;
  tensor_parallel().validate(su.ctx(), &problems);
  REQUIRE(problems.size() == 1);
  CHECK(problems[0].code == "tp_overlap_unsupported");
  CHECK(problems[0].message == "llm-foundry does not overlap tensor-parallel collectives (--tp-overlap)");
  su.framework.offers_tp_overlap = true;
  problems.clear();
  tensor_parallel().validate(su.ctx(), &problems);
  CHECK(problems.empty());
}
