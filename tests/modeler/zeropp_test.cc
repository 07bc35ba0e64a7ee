#include "modeler/zeropp.h"

#include <doctest/doctest.h>

#include <algorithm>

#include "modeler/evaluate.h"
#include "modeler/stage_params.h"
#include "test_fixtures.h"

using namespace shardplan;
using namespace shardplan::test;

namespace {
Framework deepspeed() {
  Framework fw = synthetic_framework();
  fw.offers_zeropp = true;
  return fw;
}
Plan z3(int dp, const std::string& zpp) {
  Plan p = plan_of(1, 1, dp, 1, 1, dp, 256);
  p.zero = 3;
  std::string err;
  p.zeropp = *parse_zeropp(zpp, &err);
  return p;
}
bool has(const Problems& ps, const std::string& code) {
  return std::any_of(ps.begin(), ps.end(), [&](const Problem& p) { return p.code == code; });
}
CommPlan comm_of(const Setup& st) {
  const Context ctx = st.ctx();
  CommPlan comm;
  data_parallel().add_comm(ctx, st.sharding(), &comm);
  apply_zeropp_comm(ctx, &comm);
  return comm;
}
}  // namespace

TEST_SUITE("zeropp") {
  TEST_CASE("parse and print") {
    std::string err;
    const auto z = parse_zeropp("qwz+hpz8+qgz", &err);
    REQUIRE(z);
    CHECK(z->quantized_weights);
    CHECK(z->hpz_partition == 8);
    CHECK(z->quantized_gradients);
    CHECK(zeropp_string(*z) == "qwz+hpz8+qgz");
    CHECK(zeropp_string(*parse_zeropp("off", &err)) == "off");
    CHECK_FALSE(parse_zeropp("hpz1", &err));
    CHECK(err.find("'hpz1'") != std::string::npos);
    CHECK_FALSE(parse_zeropp("qwz+", &err));
    CHECK_FALSE(parse_zeropp("qqz", &err));
  }

  TEST_CASE("qwZ halves the forward all-gather (int8 plus block scales); hpZ keeps the backward one in the group") {
    Setup plain(tiny_model(), z3(16, "off"), 16), q(tiny_model(), z3(16, "qwz"), 16),
        h(tiny_model(), z3(16, "hpz8"), 16);
    plain.framework = q.framework = h.framework = deepspeed();
    const CommPlan a = comm_of(plain), b = comm_of(q), c = comm_of(h);
    REQUIRE(a.layer_forward.size() == b.layer_forward.size());
    CHECK(b.layer_forward[0].bytes.v == doctest::Approx(a.layer_forward[0].bytes.v * kQwzBytes / 2.0));
    CHECK(b.layer_forward[0].group == 16);
    // hpZ: the backward gather of the secondary 16-bit shard over 8 ranks; forward unchanged.
    CHECK(c.layer_forward[0].bytes.v == doctest::Approx(a.layer_forward[0].bytes.v));
    const auto gather = std::find_if(c.layer_backward.begin(), c.layer_backward.end(),
                                     [](const CommOp& op) { return op.collective == Collective::all_gather; });
    REQUIRE(gather != c.layer_backward.end());
    CHECK(gather->group == 8);
    CHECK(gather->bytes.v == doctest::Approx(a.layer_forward[0].bytes.v));
  }

  TEST_CASE("qgZ: the gradient reduce-scatter becomes int4 all-to-alls inside and across nodes") {
    Setup plain(tiny_model(), z3(16, "off"), 16), g(tiny_model(), z3(16, "qgz"), 16);
    plain.framework = g.framework = deepspeed();
    const CommPlan a = comm_of(plain), b = comm_of(g);
    const auto rs = std::find_if(a.layer_backward.begin(), a.layer_backward.end(),
                                 [](const CommOp& op) { return op.collective == Collective::reduce_scatter; });
    REQUIRE(rs != a.layer_backward.end());
    const double elements = rs->bytes.v / plain.framework.state.gradients;
    std::vector<CommOp> a2a;
    for (const CommOp& op : b.layer_backward)
      if (op.collective == Collective::all_to_all) a2a.push_back(op);
    REQUIRE(a2a.size() == 2);
    CHECK(a2a[0].group == 8);  // the node (8 GPUs per node)
    CHECK(a2a[0].bytes.v == doctest::Approx(elements * 0.5));
    CHECK(a2a[1].group == 2);  // across the two nodes, 1/8 of the data
    CHECK(a2a[1].stride == 8);
    CHECK(a2a[1].bytes.v == doctest::Approx(elements * 0.5 / 8));
    for (const CommOp& op : b.layer_backward) CHECK(op.collective != Collective::reduce_scatter);
  }

  TEST_CASE("hpZ's secondary shard costs params x 2 / hpz of HBM; the quantise kernels cost time") {
    const ModelDesc m = llama2_7b();
    const System s = synthetic_system(16);
    const Framework fw = deepspeed();
    const Estimate a = evaluate(m, s, z3(16, "off"), fw), b = evaluate(m, s, z3(16, "hpz8"), fw),
                   c = evaluate(m, s, z3(16, "qwz"), fw);
    REQUIRE(a.feasible());
    REQUIRE(b.feasible());
    REQUIRE(c.feasible());
    Setup st(m, z3(16, "hpz8"), 16);
    const double params = busiest_stage_params(st.ctx(), st.sharding()).dense();
    CHECK(b.memory.weights.v - a.memory.weights.v == doctest::Approx(params * 2.0 / 8));
    CHECK(c.time.compute > a.time.compute);                        // quantise + dequantise passes
    CHECK(b.time.compute.v == doctest::Approx(a.time.compute.v));  // hpZ runs no quantiser
  }

  TEST_CASE("validation: DeepSpeed ZeRO-3 only, hpZ divides dp, qgZ without model parallelism") {
    const ModelDesc m = tiny_model();
    const System s = synthetic_system(16);
    CHECK(has(validate_plan(m, s, z3(16, "qwz"), synthetic_framework()), "zeropp_unsupported"));
    Plan z1 = z3(16, "qwz");
    z1.zero = 1;
    CHECK(has(validate_plan(m, s, z1, deepspeed()), "zeropp_needs_zero3"));
    CHECK(has(validate_plan(m, s, z3(16, "hpz3"), deepspeed()), "zeropp_hpz_divides_dp"));
    Plan tp = z3(8, "qgz");
    tp.tp = 2;
    CHECK(has(validate_plan(m, s, tp, deepspeed()), "zeropp_qgz_model_parallel"));
    CHECK(validate_plan(m, s, z3(16, "qwz+hpz8+qgz"), deepspeed()).empty());
    CHECK(find_framework("megatron-deepspeed")->offers_zeropp);
    CHECK_FALSE(find_framework("torchtitan")->offers_zeropp);
  }
}
