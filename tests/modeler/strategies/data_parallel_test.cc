#include <doctest/doctest.h>

#include "modeler/memory_model.h"
#include "modeler/stage_params.h"
#include "tests/modeler/test_fixtures.h"

using namespace shardplan;

namespace {
test::Setup with_dp(int dp, int zero, int cp = 1, int tp = 1) {
  Plan p = test::plan_of(tp, 1, dp, cp, 1, 8 * dp, 128);
  p.zero = zero;
  return test::Setup(test::tiny_model(), p);
}
}  // namespace

TEST_SUITE("data_parallel") {

TEST_CASE("ZeRO divisors over dp x cp: 1 optimizer, 2 + gradients, 3 + weights") {
  for (int zero : {0, 1, 2, 3}) {
    CAPTURE(zero);
    const Sharding sh = with_dp(4, zero, 2).sharding();  // group 8
    CHECK(sh.dp_shard_optimizer == (zero >= 1 ? 8 : 1));
    CHECK(sh.dp_shard_gradients == (zero >= 2 ? 8 : 1));
    CHECK(sh.dp_shard_weights == (zero >= 3 ? 8 : 1));
  }
}

TEST_CASE("memory_breakdown divides the training states by the ZeRO divisors") {
  const test::Setup z0 = with_dp(4, 0);
  const MemoryBreakdown m0 = memory_breakdown(z0.ctx(), z0.sharding(), z0.schedule());
  const double n = busiest_stage_params(z0.ctx(), z0.sharding()).total();
  CHECK(m0.weights.v == 2 * n);
  CHECK(m0.gradients.v == 4 * n);
  CHECK(m0.optimizer.v == 12 * n);
  for (int zero : {1, 2, 3}) {
    CAPTURE(zero);
    const test::Setup z = with_dp(4, zero);
    const MemoryBreakdown m = memory_breakdown(z.ctx(), z.sharding(), z.schedule());
    CHECK(m.optimizer.v == 12 * n / 4);
    CHECK(m.gradients.v == 4 * n / (zero >= 2 ? 4 : 1));
    CHECK(m.weights.v == 2 * n / (zero >= 3 ? 4 : 1));
    CHECK(m.activations == m0.activations);
  }
}

TEST_CASE("collectives per ZeRO stage") {
  const test::Setup su = with_dp(4, 0, 1, 2);  // tp 2: the dp group has stride 2
  const double n = busiest_stage_params(su.ctx(), su.sharding()).total();
  // 0: one all-reduce of the fp32 gradient buffer per step, behind the last backward.
  CommPlan c = su.comm();
  REQUIRE(c.step.size() == 1);
  CHECK(c.step[0].collective == Collective::all_reduce);
  CHECK(c.step[0].bytes.v == 4 * n);
  CHECK(c.step[0].group == 4);
  CHECK(c.step[0].stride == 2);
  CHECK(c.step[0].window == Window::last_backward);
  CHECK(c.microbatch.empty());
  // 1: reduce-scatter of gradients + all-gather of the 16-bit parameters (behind the next forward).
  c = with_dp(4, 1, 1, 2).comm();
  REQUIRE(c.step.size() == 2);
  CHECK(c.step[0].collective == Collective::reduce_scatter);
  CHECK(c.step[0].bytes.v == 4 * n);
  CHECK(c.step[1].collective == Collective::all_gather);
  CHECK(c.step[1].bytes.v == 2 * n);
  CHECK(c.step[1].window == Window::next_forward);
  CHECK(c.microbatch.empty());
  // 2: the reduce-scatter moves to every micro-batch.
  c = with_dp(4, 2, 1, 2).comm();
  REQUIRE(c.microbatch.size() == 1);
  CHECK(c.microbatch[0].collective == Collective::reduce_scatter);
  CHECK(c.microbatch[0].window == Window::layer);
  REQUIRE(c.step.size() == 1);
  CHECK(c.step[0].collective == Collective::all_gather);
  // 3: each layer is an FSDP unit: its parameters gathered before forward and again before backward (resharded
  // after forward), its gradients reduce-scattered after backward; embedding, head and final norm are one more
  // unit per micro-batch.
  const test::Setup z3 = with_dp(4, 3, 1, 2);
  const StageParams sp3 = busiest_stage_params(z3.ctx(), z3.sharding());
  const double unit = sp3.layers / z3.sharding().layers, rest = sp3.total() - sp3.layers;
  c = z3.comm();
  auto dp_only = [](std::vector<CommOp> ops) {  // tp 2 adds its own per-layer collectives
    std::erase_if(ops, [](const CommOp& o) { return o.kind != CommKind::dp; });
    return ops;
  };
  c.layer_forward = dp_only(c.layer_forward);
  c.layer_backward = dp_only(c.layer_backward);
  CHECK(c.step.empty());
  REQUIRE(c.layer_forward.size() == 1);
  CHECK(c.layer_forward[0].collective == Collective::all_gather);
  CHECK(c.layer_forward[0].bytes.v == doctest::Approx(2 * unit));
  CHECK(c.layer_forward[0].window == Window::layer);
  REQUIRE(c.layer_backward.size() == 2);
  CHECK(c.layer_backward[0].collective == Collective::all_gather);
  CHECK(c.layer_backward[1].collective == Collective::reduce_scatter);
  CHECK(c.layer_backward[1].bytes.v == doctest::Approx(4 * unit));
  REQUIRE(c.microbatch.size() == 2);
  CHECK(c.microbatch[0].collective == Collective::all_gather);
  CHECK(c.microbatch[0].bytes.v == doctest::Approx(2 * rest));
  CHECK(c.microbatch[0].count == 2);
  CHECK(c.microbatch[1].collective == Collective::reduce_scatter);
  CHECK(c.microbatch[1].bytes.v == doctest::Approx(4 * rest));
  test::Setup keep = with_dp(4, 3, 1, 2);
  keep.framework.reshard_after_forward = false;
  CHECK(keep.comm().microbatch[0].count == 1);
  CHECK(dp_only(keep.comm().layer_backward).size() == 1);  // no second gather
}

TEST_CASE("overlap switched off exposes the collectives") {
  test::Setup su = with_dp(4, 1);
  su.framework.overlap_grad_reduce = false;
  su.framework.overlap_param_gather = false;
  for (const CommOp& op : su.comm().step) CHECK(op.window == Window::exposed);
}

TEST_CASE("context-parallel ranks join the gradient reduction; one replica adds nothing") {
  const CommPlan c = with_dp(2, 0, 2).comm();
  REQUIRE(c.step.size() == 1);
  CHECK(c.step[0].group == 4);
  CHECK(with_dp(1, 0).comm().step.empty());
  CHECK(with_dp(1, 3).comm().microbatch.empty());
}

TEST_CASE("micro-batches per step = global / (micro x dp)") {
  CHECK(with_dp(4, 0).schedule().microbatches == 8);  // gbs 32, mbs 1, dp 4
}

TEST_CASE("problems: ranges, batch divisibility, ZeRO stage") {
  test::Setup su = with_dp(3, 0);
  su.plan.micro_batch = 2;
  su.plan.global_batch = 8;
  Problems ps = su.problems(data_parallel());
  REQUIRE(ps.size() == 1);
  CHECK(ps[0].code == "dp_divides_batch");
  CHECK(ps[0].message == "micro_batch x dp (2 x 3) does not divide global_batch (8)");
  su = with_dp(2, 4);
  ps = su.problems(data_parallel());
  REQUIRE(ps.size() == 1);
  CHECK(ps[0].code == "zero_range");
  CHECK(ps[0].message == "zero (4) must be 0, 1, 2 or 3");
  su = with_dp(2, 0);
  su.plan.dp = 0;
  ps = su.problems(data_parallel());
  REQUIRE(ps.size() == 1);
  CHECK(ps[0].message == "dp (0), micro_batch (1) and global_batch (16) must be at least 1");
  CHECK(std::string(data_parallel().name()) == "dp");
}

}

TEST_CASE("a ZeRO stage the framework does not offer is a problem naming the stages it does") {
  test::Setup su = with_dp(4, 2);
  su.framework.name = "megatron-lm";
  su.framework.zero_stages = {0, 1, 3};
  Problems problems;
  data_parallel().validate(su.ctx(), &problems);
  REQUIRE(problems.size() == 1);
  CHECK(problems[0].code == "zero_unsupported");
  CHECK(problems[0].message == "zero 2 is not offered by megatron-lm (stages 0, 1, 3)");
}
