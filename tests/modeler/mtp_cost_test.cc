#include "modeler/mtp_cost.h"

#include <doctest/doctest.h>

#include "modeler/gemm_model.h"
#include "modeler/layer_parts.h"
#include "tests/modeler/test_fixtures.h"

using namespace shardplan;

TEST_SUITE("mtp_cost") {

TEST_CASE("a dense model's MTP module: eh_proj (2h -> h) and one more LM head pass; its layer is the mean one") {
  test::Setup s(test::tiny_model(), test::plan_of(1, 1, 1, 1, 1, 8, 128));
  const Context ctx = s.ctx();
  const Sharding sh = s.sharding();
  const LayerCost c = mtp_module_cost(ctx, sh);
  const double T = sh.tokens, h = ctx.model.hidden, V = ctx.model.vocab;
  // Every layer of the tiny model is of the last layer's kind: no layer term.
  CHECK(c.forward.flops == doctest::Approx(2.0 * T * h * 2.0 * h + 2.0 * T * V * h));
  CHECK(c.backward.flops == doctest::Approx(2.0 * (2.0 * T * h * 2.0 * h + 2.0 * T * V * h)));
  const Seconds head = gemm_time(ctx.system.gpu, sixteen_bit_gemm(ctx), T, V, h);
  CHECK(c.forward.time > head);
  CHECK(c.backward.time > c.forward.time);
}

TEST_CASE("an MoE model's MTP layer is an MoE layer (the last layer's kind), not the dense-MoE mean") {
  ModelDesc m = test::tiny_moe();  // 2 layers, the first dense: the mean layer is half dense
  test::Setup s(m, test::plan_of(1, 1, 1, 1, 1, 8, 128));
  const LayerCost with_moe_last = mtp_module_cost(s.ctx(), s.sharding());
  ModelDesc all_moe = m;
  all_moe.moe->dense_layers = 0;  // the mean layer is the MoE layer: no difference term
  test::Setup a(all_moe, test::plan_of(1, 1, 1, 1, 1, 8, 128));
  const LayerCost base = mtp_module_cost(a.ctx(), a.sharding());
  const Sharding sh = s.sharding();
  const LayerCost moe_layer = layer_cost(a.ctx(), a.sharding()), mean = layer_cost(s.ctx(), sh);
  CHECK((with_moe_last.forward.time - base.forward.time).v ==
        doctest::Approx((moe_layer.forward.time - mean.forward.time).v));
  CHECK(with_moe_last.forward.time != base.forward.time);
  // On a rank whose own layers are all MoE (a pipeline layout's, Sharding::moe_layer_share) the mean layer is
  // the MoE layer already: no difference term, as for the all-MoE model.
  Sharding moe_rank = sh;
  moe_rank.moe_layer_share = 1.0;
  CHECK(mtp_module_cost(s.ctx(), moe_rank).forward.time.v == doctest::Approx(base.forward.time.v));
}

}
