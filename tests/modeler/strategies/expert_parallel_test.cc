#include <doctest/doctest.h>

#include "modeler/evaluate.h"
#include "modeler/stage_params.h"
#include "tests/modeler/test_fixtures.h"

using namespace shardplan;
using namespace shardplan::test;

namespace {

Plan moe_plan(int tp, int dp, int ep, int etp = 1) {
  Plan p = plan_of(tp, 1, dp, 1, 1, dp, 128);
  p.ep = ep;
  p.etp = etp;
  p.zero = 1;
  return p;
}

}  // namespace

TEST_SUITE("expert_parallel") {

TEST_CASE("validate: EP folds into tp x cp x dp, so it need not divide dp alone") {
  CHECK(Setup(tiny_moe(), moe_plan(2, 2, 4)).problems(expert_parallel()).empty());
  const Problems folding = Setup(tiny_moe(), moe_plan(1, 4, 8, 1)).problems(expert_parallel());
  REQUIRE(folding.size() == 1);
  CHECK(folding[0].message == "ep x etp (8 x 1) does not divide the ranks of a pipeline stage, tp x cp x dp (4)");
  const Problems experts = Setup(tiny_moe(), moe_plan(1, 6, 3)).problems(expert_parallel());
  REQUIRE(experts.size() == 1);
  CHECK(experts[0].message == "ep (3) does not divide experts (8)");
  CHECK(codes(Setup(tiny_moe(), moe_plan(1, 6, 1, 3)).problems(expert_parallel())) == "etp_divides_expert_ffn");
  const Problems dense = Setup(tiny_model(), moe_plan(1, 2, 2)).problems(expert_parallel());
  REQUIRE(dense.size() == 1);
  CHECK(dense[0].message == "ep (2) needs a mixture-of-experts model");
  Plan bad = moe_plan(1, 2, 2);
  bad.moe_imbalance = 0.5;
  bad.capacity_factor = -1;
  CHECK(codes(Setup(tiny_moe(), bad).problems(expert_parallel())) == "moe_imbalance_range,capacity_factor_range");
}

TEST_CASE("shard: tokens / tp routed top_k times; experts / ep; expert states over edp = tp x dp / (ep x etp)") {
  const Setup s(tiny_moe(), moe_plan(2, 4, 4));
  const Sharding sh = s.sharding();
  CHECK(sh.moe_tokens == 64);     // 128 tokens / tp 2
  CHECK(sh.local_experts == 2);   // 8 / 4
  CHECK(sh.expert_ffn == 32);
  CHECK(sh.shared_ffn == 16);     // one shared expert of 32, / tp
  CHECK(sh.expert_tokens == 128); // 64 x top-2
  CHECK(sh.expert_weight_shard == 4);
  CHECK(sh.edp_shard_optimizer == 2);  // 2 x 4 / 4
  CHECK(sh.edp_shard_gradients == 1);
  Plan drop = moe_plan(2, 4, 4);
  drop.moe_imbalance = 1.5;
  CHECK(Setup(tiny_moe(), drop).sharding().expert_tokens == 192);  // dropless: the busiest expert's load
  drop.capacity_factor = 1.25;
  CHECK(Setup(tiny_moe(), drop).sharding().expert_tokens == 160);  // token drop caps it at capacity
  Plan etp = moe_plan(2, 4, 2, 2);
  CHECK(Setup(tiny_moe(), etp).sharding().expert_tokens == 256);   // the ETP pair sees both ranks' tokens
  CHECK(Setup(tiny_moe(), etp).sharding().expert_ffn == 16);
}

TEST_CASE("--ep-overlap hides the all-to-all behind the paired micro-batch's compute, where the framework offers it") {
  Setup s(tiny_moe(), moe_plan(2, 4, 4));
  s.plan.ep_comm_overlap = true;
  for (const CommOp& op : s.comm().layer_forward)
    if (op.kind == CommKind::ep) CHECK(op.window == Window::paired);
  s.framework.name = "torchtitan";
  s.framework.offers_ep_overlap = false;
  Problems problems;
  expert_parallel().validate(s.ctx(), &problems);
  REQUIRE(problems.size() == 1);
  CHECK(problems[0].code == "ep_overlap_unsupported");
  CHECK(problems[0].message == "torchtitan does not overlap MoE all-to-all with another micro-batch (--ep-overlap)");
}

TEST_CASE("comm: dispatch + combine all-to-all of tokens x top_k x h x 2 bytes per MoE layer, EP at stride etp") {
  const Setup s(tiny_moe(), moe_plan(2, 4, 4));
  const CommPlan c = s.comm();
  int a2a = 0;
  for (const auto* pass : {&c.layer_forward, &c.layer_backward})
    for (const CommOp& op : *pass)
      if (op.kind == CommKind::ep) {
        ++a2a;
        CHECK(op.collective == Collective::all_to_all);
        CHECK(op.bytes.v == 64.0 * 2 * 64 * 2);
        CHECK(op.group == 4);
        CHECK(op.stride == 1);
        CHECK(op.count == 1.0);  // dispatch + combine, on 1 of the 2 layers
      }
  CHECK(a2a == 2);
  // A rank the pipeline layout gives MoE layers only (Sharding::moe_layer_share): dispatch + combine per layer.
  Sharding moe_rank = s.sharding();
  moe_rank.moe_layer_share = 1.0;
  CommPlan own;
  expert_parallel().add_comm(s.ctx(), moe_rank, &own);
  for (const CommOp& op : own.layer_forward)
    if (op.kind == CommKind::ep) CHECK(op.count == 2.0);
  // Expert gradients: one reduce-scatter + all-gather pair (zero 1) over the edp group of 2 at stride ep x etp.
  const Sharding sh = s.sharding();
  const double experts = busiest_stage_params(s.ctx(), sh).experts;
  CHECK(experts == doctest::Approx(routed_expert_params(s.model) / 4.0));  // both layers on the stage, / ep
  bool found = false;
  for (const CommOp& op : c.step)
    if (op.group == 2 && op.stride == 4 && op.collective == Collective::reduce_scatter) {
      found = true;
      CHECK(op.bytes.v == doctest::Approx(experts * 4.0));  // fp32 gradients
    }
  CHECK(found);
}

TEST_CASE("ep = 1 moves no tokens; etp adds the ETP all-gather / reduce-scatter pair") {
  const CommPlan none = Setup(tiny_moe(), moe_plan(1, 4, 1)).comm();
  for (const CommOp& op : none.layer_forward) CHECK(op.kind != CommKind::ep);
  const CommPlan etp = Setup(tiny_moe(), moe_plan(2, 4, 2, 2)).comm();
  int gathers = 0;
  for (const CommOp& op : etp.layer_forward)
    if (op.kind == CommKind::ep && op.collective == Collective::all_gather) {
      ++gathers;
      CHECK(op.group == 2);
      CHECK(op.bytes.v == 64.0 * 2 * 64 * 2 * 2);
    }
  CHECK(gathers == 1);
}

TEST_CASE("evaluate: expert weights split over ep; the a2a shows as ep communication") {
  Plan p = moe_plan(1, 8, 8);
  p.zero = 0;
  const Setup s(tiny_moe(), p);
  const Estimate e = evaluate(s.model, s.system, s.plan, s.framework);
  REQUIRE(e.time.compute.v > 0);
  const Estimate one = evaluate(s.model, s.system, moe_plan(1, 8, 1), s.framework);
  const double routed = routed_expert_params(s.model);
  // 2 bytes of weights per parameter: ep 8 saves 7/8 of the routed experts' weight bytes.
  CHECK(one.memory.weights.v - e.memory.weights.v == doctest::Approx(routed * 2.0 * 7.0 / 8.0));
  CHECK(e.time.exposed_comm[static_cast<int>(CommKind::ep)].v > 0);
  CHECK(one.time.exposed_comm[static_cast<int>(CommKind::ep)].v == 0);
}

}
