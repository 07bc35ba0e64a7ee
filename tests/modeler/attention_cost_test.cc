#include "modeler/attention_cost.h"

#include <doctest/doctest.h>

#include "modeler/layer_cost.h"
#include "tests/modeler/layer_fixtures.h"

using namespace shardplan;
using test::bandwidth_only;
using test::compute_only;
using test::kAttn;
using test::tiny;

TEST_SUITE("attention_cost") {

TEST_CASE("attention FLOPs: the causal half of the square; its kernel time at the table's efficiency") {
  test::Setup su = tiny();
  compute_only(&su);
  const Sharding sh = su.sharding();
  CHECK(attention_fwd_flops(su.ctx(), sh) == kAttn);
  const AttentionCost a = attention_cost(su.ctx(), sh);
  // Forward FLOPs counted as the causal half, backward at FlashAttention-2's 2.5x of the forward, twice (the
  // model-FLOPs convention counts the square).
  CHECK(a.flops_fwd == kAttn);
  CHECK(a.flops_bwd == 2 * 2.5 * kAttn);
  // The synthetic GPU's attention tables are 1.0: the kernel runs at the 16-bit peak.
  CHECK(a.fwd.v == doctest::Approx(kAttn / test::kPeak).scale(0));
  CHECK(a.bwd.v == doctest::Approx(2.5 * kAttn / test::kPeak).scale(0));
  // layer_cost charges exactly this kernel as its attention share.
  CHECK(layer_cost(su.ctx(), sh).forward.attention == a.fwd);
}

TEST_CASE("MLA attention backward: (3 qk + 2 v) / (qk + v) of the forward, not 2.5") {
  // qk = nope 16 + rope 8 = 24, v 12: the backward's five products (S again, dP, dV, dQ, dK) are 3 x 24 + 2 x 12
  // = 96 against the forward's 24 + 12 = 36 per score element, 8/3 of it (cudnn-frontend's count).
  test::Setup su = tiny();
  compute_only(&su);
  const AttentionCost mha = attention_cost(su.ctx(), su.sharding());
  CHECK(mha.flops_bwd == doctest::Approx(2 * 2.5 * mha.flops_fwd));
  su.model.mla = MlaDesc{0, 16, 16, 8, 12};
  const AttentionCost a = attention_cost(su.ctx(), su.sharding());
  const double ratio = 96.0 / 36.0;
  CHECK(a.flops_bwd == doctest::Approx(2 * ratio * a.flops_fwd));
  // The tables are 1.0, so the times keep the FLOPs' ratio.
  CHECK(a.bwd.v == doctest::Approx(ratio * a.fwd.v).scale(0));
  // Equal qk and v dims give FlashAttention's 2.5 again.
  su.model.mla = MlaDesc{0, 16, 8, 4, 12};
  const AttentionCost eq = attention_cost(su.ctx(), su.sharding());
  CHECK(eq.bwd.v == doctest::Approx(2.5 * eq.fwd.v).scale(0));
}

TEST_CASE("attention kernel: the framework's, flash3 only where the GPU has its table") {
  test::Setup su = tiny();
  su.framework.attention = AttentionKernel::flash3;
  CHECK(attention_kernel(su.ctx()) == AttentionKernel::flash2);  // the GPU has no flash3 table
  su.system.gpu.eff.attention_fwd[static_cast<int>(AttentionKernel::flash3)] = Curve::constant(1.0, "test");
  CHECK(attention_kernel(su.ctx()) == AttentionKernel::flash3);
}


TEST_CASE("context parallelism: the ring runs one attention kernel per step, at that kernel's size") {
  // An attention table that runs a kernel of kAttn / 4 FLOPs at half the efficiency of one of kAttn / 2.
  test::Setup su = tiny(1, 2);
  compute_only(&su);
  Curve curve;
  curve.x = {kAttn / 4, kAttn / 2};
  curve.y = {0.5, 1.0};
  su.system.gpu.eff.attention_fwd[static_cast<int>(AttentionKernel::flash2)] = curve;
  // Ring, cp 2: two steps of kAttn / 4 each at 0.5, i.e. kAttn / peak in all.
  CHECK(attention_cost(su.ctx(), su.sharding()).fwd.v == doctest::Approx(kAttn / test::kPeak).scale(0));
  // Transformer Engine's all-gather variant: one kernel over the rank's kAttn / 2 at 1.0.
  su.plan.cp_kind = CpKind::allgather;
  CHECK(attention_cost(su.ctx(), su.sharding()).fwd.v == doctest::Approx(kAttn / 2 / test::kPeak).scale(0));
  // PyTorch's loop runs per step even over all-gathered K/V.
  su.framework.cp_allgather_runs_ring_loop = true;
  CHECK(attention_cost(su.ctx(), su.sharding()).fwd.v == doctest::Approx(kAttn / test::kPeak).scale(0));
}

TEST_CASE("context parallelism: one ring step's kernel, what a collective issued before it can hide behind") {
  // The same table: cp 2's step of kAttn / 4 FLOPs at 0.5, forward; backward 2.5x the FLOPs at the bwd table's 1.
  test::Setup su = tiny(1, 2);
  compute_only(&su);
  Curve curve;
  curve.x = {kAttn / 4, kAttn / 2};
  curve.y = {0.5, 1.0};
  su.system.gpu.eff.attention_fwd[static_cast<int>(AttentionKernel::flash2)] = curve;
  CHECK(ring_steps(su.ctx()) == 2);
  CHECK(ring_step_kernel_time(su.ctx(), su.sharding(), false).v ==
        doctest::Approx(kAttn / 4 / (0.5 * test::kPeak)).scale(0));
  CHECK(ring_step_kernel_time(su.ctx(), su.sharding(), true).v ==
        doctest::Approx(2.5 * kAttn / 4 / test::kPeak).scale(0));
  // Transformer Engine's all-gather variant has no loop: its one kernel is the whole attention.
  su.plan.cp_kind = CpKind::allgather;
  CHECK(ring_steps(su.ctx()) == 1);
  CHECK(ring_step_kernel_time(su.ctx(), su.sharding(), false).v == doctest::Approx(kAttn / 2 / test::kPeak).scale(0));
  su.framework.cp_allgather_runs_ring_loop = true;  // PyTorch's rotater: the loop's steps again
  CHECK(ring_steps(su.ctx()) == 2);
}

TEST_CASE("context parallelism: merging the ring steps' partial outputs and gradients costs HBM traffic") {
  // Bandwidth only, so the attention kernels themselves are free. cp 2, 128 tokens per rank, 4 heads of 16:
  // outputs 128 x 4 x 16 = 8,192 elements, K and V 2 x 128 x 4 x 16 = 16,384.
  test::Setup su = tiny(1, 2);
  bandwidth_only(&su);
  const double out = 8192, kv = 16384;
  // Transformer Engine: forward 4 bytes on the first step, 6 on the second; backward the same over dQ, dK, dV.
  AttentionCost c = attention_cost(su.ctx(), su.sharding());
  CHECK(c.fwd.v == doctest::Approx(out * (4 + 6) / test::kHbm).scale(0));
  CHECK(c.bwd.v == doctest::Approx((out + kv) * (4 + 6) / test::kHbm).scale(0));
  // PyTorch's fp32 merger: 12 + 38 forward, 20 + 10 backward (dK/dV accumulated as dQ here; its own bytes and
  // the K/V copies in the test below).
  su.framework.cp_merge = {12, 38, 20, 10, 20, 10};
  c = attention_cost(su.ctx(), su.sharding());
  CHECK(c.fwd.v == doctest::Approx(out * 50 / test::kHbm).scale(0));
  CHECK(c.bwd.v == doctest::Approx((out + kv) * 30 / test::kHbm).scale(0));
  // Selective recompute re-runs the whole ring, merges included.
  su.plan.recompute = Recompute::selective;
  CHECK(layer_cost(su.ctx(), su.sharding()).recompute.time.v == doctest::Approx(c.fwd.v).scale(0));
  // No merges with Transformer Engine's all-gather variant (what is left is the kernel at an unbounded peak).
  su.plan.cp_kind = CpKind::allgather;
  CHECK(attention_cost(su.ctx(), su.sharding()).fwd.v < 1e-20);
}

TEST_CASE("context parallelism: PyTorch's ring copies K/V and accumulates dK/dV over the repeated heads") {
  // cp 2, 2 sequences of 64 tokens per rank: 128 tokens, 4 query heads and 2 kv heads of 16. Outputs 128 x 4 x 16
  // = 8,192 elements; K and V at the kv heads 2 x 128 x 2 x 16 = 8,192, repeated to the query heads 16,384.
  test::Setup su(test::tiny_gqa_gated(), test::plan_of(1, 1, 1, 2, 2, 2, 128));
  bandwidth_only(&su);
  const double out = 8192, kv = 8192, repeated = 16384;
  su.framework.cp_merge = {12, 38, 20, 10, 28, 21, 4, 4};
  // Forward: the output merges, then K/V made contiguous once and concatenated for the one send (4 + 4 bytes).
  // Backward: dQ 20 + 10, dK/dV 28 + 21 bytes per element, and the same K/V copies.
  AttentionCost c = attention_cost(su.ctx(), su.sharding());
  CHECK(c.fwd.v == doctest::Approx((out * 50 + kv * 8) / test::kHbm).scale(0));
  CHECK(c.bwd.v == doctest::Approx((out * 30 + kv * (49 + 8)) / test::kHbm).scale(0));
  // With the kv heads repeated before attention (torchtitan's repeat_kv) the ring's K/V are the query heads'.
  su.framework.gqa_repeats_kv = true;
  c = attention_cost(su.ctx(), su.sharding());
  CHECK(c.fwd.v == doctest::Approx((out * 50 + repeated * 8) / test::kHbm).scale(0));
  CHECK(c.bwd.v == doctest::Approx((out * 30 + repeated * (49 + 8)) / test::kHbm).scale(0));
  // Full recompute re-runs the forward's copies with the rest of the forward.
  su.plan.recompute = Recompute::full;
  CHECK(layer_cost(su.ctx(), su.sharding()).recompute.time == layer_cost(su.ctx(), su.sharding()).forward.time);
  // Transformer Engine's defaults copy nothing and accumulate dK/dV as dQ.
  const CpMergeBytes te;
  CHECK(te.kv_pass + te.kv_send == 0);
  CHECK(te.grad_kv_first == te.backward_first);
  CHECK(te.grad_kv_step == te.backward_step);
  // No ring, no copies.
  su.plan = test::plan_of(1, 1, 1, 1, 2, 2, 128);
  const AttentionCost one = attention_cost(su.ctx(), su.sharding());
  su.framework.cp_merge = CpMergeBytes{};
  CHECK(attention_cost(su.ctx(), su.sharding()).fwd == one.fwd);
}

}  // TEST_SUITE
