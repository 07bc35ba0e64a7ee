#include "modeler/mlp_cost.h"

#include <doctest/doctest.h>

#include "tests/modeler/layer_fixtures.h"

using namespace shardplan;
using test::bandwidth_only;
using test::compute_only;
using test::tiny;

TEST_SUITE("mlp_cost") {

TEST_CASE("activation elements: SwiGLU fused 3 (gate, up read; f written), eager 5, a plain GELU 2") {
  Framework fw = test::synthetic_framework();
  ModelDesc m = test::tiny_model();
  m.gated_mlp = false;
  CHECK(activation_elems(m, fw) == 2.0);
  m.gated_mlp = true;
  fw.fused_elementwise = true;
  CHECK(activation_elems(m, fw) == 3.0);
  fw.fused_elementwise = false;
  CHECK(activation_elems(m, fw) == 5.0);
}

TEST_CASE("dense MLP: the up and down GEMMs at the peak, the activation at the HBM rate") {
  // Tiny model: T 256 tokens, h 64, f 256, not gated: up 256 x 256 x 64, down 256 x 64 x 256.
  test::Setup su = tiny();
  compute_only(&su);
  const Sharding sh = su.sharding();
  const MlpCost c = dense_mlp(su.ctx(), sh, sh.ffn);
  const double flops = 2.0 * 256 * 256 * 64;
  CHECK(c.up.flops_fwd == flops);
  CHECK(c.down.flops_fwd == flops);
  CHECK(c.gemms.flops_fwd == 2 * flops);
  CHECK(c.gemms.fwd.v == doctest::Approx(2 * flops / test::kPeak).scale(0));
  // The linears' inputs an fp8 recipe casts: the normed tokens' h, then the activation's f.
  CHECK(c.linear_input_elems == 256.0 * 64 + 256.0 * 256);
  CHECK(c.linear_weight_elems == 2.0 * 64 * 256);
  test::Setup bw = tiny();
  bandwidth_only(&bw);
  const MlpCost m = dense_mlp(bw.ctx(), bw.sharding(), 256);
  CHECK(m.mem_fwd.v == doctest::Approx(2.0 * 256 * 256 * 2 / test::kHbm).scale(0));
  CHECK(m.mem_bwd == m.mem_fwd * 2.0);
  // No MLP at width 0 (a model without shared experts).
  CHECK(dense_mlp(su.ctx(), sh, 0).gemms.fwd.v == 0);
}

TEST_CASE("mlp_cost: a dense model's MLP is its dense MLP; an MoE model's averages the two by layer share") {
  test::Setup su = tiny();
  const Sharding sh = su.sharding();
  const MlpParts dense = mlp_parts(su.ctx(), sh);
  CHECK(dense.moe == 0);
  CHECK(mlp_cost(dense, sh).gemms.fwd == dense.dense.gemms.fwd);
  CHECK(moe_forward_parts(su.ctx(), sh).fc1.v == 0);  // no MoE layers, no parts

  test::Setup moe(test::tiny_moe(), test::plan_of(1, 1, 1, 1, 2, 2, 128));
  const Sharding msh = moe.sharding();
  const MlpParts parts = mlp_parts(moe.ctx(), msh);
  REQUIRE(parts.moe > 0);
  const MlpCost avg = mlp_cost(parts, msh);
  const double expect = parts.dense.gemms.fwd.v * (1 - parts.moe) + parts.routed.gemms.fwd.v * parts.moe;
  CHECK(avg.gemms.fwd.v == doctest::Approx(expect).scale(0));
  // The MoE share of the forward is the routed layer's, weighted by its share of the layers.
  CHECK(avg.moe_fwd.v > 0);
  CHECK(avg.moe_fwd.v <= (parts.routed.gemms.fwd + parts.routed.mem_fwd + parts.routed.host_fwd +
                          parts.routed.kernels_fwd).v * parts.moe * (1 + 1e-12));
}

}  // TEST_SUITE
