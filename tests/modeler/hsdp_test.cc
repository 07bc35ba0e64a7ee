#include "modeler/hsdp.h"

#include <doctest/doctest.h>

#include <algorithm>

#include "modeler/evaluate.h"
#include "test_fixtures.h"

using namespace shardplan;
using namespace shardplan::test;

namespace {
Plan hsdp_plan(int dp, int shard, int zero) {
  Plan p = plan_of(1, 1, dp, 1, 1, dp, 256);
  p.zero = zero;
  p.dp_shard = shard;
  return p;
}
bool has(const Problems& ps, const std::string& code) {
  return std::any_of(ps.begin(), ps.end(), [&](const Problem& p) { return p.code == code; });
}
}  // namespace

TEST_SUITE("hsdp") {
  TEST_CASE("shard group and replicas") {
    Plan p = hsdp_plan(16, 8, 1);
    CHECK(hsdp_shard_group(p) == 8);
    CHECK(hsdp_replicas(p) == 2);
    p.cp = 2;
    CHECK(hsdp_shard_group(p) == 16);  // cp ranks hold the same weights: they join the shard group
    p.dp_shard = 0;
    CHECK(hsdp_shard_group(p) == 32);
    CHECK(hsdp_replicas(p) == 1);
  }

  TEST_CASE("states are sharded over the shard group only") {
    const ModelDesc m = tiny_model();
    const System s = synthetic_system(16);
    const Framework fw = synthetic_framework();  // Megatron-Core: hybrid at zero 1 (partial distributed optimizer)
    const Estimate full = evaluate(m, s, hsdp_plan(16, 0, 1), fw);
    const Estimate hybrid = evaluate(m, s, hsdp_plan(16, 4, 1), fw);
    REQUIRE(full.feasible());
    REQUIRE(hybrid.feasible());
    CHECK(hybrid.memory.optimizer.v == doctest::Approx(4.0 * full.memory.optimizer.v));
    CHECK(hybrid.memory.weights.v == doctest::Approx(full.memory.weights.v));
    CHECK(hybrid.memory.gradients.v == doctest::Approx(full.memory.gradients.v));
  }

  TEST_CASE("the reduce-scatter stays in the shard group and its shard is all-reduced across replicas") {
    Setup st(tiny_model(), hsdp_plan(16, 8, 3), 16);
    st.framework.hsdp_zero_stages = {3};
    const Context ctx = st.ctx();
    Sharding sh = st.sharding();
    apply_hsdp_sharding(ctx, &sh);
    CHECK(sh.dp_shard_weights == 8);
    CommPlan comm;
    data_parallel().add_comm(ctx, sh, &comm);
    apply_hsdp_comm(ctx, &comm);
    const CommOp* rs = nullptr;
    const CommOp* ar = nullptr;
    for (const CommOp& op : comm.layer_backward) {
      if (op.collective == Collective::reduce_scatter) rs = &op;
      if (op.collective == Collective::all_reduce) ar = &op;
    }
    REQUIRE(rs != nullptr);
    REQUIRE(ar != nullptr);
    CHECK(rs->group == 8);
    CHECK(ar->group == 2);
    CHECK(ar->stride == 8);  // the same shard of the other replica, one shard group away
    CHECK(ar->bytes.v == doctest::Approx(rs->bytes.v / 8));
    CHECK(ar->window == rs->window);
    for (const CommOp& op : comm.layer_forward) CHECK(op.group == 8);  // gathers inside the shard group
  }

  TEST_CASE("HSDP's gathers stay on the node's tier; only the shard all-reduce crosses the network") {
    Setup st(llama2_7b(), hsdp_plan(16, 8, 3), 16);
    st.framework.hsdp_zero_stages = {3};
    const Context ctx = st.ctx();
    Sharding sh = st.sharding();
    apply_hsdp_sharding(ctx, &sh);
    CommPlan comm;
    data_parallel().add_comm(ctx, sh, &comm);
    apply_hsdp_comm(ctx, &comm);
    for (const CommOp& op : comm.layer_backward) {
      const int tier = st.system.tier_for_group(op.group, op.stride);
      CHECK(tier == (op.collective == Collective::all_reduce ? 1 : 0));
    }
    // The step still evaluates, and pays for the replicated shard: twice the weight shard of full sharding.
    const Estimate a = evaluate(st.model, st.system, hsdp_plan(16, 0, 3), st.framework);
    const Estimate b = evaluate(st.model, st.system, hsdp_plan(16, 8, 3), st.framework);
    REQUIRE(a.feasible());
    REQUIRE(b.feasible());
    CHECK(b.memory.weights.v == doctest::Approx(2.0 * a.memory.weights.v));
    CHECK(b.time.exposed_comm_total() != a.time.exposed_comm_total());
  }

  TEST_CASE("validation") {
    const ModelDesc m = tiny_model();
    const System s = synthetic_system(16);
    const Framework fw = synthetic_framework();
    CHECK(has(validate_plan(m, s, hsdp_plan(16, 3, 1), fw), "hsdp_divides_dp"));
    CHECK(has(validate_plan(m, s, hsdp_plan(16, 16, 1), fw), "hsdp_divides_dp"));
    CHECK(has(validate_plan(m, s, hsdp_plan(16, 1, 1), fw), "hsdp_range"));
    CHECK(has(validate_plan(m, s, hsdp_plan(16, 8, 3), fw), "hsdp_needs_zero"));  // Megatron's is zero 1 only
    CHECK(has(validate_plan(m, s, hsdp_plan(16, 8, 0), fw), "hsdp_needs_zero"));
    Framework none = fw;
    none.hsdp_zero_stages.clear();
    CHECK(has(validate_plan(m, s, hsdp_plan(16, 8, 1), none), "hsdp_unsupported"));
    CHECK(validate_plan(m, s, hsdp_plan(16, 8, 1), fw).empty());
    Plan neg = hsdp_plan(16, -2, 1);
    CHECK(has(validate_plan(m, s, neg, fw), "hsdp_range"));
  }

  TEST_CASE("the shipped profiles offer hybrid sharding where the software does") {
    CHECK(find_framework("megatron-lm")->hsdp_zero_stages == std::vector<int>{1});
    CHECK(find_framework("torchtitan")->hsdp_zero_stages == std::vector<int>{2, 3});
    CHECK(find_framework("megatron-deepspeed")->hsdp_zero_stages == std::vector<int>{3});
    CHECK(find_framework("megatron-lm-legacy")->hsdp_zero_stages.empty());
  }
}
