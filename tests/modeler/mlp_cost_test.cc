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

TEST_CASE("mlp_parts: a rank's own MoE share where the pipeline layout states it, else the model's") {
  test::Setup moe(test::tiny_moe(), test::plan_of(1, 1, 1, 1, 2, 2, 128));
  Sharding sh = moe.sharding();
  CHECK(mlp_parts(moe.ctx(), sh).moe == 0.5);  // tiny_moe: 2 layers, the first dense
  sh.moe_layer_share = 1.0;                     // a rank of MoE layers only
  const MlpParts all = mlp_parts(moe.ctx(), sh);
  CHECK(all.moe == 1.0);
  const MlpCost c = mlp_cost(all, sh);
  CHECK(c.gemms.fwd.v == doctest::Approx(all.routed.gemms.fwd.v));
  sh.moe_layer_share = 0.0;  // dense layers only
  CHECK(mlp_parts(moe.ctx(), sh).moe == 0.0);
  test::Setup dense = tiny();
  Sharding dsh = dense.sharding();
  dsh.moe_layer_share = 1.0;  // no MoE layers to count, whatever the share says
  CHECK(mlp_parts(dense.ctx(), dsh).moe == 0.0);
}

TEST_CASE("an fp32 router (moe_router_dtype fp32): 16-bit forward, TF32 data and weight gradients, four casts") {
  // tiny_moe on one GPU, T 128 tokens, 8 experts, h 64. Compute bound first: the router's backward GEMMs run at
  // the TF32 peak (set to a quarter of bf16's), 2 x 128 x 64 x 8 FLOPs each; the forward stays at the bf16 peak.
  test::Setup su(test::tiny_moe(), test::plan_of(1, 1, 1));
  compute_only(&su);
  su.system.gpu.peak[static_cast<int>(Dtype::tf32)] = FlopsPerSec(test::kPeak / 4.0);
  const Sharding sh = su.sharding();
  const MlpParts input = mlp_parts(su.ctx(), sh);
  su.model.moe->router_fp32 = true;
  const MlpParts fp32 = mlp_parts(su.ctx(), sh);
  const double gemm = 2.0 * 128 * 64 * 8;
  CHECK(fp32.routed.up.fwd == input.routed.up.fwd);
  CHECK((fp32.routed.up.bwd - input.routed.up.bwd).v ==
        doctest::Approx(2.0 * (gemm / (test::kPeak / 4.0) - gemm / test::kPeak)).scale(0));
  // A GPU without a TF32 rate runs them in fp32.
  su.system.gpu.peak[static_cast<int>(Dtype::tf32)] = FlopsPerSec(0);
  su.system.gpu.peak[static_cast<int>(Dtype::fp32)] = FlopsPerSec(test::kPeak / 8.0);
  const MlpParts no_tf32 = mlp_parts(su.ctx(), sh);
  CHECK((no_tf32.routed.up.bwd - input.routed.up.bwd).v ==
        doctest::Approx(2.0 * (gemm / (test::kPeak / 8.0) - gemm / test::kPeak)).scale(0));
  // Bandwidth only: the casts, weight (8 x 64) and input (128 x 64) to fp32 and the gradients back, 6 bytes per
  // element each, in the backward's elementwise traffic only.
  test::Setup bw(test::tiny_moe(), test::plan_of(1, 1, 1));
  bandwidth_only(&bw);
  bw.system.gpu.peak[static_cast<int>(Dtype::tf32)] = FlopsPerSec(1e30);
  const MlpCost plain = mlp_parts(bw.ctx(), bw.sharding()).routed;
  bw.model.moe->router_fp32 = true;
  const MlpCost casts = mlp_parts(bw.ctx(), bw.sharding()).routed;
  CHECK(casts.mem_fwd == plain.mem_fwd);
  CHECK((casts.mem_bwd - plain.mem_bwd).v == doctest::Approx(2.0 * (8 + 128) * 64 * 6.0 / test::kHbm).scale(0));
}

TEST_CASE("fp8 row padding (TEGroupedMLP): dropless fp8 experts copy every pair's row in and out, each way") {
  // tiny_moe on one GPU, T 128 tokens, top-2 of 8 experts: 256 pairs of h 64. Bandwidth only (1000 GB/s): each
  // copy reads and writes 256 x 64 bf16 elements, 65.536 ns; the hidden states in, the output out: 131.072 ns
  // forward and the same backward, counted with the permutation's copies.
  test::Setup su(test::tiny_moe(), test::plan_of(1, 1, 1));
  bandwidth_only(&su);
  su.system.gpu.peak[static_cast<int>(Dtype::fp8)] = FlopsPerSec(1e30);
  su.framework.moe_gemm_per_expert = true;  // TE GroupedLinear under Megatron-Core's TEGroupedMLP
  const MoeForwardParts bf16 = moe_forward_parts(su.ctx(), su.sharding());
  const MlpCost bf16_cost = mlp_parts(su.ctx(), su.sharding()).routed;
  const double pad = 2.0 * 256 * 64 * 2 * 2 / test::kHbm;
  su.plan.precision = Dtype::fp8;
  su.plan.fp8_recipe = Fp8Recipe::tensorwise;
  const MoeForwardParts q = moe_forward_parts(su.ctx(), su.sharding());
  CHECK((q.permutation - bf16.permutation).v == doctest::Approx(pad).scale(0));
  CHECK((q.permutation_bwd - bf16.permutation_bwd).v == doctest::Approx(pad).scale(0));
  const MlpCost fp8 = mlp_parts(su.ctx(), su.sharding()).routed;
  CHECK((fp8.mem_fwd - bf16_cost.mem_fwd).v == doctest::Approx(pad).scale(0));
  CHECK((fp8.mem_bwd - bf16_cost.mem_bwd).v == doctest::Approx(pad).scale(0));
  // Token drop padded to capacity: 32 rows per expert, a multiple of 16 (and of MXFP8's 32), so TE's fast path
  // returns the input as is.
  su.plan.capacity_factor = 1.0;
  const MoeForwardParts drop_fp8 = moe_forward_parts(su.ctx(), su.sharding());
  su.plan.precision = Dtype::bf16;
  su.plan.fp8_recipe.reset();
  CHECK(drop_fp8.permutation == moe_forward_parts(su.ctx(), su.sharding()).permutation);
  // One grouped kernel (no TEGroupedMLP) copies nothing.
  su.plan.capacity_factor = 0;
  su.plan.precision = Dtype::fp8;
  su.plan.fp8_recipe = Fp8Recipe::tensorwise;
  su.framework.moe_gemm_per_expert = false;
  CHECK(moe_forward_parts(su.ctx(), su.sharding()).permutation == bf16.permutation);
}

}  // TEST_SUITE
