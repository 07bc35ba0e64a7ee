#include "modeler/memory_model.h"

#include <doctest/doctest.h>

#include "modeler/stage_params.h"
#include "tests/modeler/test_fixtures.h"

using namespace shardplan;

namespace {

// Activation bytes of one layer with the tiny model (h 64, a 4, d 16, f 4h) at s 128, b 2, built through the
// strategies' shard() with tensor parallelism t, sequence parallelism on or off.
struct Act {
  double s = 128, b = 2, h = 64, a = 4;
  double korthikanti_none() const { return 34 * s * b * h + 5 * a * s * s * b; }
};

// Held outside the layers on the stage with the LM head (counted with the logits): the final norm's 16-bit input and
// the head's input, 2 bytes each per token and hidden element (tiny model, T = 2 x 128 tokens, h 64, unsharded).
constexpr double kHeadInputs = (2.0 + 2.0) * 256 * 64;

Sharding shard(int tp, bool sp, const ModelDesc& m = test::tiny_model()) {
  Plan p = test::plan_of(tp, 1, 1, 1, 2, 2, 128);
  p.sequence_parallel = sp;
  return test::Setup(m, p).sharding();
}

}  // namespace

TEST_SUITE("memory_model") {

TEST_CASE("Korthikanti et al. 2022, Eq. 1: 34 s b h + 5 a s^2 b without parallelism") {
  const Act k;
  const ModelDesc m = test::tiny_model();
  // 34 x 128 x 2 x 64 = 557,056; 5 x 4 x 128^2 x 2 = 655,360.
  CHECK(activation_bytes_per_layer(m, shard(1, false), Recompute::none, true, false) == 557056.0 + 655360.0);
  CHECK(k.korthikanti_none() == 557056.0 + 655360.0);
}

TEST_CASE("Korthikanti Eq. 2: tensor parallel t without SP, s b h (10 + 24/t) + 5 a s^2 b / t") {
  const Act k;
  const ModelDesc m = test::tiny_model();
  for (int t : {2, 4}) {
    CAPTURE(t);
    const double expect = k.s * k.b * k.h * (10.0 + 24.0 / t) + 5 * k.a * k.s * k.s * k.b / t;
    CHECK(activation_bytes_per_layer(m, shard(t, false), Recompute::none, true, false) == expect);
  }
}

TEST_CASE("Korthikanti Eq. 4: with sequence parallelism everything divides by t") {
  const Act k;
  const ModelDesc m = test::tiny_model();
  for (int t : {1, 2, 4}) {
    CAPTURE(t);
    CHECK(activation_bytes_per_layer(m, shard(t, true), Recompute::none, true, false) == k.korthikanti_none() / t);
  }
}

TEST_CASE("Korthikanti Eq. 5 and 6: selective keeps 34 s b h / t, full keeps the input 2 s b h / t") {
  const Act k;
  const ModelDesc m = test::tiny_model();
  for (int t : {1, 2, 4}) {
    CAPTURE(t);
    CHECK(activation_bytes_per_layer(m, shard(t, true), Recompute::selective, true, false) ==
          34 * k.s * k.b * k.h / t);
    CHECK(activation_bytes_per_layer(m, shard(t, true), Recompute::full, true, false) == 2 * k.s * k.b * k.h / t);
    // Without SP the full-recompute input is replicated over tp: 2 s b h.
    CHECK(activation_bytes_per_layer(m, shard(t, false), Recompute::full, true, false) == 2 * k.s * k.b * k.h);
  }
}

TEST_CASE("GPT-3 175B at s 2048, b 1, t 8 with SP: (34 s b h + 5 a s^2 b) / t") {
  const ModelDesc m = test::gpt3_175b();
  Plan p = test::plan_of(8, 1, 1, 1, 1, 1, 2048);
  p.sequence_parallel = true;
  const Sharding sh = test::Setup(m, p).sharding();
  const double s = 2048, h = 12288, a = 96;
  // (34 x 2048 x 12288 + 5 x 96 x 2048^2) / 8 = (855.6 MB + 2013.3 MB) / 8 = 358.6 MB.
  CHECK(activation_bytes_per_layer(m, sh, Recompute::none, true, false) == (34 * s * h + 5 * a * s * s) / 8);
}

TEST_CASE("without dropout: no masks, and the scores are the 2-byte softmax output only") {
  const Act k;
  const ModelDesc m = test::tiny_model();
  // 34 - 2 mask bytes = 32 s b h; 2 a s^2 b.
  CHECK(activation_bytes_per_layer(m, shard(1, false), Recompute::none, false, false) ==
        32 * k.s * k.b * k.h + 2 * k.a * k.s * k.s * k.b);
}

TEST_CASE("FlashAttention replaces the score tensors by an fp32 log-sum-exp per query and head") {
  const Act k;
  const ModelDesc m = test::tiny_model();
  for (int t : {1, 2}) {
    CAPTURE(t);
    const double lse = 4.0 * k.s * k.b * k.a / t;
    CHECK(activation_bytes_per_layer(m, shard(t, true), Recompute::none, true, true) ==
          34 * k.s * k.b * k.h / t + lse);
    // Selective recompute has nothing left to drop but keeps the statistics.
    CHECK(activation_bytes_per_layer(m, shard(t, true), Recompute::selective, true, true) ==
          34 * k.s * k.b * k.h / t + lse);
  }
}

TEST_CASE("GQA and gated MLP, per saved tensor") {
  // h 64, a 4, kv 2, d 16, f 96 (SwiGLU), s 128, b 2, no dropout, materialised scores.
  const ModelDesc m = test::tiny_gqa_gated();
  const double s = 128, b = 2, h = 64, a = 4, kv = 2, d = 16, f = 96;
  for (int t : {1, 2}) {
    CAPTURE(t);
    const double norm_region = 4 * s * b * h * 2 / t;              // both norms' inputs, QKV and MLP inputs
    const double attention = s * b * (2 * a + 2 * kv) * d * 2 / t;  // Q, K, V and the attention output
    const double mlp = s * b * 3 * f * 2 / t;                       // SwiGLU input (gate, up) and output
    const double scores = 2 * a * s * s * b / t;
    CHECK(activation_bytes_per_layer(m, shard(t, true, m), Recompute::none, false, false) ==
          norm_region + attention + mlp + scores);
  }
  CHECK(trains_with_dropout(test::tiny_model()));
  CHECK_FALSE(trains_with_dropout(m));
}

TEST_CASE("fp8 linears that save their fp8 input: 1 byte for the four GEMM inputs, plus an fp8 attention output") {
  // Transformer Engine keeps the fp8 cast of each linear's input for the weight gradient. Same model as above.
  const ModelDesc m = test::tiny_gqa_gated();
  const double s = 128, b = 2, h = 64, a = 4, kv = 2, d = 16, f = 96;
  for (int t : {1, 2}) {
    CAPTURE(t);
    const double norm_region =
        2 * s * b * h * (2 + 1) / t;  // norm inputs in 16 bits, their outputs (QKV, MLP-up inputs) in fp8
    const double attention = s * b * (2 * a + 2 * kv) * d * 2 / t + s * b * a * d * 1 / t;  // + out-proj's fp8 copy
    const double mlp =
        s * b * f * (2 * 2 + 1) / t;  // gate and up outputs in 16 bits, the down projection's input in fp8
    const double lse = 4.0 * s * b * a / t;
    CHECK(activation_bytes_per_layer(m, shard(t, true, m), Recompute::none, false, true, 1.0) ==
          doctest::Approx(norm_region + attention + mlp + lse));
    // 16-bit inputs reproduce the default count.
    CHECK(activation_bytes_per_layer(m, shard(t, true, m), Recompute::none, false, true, 2.0) ==
          activation_bytes_per_layer(m, shard(t, true, m), Recompute::none, false, true));
    // Full recompute keeps the 16-bit layer input either way.
    CHECK(activation_bytes_per_layer(m, shard(t, true, m), Recompute::full, false, true, 1.0) == 2 * s * b * h / t);
  }
}

TEST_CASE("memory_breakdown: fp8 shrinks activations only for frameworks whose linears save fp8 inputs") {
  Plan p = test::plan_of(1, 1, 1, 1, 2, 2, 128);
  p.precision = Dtype::fp8;
  test::Setup te(test::tiny_gqa_gated(), p);
  te.system.gpu.peak[static_cast<int>(Dtype::fp8)] = te.system.gpu.peak[static_cast<int>(Dtype::bf16)] * 2.0;
  test::Setup plain = te;
  te.framework.fp8_saves_linear_inputs = true;
  plain.framework.fp8_saves_linear_inputs = false;
  const Bytes with = memory_breakdown(te.ctx(), te.sharding(), te.schedule()).activations;
  const Bytes without = memory_breakdown(plain.ctx(), plain.sharding(), plain.schedule()).activations;
  CHECK(with.v < without.v);
  // bf16 plans are unaffected by the trait.
  te.plan.precision = plain.plan.precision = Dtype::bf16;
  CHECK(memory_breakdown(te.ctx(), te.sharding(), te.schedule()).activations.v ==
        memory_breakdown(plain.ctx(), plain.sharding(), plain.schedule()).activations.v);
}

TEST_CASE("memory_breakdown: states, activations, logits on a one-GPU tiny plan") {
  const test::Setup su(test::tiny_model(), test::plan_of(1, 1, 1, 1, 2, 2, 128));
  const Sharding sh = su.sharding();
  const Schedule sched = su.schedule();
  const MemoryBreakdown mem = memory_breakdown(su.ctx(), sh, sched);
  // One stage holds all layers, the embedding and the LM head (stage_params_test pins the counts).
  const double n = busiest_stage_params(su.ctx(), sh).total();
  CHECK(mem.weights.v == 2 * n);
  CHECK(mem.gradients.v == 4 * n);
  CHECK(mem.optimizer.v == 12 * n);
  // Dropout on (plain MLP), flash statistics: per layer 34 s b h + 4 s b a, two layers, one micro-batch in flight.
  const double per_layer = 34.0 * 128 * 2 * 64 + 4.0 * 128 * 2 * 4;
  CHECK(sched.in_flight == 1.0);
  CHECK(mem.activations.v == 2 * per_layer);
  // Logits: bf16 + the fp32 copy, [tokens x V], and the head region's inputs.
  CHECK(mem.logits.v == 256.0 * 128 * 6 + kHeadInputs);
  CHECK(mem.buffers.v == 0.0);
  // The parts add up; the context is outside the allocator.
  const Bytes allocated = mem.weights + mem.gradients + mem.optimizer + mem.activations + mem.logits + mem.buffers;
  CHECK(mem.total().v == doctest::Approx((allocated + mem.fragmentation + mem.context).v));
  CHECK(mem.other().v == doctest::Approx((mem.logits + mem.buffers + mem.fragmentation + mem.context).v));
  CHECK(mem.allocator_reserved().v == doctest::Approx((mem.total() - mem.context).v));
  CHECK(mem.fragmentation.v > 0);
  CHECK(mem.fragmentation < allocated);
  CHECK(mem.capacity == GiB(80));
  CHECK(mem.fits());
}

TEST_CASE("full recompute stores layer inputs and re-materialises one layer") {
  Plan p = test::plan_of(1, 1, 1, 1, 2, 2, 128);
  p.recompute = Recompute::full;
  const test::Setup su(test::tiny_model(), p);
  const MemoryBreakdown mem = memory_breakdown(su.ctx(), su.sharding(), su.schedule());
  const double input = 2.0 * 128 * 2 * 64;
  const double one_layer = 34.0 * 128 * 2 * 64 + 4.0 * 128 * 2 * 4;
  CHECK(mem.activations.v == 2 * input + one_layer);
}

TEST_CASE("block recompute: N layers of each chunk keep their input only, the others all their activations") {
  Plan p = test::plan_of(1, 1, 1, 1, 2, 2, 128);
  p.recompute = Recompute::full;
  p.recompute_layers = 1;  // of the tiny model's 2 layers
  const test::Setup su(test::tiny_model(), p);
  const MemoryBreakdown mem = memory_breakdown(su.ctx(), su.sharding(), su.schedule());
  const double input = 2.0 * 128 * 2 * 64;
  const double one_layer = 34.0 * 128 * 2 * 64 + 4.0 * 128 * 2 * 4;
  CHECK(mem.activations.v == doctest::Approx(input + one_layer + one_layer));
  CHECK(full_recompute_share(p, su.sharding()) == 0.5);
  p.recompute_layers = 0;
  CHECK(full_recompute_share(p, su.sharding()) == 1.0);
  p.recompute = Recompute::selective;
  CHECK(full_recompute_share(p, su.sharding()) == 0.0);
}

TEST_CASE("activations scale with the micro-batches in flight; pipeline send/receive buffers") {
  // pp 2, 4 micro-batches: the first stage holds p = 2 micro-batches of its 1 layer.
  const test::Setup su(test::tiny_model(), test::plan_of(1, 2, 1, 1, 2, 8, 128));
  const MemoryBreakdown mem = memory_breakdown(su.ctx(), su.sharding(), su.schedule());
  const double per_layer = 34.0 * 128 * 2 * 64 + 4.0 * 128 * 2 * 4;
  CHECK(mem.activations.v == 1 * per_layer * 2);
  CHECK(mem.buffers.v == 2.0 * 256 * 64 * 2);
}

TEST_CASE("ZeRO-3 gather buffers and fp8 weight copies") {
  Plan p = test::plan_of(1, 1, 4, 1, 1, 4, 128);
  p.zero = 3;
  const test::Setup z3(test::tiny_model(), p);
  const MemoryBreakdown mem = memory_breakdown(z3.ctx(), z3.sharding(), z3.schedule());
  // Two gathered 16-bit layers plus one layer of 4-byte unsharded gradients.
  CHECK(mem.buffers.v == params_per_layer(z3.model) * (4.0 + 4.0));

  test::Setup f8(test::tiny_model(), test::plan_of(1, 1, 1));
  f8.plan.precision = Dtype::fp8;
  const MemoryBreakdown m8 = memory_breakdown(f8.ctx(), f8.sharding(), f8.schedule());
  CHECK(m8.weights.v == 3.0 * busiest_stage_params(f8.ctx(), f8.sharding()).total());  // bf16 + the cached fp8 copy
  f8.framework.fp8_caches_weights = false;  // torchao: cast inside each forward
  CHECK(memory_breakdown(f8.ctx(), f8.sharding(), f8.schedule()).weights.v ==
        2.0 * busiest_stage_params(f8.ctx(), f8.sharding()).total());
}

TEST_CASE("FSDP without resharding after forward: sharded fp32 master, a gathered bf16 copy; PP defers the sync") {
  Plan p = test::plan_of(1, 1, 4, 1, 1, 4, 128);
  p.zero = 2;
  test::Setup su(test::tiny_model(), p);
  su.framework.state = {4, 4, 8};
  const double n = busiest_stage_params(su.ctx(), su.sharding()).total();
  // Megatron-style states (no separate compute copy): the 4-byte weights stay whole under ZeRO-2.
  CHECK(memory_breakdown(su.ctx(), su.sharding(), su.schedule()).weights.v == doctest::Approx(4.0 * n));
  su.framework.fsdp_unsharded_param_bytes = 2.0;
  su.framework.pp_deferred_grad_bytes = 4.0;
  MemoryBreakdown mem = memory_breakdown(su.ctx(), su.sharding(), su.schedule());
  CHECK(mem.weights.v == doctest::Approx(n * (4.0 / 4 + 2.0)));
  CHECK(mem.gradients.v == doctest::Approx(n * 4.0 / 4));  // no pipeline: reduce-scattered every micro-batch
  su.plan.precision = Dtype::fp8;  // plus the cached fp8 copy of the gathered weights
  CHECK(memory_breakdown(su.ctx(), su.sharding(), su.schedule()).weights.v == doctest::Approx(n * (1.0 + 3.0)));
  su.plan.precision = Dtype::bf16;
  su.plan.zero = 3;  // resharded after forward: only the sharded master stays (the gathered layers are buffers)
  CHECK(memory_breakdown(su.ctx(), su.sharding(), su.schedule()).weights.v == doctest::Approx(n * 4.0 / 4));

  // Pipelined (pp 2, dp 2): unsharded fp32 gradients accumulate over the micro-batches before the reduce-scatter.
  Plan pp = test::plan_of(1, 2, 2, 1, 1, 8, 128);
  pp.zero = 2;
  test::Setup piped(test::tiny_model(), pp);
  piped.framework = su.framework;
  const double stage = busiest_stage_params(piped.ctx(), piped.sharding()).total();
  mem = memory_breakdown(piped.ctx(), piped.sharding(), piped.schedule());
  CHECK(mem.gradients.v == doctest::Approx(stage * (4.0 / 2 + 4.0)));
  piped.framework.pp_deferred_grad_bytes = 0;
  CHECK(memory_breakdown(piped.ctx(), piped.sharding(), piped.schedule()).gradients.v ==
        doctest::Approx(stage * 4.0 / 2));
}

TEST_CASE("recompute modules: each drops its module's saved tensors, per layer") {
  // Dense, GQA/SwiGLU (h 64, f 96) at T = 256 tokens, tp 1: norms' outputs 2 T h x 2 bytes; the MLP's gate and up
  // outputs and the down projection's input, T f (2 + 2 + 2).
  const test::Setup dense(test::tiny_gqa_gated(), test::plan_of(1, 1, 1, 1, 2, 2, 128));
  const Sharding sh = dense.sharding();
  CHECK(recompute_module_bytes(dense.model, sh, kRecomputeCoreAttn) == 0);
  CHECK(recompute_module_bytes(dense.model, sh, kRecomputeLayernorm) == 2.0 * 256 * 64 * 2);
  CHECK(recompute_module_bytes(dense.model, sh, kRecomputeMlp) == 256.0 * 96 * 6);
  CHECK(recompute_module_bytes(dense.model, sh, kRecomputeMlp, 1.0) == 256.0 * 96 * 5);  // fp8 down input
  // Parts the model does not have drop nothing.
  CHECK(recompute_module_bytes(dense.model, sh, kRecomputeMoe | kRecomputeMlaUpProj) == 0);
  const double selective = activation_bytes_per_layer(dense.model, sh, Recompute::selective, false, true);
  CHECK(activation_bytes_per_layer(dense.model, sh, Recompute::selective, false, true, 2.0,
                                   kRecomputeCoreAttn | kRecomputeMlp) == selective - 256.0 * 96 * 6);

  // MoE (2 layers, 1 dense: half the layers), T = 128 on one GPU: 256 token-expert pairs of width 32, a shared
  // expert of width 32.
  const test::Setup moe(test::tiny_moe(), test::plan_of(1, 1, 1));
  const Sharding ms = moe.sharding();
  const double routed = 128 * 8 * 4 + 256 * (64 * 4 + 32 * 6) + 128 * 32 * 6;  // as "MoE activations" (moe_test)
  CHECK(recompute_module_bytes(moe.model, ms, kRecomputeMoe) == doctest::Approx(0.5 * routed));
  CHECK(recompute_module_bytes(moe.model, ms, kRecomputeMoeAct) == doctest::Approx(0.5 * 256 * 32 * 2));
  CHECK(recompute_module_bytes(moe.model, ms, kRecomputeSharedExperts) == doctest::Approx(0.5 * 128 * 32 * 6));
  CHECK(recompute_module_bytes(moe.model, ms, kRecomputeMlp) == doctest::Approx(0.5 * 128 * 96 * 6));
  // The whole MoE layer includes its activation outputs and shared experts.
  CHECK(recompute_module_bytes(moe.model, ms, kRecomputeMoe | kRecomputeMoeAct | kRecomputeSharedExperts) ==
        recompute_module_bytes(moe.model, ms, kRecomputeMoe));

  // MLA (q_lora 0, kv_lora 16, nope 16, rope 8, v 12, 4 heads): queries and keys at 24, values at 12.
  ModelDesc mla = test::tiny_model();
  mla.mla = MlaDesc{0, 16, 16, 8, 12};
  const test::Setup ml(mla, test::plan_of(1, 1, 1));
  CHECK(recompute_module_bytes(ml.model, ml.sharding(), kRecomputeMlaUpProj) == 128.0 * 4 * (2 * 24 + 12) * 2);
}

TEST_CASE("recompute modules without the attention core keep materialised scores; one layer is re-materialised") {
  const test::Setup su(test::tiny_model(), test::plan_of(1, 1, 1, 1, 2, 2, 128));
  const Sharding sh = su.sharding();
  const double mlp = 256.0 * 256 * (2 + 2);  // plain MLP: fc1 output and the GELU output
  CHECK(activation_bytes_per_layer(su.model, sh, Recompute::selective, true, false, 2.0, kRecomputeMlp) ==
        activation_bytes_per_layer(su.model, sh, Recompute::none, true, false) - mlp);

  test::Setup sel = su;
  sel.plan.recompute = Recompute::selective;
  sel.plan.recompute_modules = kRecomputeCoreAttn | kRecomputeMlp;
  const MemoryBreakdown with = memory_breakdown(sel.ctx(), sel.sharding(), sel.schedule());
  sel.plan.recompute_modules = kRecomputeCoreAttn;
  const MemoryBreakdown without = memory_breakdown(sel.ctx(), sel.sharding(), sel.schedule());
  // Two layers, one micro-batch in flight: two layers' MLP tensors dropped, one re-materialised in backward.
  CHECK(without.activations.v - with.activations.v == doctest::Approx(2 * mlp - mlp));
}

TEST_CASE("fits compares the total with the capacity") {
  MemoryBreakdown mem;
  mem.weights = GiB(40);
  mem.context = GiB(1);
  mem.capacity = GiB(41);
  CHECK(mem.fits());
  mem.capacity = GiB(40.5);
  CHECK_FALSE(mem.fits());
}

}

TEST_CASE("the loss's peak bytes per logit are the framework's") {
  test::Setup su(test::tiny_model(), test::plan_of(1, 1, 1));
  su.framework.logits_bytes_per_logit = 6.0;
  const Sharding sh = su.sharding();
  const MemoryBreakdown fused = memory_breakdown(su.ctx(), sh, su.schedule());
  const double head = (2.0 + 2.0) * sh.tokens * su.model.hidden;  // the final norm's and the head's inputs
  CHECK(fused.logits.v == doctest::Approx(sh.tokens * sh.vocab * 6.0 + head));
  su.framework.logits_bytes_per_logit = 10.0;
  CHECK(memory_breakdown(su.ctx(), sh, su.schedule()).logits.v ==
        doctest::Approx(sh.tokens * sh.vocab * 10.0 + head));
}

TEST_CASE("the tensor-parallel loss's peak bytes per logit, where the framework runs a different loss under tp") {
  test::Setup su(test::tiny_model(), test::plan_of(2, 1, 1));
  su.framework.logits_bytes_per_logit = 12.0;
  su.framework.loss_parallel_logits_bytes_per_logit = 16.0;
  const Sharding sh = su.sharding();
  const double head = (2.0 + 2.0) * sh.norm_tokens * su.model.hidden;  // the final norm's and the head's inputs
  CHECK(memory_breakdown(su.ctx(), sh, su.schedule()).logits.v ==
        doctest::Approx(sh.tokens * sh.vocab * 16.0 + head));
  su.plan = test::plan_of(1, 1, 1);
  su.system = test::synthetic_system(1);
  const Sharding one = su.sharding();
  CHECK(memory_breakdown(su.ctx(), one, su.schedule()).logits.v ==
        doctest::Approx(one.tokens * one.vocab * 12.0 + (2.0 + 2.0) * one.tokens * su.model.hidden));
}

TEST_CASE("op-level selective checkpointing re-materialises one layer's unsaved tensors during its backward") {
  Plan p = test::plan_of(1, 1, 1, 1, 2, 2, 128);
  p.recompute = Recompute::selective;
  test::Setup su(test::tiny_model(), p);
  su.framework.selective_is_op_sac = true;
  const Sharding sh = su.sharding();
  const double saved = op_sac_activation_bytes_per_layer(su.model, sh);
  const double whole = activation_bytes_per_layer(su.model, sh, Recompute::none, true, true);
  REQUIRE(whole > saved);
  // Two layers' saved tensors, one micro-batch in flight, plus the recomputed rest of one layer.
  CHECK(memory_breakdown(su.ctx(), sh, su.schedule()).activations.v == doctest::Approx(2 * saved + whole - saved));
}

TEST_CASE("eager stacks: the SwiGLU's SiLU output and the pre-RoPE Q and K a fused-QKV V view keeps alive") {
  // tiny_gqa_gated: 2 layers, h 64, 4 query heads and 2 K/V heads of 16, gated ffn 96; 1 x 128 tokens, no
  // recompute, one micro-batch in flight.
  test::Setup su(test::tiny_gqa_gated(), test::plan_of(1, 1, 1, 1, 1, 1, 128));
  const Sharding sh = su.sharding();
  const double base = memory_breakdown(su.ctx(), sh, su.schedule()).activations.v;
  // silu(gate) * up: the SiLU output, 96 wide in 16 bits, per token and layer.
  su.framework.eager_swiglu_saves_silu_output = true;
  const double swiglu = memory_breakdown(su.ctx(), sh, su.schedule()).activations.v;
  CHECK(swiglu - base == doctest::Approx(2 * 128.0 * 96 * 2));
  // The fused QKV output stays whole: Q (4 x 16) and K (2 x 16) before RoPE, 16-bit.
  su.framework.attention_keeps_fused_qkv = true;
  CHECK(memory_breakdown(su.ctx(), sh, su.schedule()).activations.v - swiglu ==
        doctest::Approx(2 * 128.0 * (4 + 2) * 16 * 2));
  // Under full recompute only the re-materialised layer holds them.
  su.plan.recompute = Recompute::full;
  const double full = memory_breakdown(su.ctx(), sh, su.schedule()).activations.v;
  su.framework.eager_swiglu_saves_silu_output = su.framework.attention_keeps_fused_qkv = false;
  CHECK(full - memory_breakdown(su.ctx(), sh, su.schedule()).activations.v ==
        doctest::Approx(128.0 * 96 * 2 + 128.0 * 6 * 16 * 2));
}

TEST_CASE("the all-gather K/V exchange holds one layer's gathered K/V: cp x the local K and V, 16-bit") {
  // Tiny model (4 heads of 16, MHA), cp 4, 1 x 256 tokens: 64 per rank. Gathered: 4 x 2 (K, V) x 64 tokens x
  // 4 heads x 16 x 2 bytes = 65,536 bytes, once (one layer's attention at a time), on top of the saved tensors.
  Plan p = test::plan_of(1, 1, 1, 4, 1, 4, 256);
  test::Setup su(test::tiny_model(), p);
  const Sharding sh = su.sharding();
  REQUIRE(sh.tokens == 64.0);
  const double ring = memory_breakdown(su.ctx(), sh, su.schedule()).activations.v;
  su.plan.cp_kind = CpKind::allgather;
  CHECK(memory_breakdown(su.ctx(), sh, su.schedule()).activations.v - ring == doctest::Approx(65536.0));
  // The same under full recompute: the re-materialised layer's attention gathers them again in backward.
  su.plan.recompute = Recompute::full;
  const double full = memory_breakdown(su.ctx(), sh, su.schedule()).activations.v;
  su.plan.cp_kind = CpKind::ring;
  CHECK(full - memory_breakdown(su.ctx(), sh, su.schedule()).activations.v == doctest::Approx(65536.0));
  // GQA (2 K/V heads of 16): the kv heads' K/V, 32,768 bytes, or the query heads' where the framework repeats them
  // before the attention call (torchtitan's repeat_kv), 65,536.
  test::Setup gqa(test::tiny_gqa_gated(), p);
  const Sharding gsh = gqa.sharding();
  const double gring = memory_breakdown(gqa.ctx(), gsh, gqa.schedule()).activations.v;
  gqa.plan.cp_kind = CpKind::allgather;
  CHECK(memory_breakdown(gqa.ctx(), gsh, gqa.schedule()).activations.v - gring == doctest::Approx(32768.0));
  gqa.framework.gqa_repeats_kv = true;
  CHECK(memory_breakdown(gqa.ctx(), gsh, gqa.schedule()).activations.v - gring == doctest::Approx(65536.0));
  // Without context parallelism nothing is gathered.
  Plan one = test::plan_of(1, 1, 1, 1, 1, 1, 64);
  one.cp_kind = CpKind::allgather;
  test::Setup single(test::tiny_model(), one);
  const Sharding ssh = single.sharding();
  const double with = memory_breakdown(single.ctx(), ssh, single.schedule()).activations.v;
  single.plan.cp_kind = CpKind::ring;
  CHECK(with == memory_breakdown(single.ctx(), ssh, single.schedule()).activations.v);
}

TEST_SUITE("memory_model torchtitan") {

TEST_CASE("PyTorch FSDP keeps the root's embedding, final norm and LM head gathered through the step") {
  Plan p = test::plan_of(1, 1, 4, 1, 1, 4, 128);
  p.zero = 3;
  test::Setup su(test::tiny_model(), p);
  const double layer = params_per_layer(su.model);
  // Megatron-style ZeRO-3 (no separate compute copy): two gathered 16-bit layers and one layer's 4-byte gradients.
  CHECK(memory_breakdown(su.ctx(), su.sharding(), su.schedule()).buffers.v == layer * (4.0 + 4.0));
  // PyTorch FSDP (a bf16 compute copy): the root's parameters add 2 bytes each, unsharded. Tiny model, untied:
  // embedding 128 x 64, LM head 128 x 64, final LayerNorm 2 x 64 (weight and bias).
  su.framework.fsdp_unsharded_param_bytes = 2.0;
  const double root = 128.0 * 64 + 128.0 * 64 + 2 * 64;
  const StageParams sp = busiest_stage_params(su.ctx(), su.sharding());
  CHECK(sp.embedding + sp.head + sp.final_norm == root);
  CHECK(memory_breakdown(su.ctx(), su.sharding(), su.schedule()).buffers.v == layer * (4.0 + 4.0) + 2.0 * root);
  // Without resharding after forward (ZeRO-2) every parameter is in the gathered copy already: no root term.
  su.plan.zero = 2;
  CHECK(memory_breakdown(su.ctx(), su.sharding(), su.schedule()).buffers.v == 0.0);
}

TEST_CASE("DTensor tensor parallelism saves the gathered inputs of the column-parallel linears and the LM head") {
  // tp 2 with sequence parallelism, T = 256 tokens (Tn = 128 per rank), h 64, full recompute, no logits term.
  Plan p = test::plan_of(2, 1, 1, 1, 2, 2, 128);
  p.sequence_parallel = true;
  p.recompute = Recompute::full;
  test::Setup su(test::tiny_model(), p);
  su.framework.logits_bytes_per_logit = 0;
  su.framework.loss_parallel_logits_bytes_per_logit = 0;
  const Sharding sh = su.sharding();
  REQUIRE(sh.tokens == 256.0);
  REQUIRE(sh.norm_tokens == 128.0);
  const double input = 2.0 * 128 * 64;  // each layer's saved input, sequence-sharded
  const double whole = activation_bytes_per_layer(su.model, sh, Recompute::none, true, true);
  MemoryBreakdown mem = memory_breakdown(su.ctx(), sh, su.schedule());
  CHECK(mem.activations.v == doctest::Approx(2 * input + whole));
  CHECK(mem.logits.v == doctest::Approx((2.0 * 128 + 2.0 * 128) * 64));  // norm and head inputs, local shard
  // The trait, not the launcher, decides: a torchtitan-launched profile without it counts the local shard.
  su.framework.launcher = Launcher::torchtitan;
  mem = memory_breakdown(su.ctx(), sh, su.schedule());
  CHECK(mem.activations.v == doctest::Approx(2 * input + whole));
  CHECK(mem.logits.v == doctest::Approx((2.0 * 128 + 2.0 * 128) * 64));
  // torchtitan's trait: the re-materialised layer holds the gathered QKV and MLP-up inputs, 2 x (T - Tn) h x 2
  // bytes more, and the head its gathered input (T h x 2 bytes instead of Tn h x 2). Its eager RMSNorm keeps the
  // fp32 upcast of each norm's input: 2 Tn h x (4 - 2) bytes in the layer and Tn h x 4 for the final norm.
  su.framework.tp_saves_gathered_inputs = true;
  su.framework.norm_saved_input_bytes = 4.0;
  const double gathered = 2.0 * (256 - 128) * 64 * 2;
  const double norms = 2.0 * 128 * 64 * 2;
  mem = memory_breakdown(su.ctx(), sh, su.schedule());
  CHECK(mem.activations.v == doctest::Approx(2 * input + whole + gathered + norms));
  CHECK(mem.logits.v == doctest::Approx((4.0 * 128 + 2.0 * 256) * 64));
  // fp8: the layers gather the fp8 cast, 1 byte (the head stays 16-bit).
  su.plan.precision = Dtype::fp8;
  su.framework.fp8_saves_linear_inputs = false;
  mem = memory_breakdown(su.ctx(), sh, su.schedule());
  CHECK(mem.activations.v == doctest::Approx(2 * input + whole + gathered / 2 + norms));
  CHECK(mem.logits.v == doctest::Approx((4.0 * 128 + 2.0 * 256) * 64));
}

TEST_CASE("QK-norm saves its 16-bit q and k inputs and an fp32 reciprocal RMS per normalised row") {
  // Tiny model, s 128, b 2 (T = 256), 4 heads of 16 with 2 kv heads, no parallelism.
  ModelDesc m = test::tiny_model();
  m.kv_heads = 2;
  const Sharding sh = shard(1, false, m);
  const double base = activation_bytes_per_layer(m, sh, Recompute::none, true, true);
  m.qk_norm = QkNorm::per_head;
  const double inputs = 256.0 * (4 + 2) * 16 * 2;  // pre-norm q and k, bf16
  CHECK(activation_bytes_per_layer(m, sh, Recompute::none, true, true) == base + inputs + 4.0 * 256 * (4 + 2));
  m.qk_norm = QkNorm::full;  // one row per token for q and one for k
  CHECK(activation_bytes_per_layer(m, sh, Recompute::none, true, true) == base + inputs + 4.0 * 256 * 2);
  // Full recompute keeps the layer input only.
  CHECK(activation_bytes_per_layer(m, sh, Recompute::full, true, true) ==
        activation_bytes_per_layer(test::tiny_model(), sh, Recompute::full, true, true));
}

TEST_CASE("a custom layout: each rank's activations and states from its own dense and MoE layers") {
  ModelDesc m = test::tiny_moe();
  m.layers = 4;
  m.moe->dense_layers = 2;  // layers 0-1 dense, 2-3 MoE
  Plan plan = test::plan_of(1, 2, 1);
  plan.pipeline_layout = "Et*2|t*2L";  // rank 0: E + the dense layers; rank 1: the MoE layers + L
  const test::Setup su(m, plan);
  auto rank = [&](int load) {
    Sharding sh = su.unsharded();
    sh.rank_load = load;
    for (const Strategy* s : all_strategies()) s->shard(su.ctx(), &sh);
    return sh;
  };
  const Sharding dense = rank(0), moe = rank(1);
  auto per_layer = [&](const Sharding& sh) { return activation_bytes_per_layer(m, sh, Recompute::none, false, true); };
  // The MLP's saved tensors at T = 128 (as "recompute modules"): the dense SwiGLU's T f (2 + 2 + 2); an MoE layer's
  // router probabilities, 256 token-expert pairs of width 32 and the shared expert.
  const double dense_mlp = 128.0 * 96 * 6, routed = 128 * 8 * 4 + 256 * (64 * 4 + 32 * 6) + 128 * 32 * 6;
  CHECK(per_layer(moe) - per_layer(dense) == doctest::Approx(routed - dense_mlp));
  CHECK(recompute_module_bytes(m, dense, kRecomputeMoe) == 0);
  CHECK(recompute_module_bytes(m, moe, kRecomputeMoe) == doctest::Approx(routed));
  // Without the layout both stages hold the mean layer.
  Plan even = plan;
  even.pipeline_layout.clear();
  const test::Setup mean(m, even);
  CHECK(per_layer(mean.sharding()) == doctest::Approx((per_layer(dense) + per_layer(moe)) / 2));
  // The states follow each rank's own parameters (stage_params_test counts them): the dense rank keeps no routed
  // experts; the activations its two layers for the micro-batches in flight.
  for (const Sharding& sh : {dense, moe}) {
    Schedule sched;
    for (const Strategy* s : all_strategies()) s->schedule(su.ctx(), sh, &sched);
    const MemoryBreakdown mem = memory_breakdown(su.ctx(), sh, sched);
    CHECK(mem.weights.v == doctest::Approx(2 * busiest_stage_params(su.ctx(), sh).total()));
    const double layer = activation_bytes_per_layer(m, sh, Recompute::none, false, !su.framework.materialized_attention,
                                                    2.0, kRecomputeCoreAttn, !su.framework.moe_probs_in_activation);
    CHECK(mem.activations.v == doctest::Approx(layer * 2 * sched.in_flight));
  }
  CHECK(busiest_stage_params(su.ctx(), dense).experts == 0);
}

}
