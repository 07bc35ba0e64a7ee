#include "modeler/layer_cost.h"

#include <doctest/doctest.h>

#include "modeler/gemm_model.h"
#include "modeler/precision_recipe.h"
#include "tests/modeler/layer_fixtures.h"

using namespace shardplan;

using test::bandwidth_only;
using test::compute_only;
using test::kAttn;
using test::kLinear;
using test::tiny;

TEST_SUITE("layer_cost") {

TEST_CASE("FLOPs: forward counts the full attention square as Megatron does; backward runs 2x linear, 2.5x attention") {
  const test::Setup su = tiny();
  const Sharding sh = su.sharding();
  CHECK(attention_fwd_flops(su.ctx(), sh) == kAttn);
  const LayerCost c = layer_cost(su.ctx(), sh);
  CHECK(c.forward.flops == kLinear + 2 * kAttn);
  CHECK(c.backward.flops == 2 * kLinear + 5 * kAttn);
  CHECK(c.recompute.flops == 0);
  // Layers + LM head, forward + 2x backward, equal Megatron's model FLOPs per token x tokens.
  const LayerCost head = head_cost(su.ctx(), sh);
  CHECK(head.forward.flops == 2.0 * 256 * 128 * 64);
  CHECK(3 * (2 * c.forward.flops + head.forward.flops) == 256 * model_flops_per_token(su.model, 128));
}

TEST_CASE("compute only: time = FLOPs / peak, attention at the causal half") {
  test::Setup su = tiny();
  compute_only(&su);
  const LayerCost c = layer_cost(su.ctx(), su.sharding());
  CHECK(c.forward.time.v == doctest::Approx((kLinear + kAttn) / test::kPeak).scale(0));
  CHECK(c.forward.attention.v == doctest::Approx(kAttn / test::kPeak).scale(0));
  CHECK(c.backward.time.v == doctest::Approx((2 * kLinear + 2.5 * kAttn) / test::kPeak).scale(0));
  CHECK(c.backward.attention.v == doctest::Approx(2.5 * kAttn / test::kPeak).scale(0));
  const LayerCost head = head_cost(su.ctx(), su.sharding());
  CHECK(head.forward.time.v == doctest::Approx(2.0 * 256 * 128 * 64 / test::kPeak).scale(0));
  CHECK(head.backward.time.v == doctest::Approx(4.0 * 256 * 128 * 64 / test::kPeak).scale(0));
}

TEST_CASE("bandwidth only: GEMM operands plus fused elementwise kernels") {
  test::Setup su = tiny();
  bandwidth_only(&su);
  // GEMM bytes (A + B + C, 2 bytes each): QKV 155,648; out 73,728; up 196,608; down 196,608 = 622,592.
  // Elementwise: 2 norms x 2 x T h x 2 = 131,072; 2 residuals x 3 x T h x 2 = 196,608; GELU 2 x T f x 2 =
  // 262,144; RoPE 2 x T x (4 + 4) x 16 x 2 = 131,072; total 720,896.
  // Backward: dX and dW GEMMs each move what the forward GEMM moved; elementwise twice the forward. But the
  // synthetic framework is Megatron-LM's, whose dW GEMMs write the fp32 main_grad (gradient_accumulation_fusion,
  // framework.h wgrad_into_fp32_main_grad): C takes 4 bytes, not 2, for the 64 x 192 + 64 x 64 + 2 x 64 x 256 =
  // 49,152 weight elements, +98,304 bytes; one micro-batch (mbs 2 of gbs 2), so C is never read back.
  const LayerCost c = layer_cost(su.ctx(), su.sharding());
  REQUIRE(su.framework.wgrad_into_fp32_main_grad);
  REQUIRE(su.plan.num_microbatches() == 1);
  CHECK(c.forward.time.v == doctest::Approx((622592.0 + 720896.0) / test::kHbm).scale(0));
  CHECK(c.backward.time.v == doctest::Approx((2 * (622592.0 + 720896.0) + 98304.0) / test::kHbm).scale(0));
  // No rotary embedding: 131,072 bytes fewer.
  su.model.position = PositionKind::learned;
  su.model.max_position = 128;
  CHECK(layer_cost(su.ctx(), su.sharding()).forward.time.v
      == doctest::Approx((622592.0 + 589824.0) / test::kHbm).scale(0));
}

TEST_CASE("bandwidth only: eager frameworks pay passes per norm and an unfused SwiGLU") {
  test::Setup su = tiny();
  bandwidth_only(&su);
  su.framework.fused_elementwise = false;
  su.framework.unfused_passes_per_norm = 4;
  // Norms 4x: 524,288 instead of 131,072; a plain GELU stays 2 T f x 2.
  CHECK(layer_cost(su.ctx(), su.sharding()).forward.time.v ==
        doctest::Approx((622592.0 + 720896.0 + 393216.0) / test::kHbm).scale(0));
  // SwiGLU, f 96: fused reads gate and up and writes one (3 T f x 2), eager 5 T f x 2.
  su.model = test::tiny_gqa_gated();
  const double T = 256, f = 96;
  const LayerCost eager = layer_cost(su.ctx(), su.sharding());
  su.framework.fused_elementwise = true;
  const LayerCost fused = layer_cost(su.ctx(), su.sharding());
  CHECK((eager.forward.time - fused.forward.time).v ==
        doctest::Approx((2 * T * f * 2 + 2 * 3 * (2 * T * 64 * 2)) /
                        test::kHbm).scale(0));  // SwiGLU 5 vs 3; 2 norms, 3 passes more
}

TEST_CASE("bandwidth only: an eager RoPE of its own and the K/V repeat move as much in backward as in forward") {
  test::Setup su = tiny();
  bandwidth_only(&su);
  su.model = test::tiny_gqa_gated();  // 4 query heads, 2 K/V heads, d 16
  const double T = 256, qk = T * (4 + 2) * 16;
  const LayerCost base = layer_cost(su.ctx(), su.sharding());
  // torchtitan's eager RoPE (float cast, complex multiply, cast back): 20 bytes per q/k element each way, in place
  // of the fused kernel's 2 + 2 (doubled in backward like the other elementwise kernels).
  su.framework.eager_rope_bytes_per_element = 20;
  const LayerCost rope = layer_cost(su.ctx(), su.sharding());
  CHECK((rope.forward.time - base.forward.time).v == doctest::Approx((qk * 20 - qk * 4) / test::kHbm).scale(0));
  CHECK((rope.backward.time - base.backward.time).v == doctest::Approx((qk * 20 - 2 * qk * 4) / test::kHbm).scale(0));
  // repeat_kv: K and V read at 2 heads and written at 4, 16-bit; the backward sums the copies back.
  su.framework.eager_rope_bytes_per_element = 0;
  su.framework.gqa_repeats_kv = true;
  const double repeat = 2 * T * (2 + 4) * 16 * 2;
  const LayerCost rep = layer_cost(su.ctx(), su.sharding());
  CHECK((rep.forward.time - base.forward.time).v == doctest::Approx(repeat / test::kHbm).scale(0));
  CHECK((rep.backward.time - base.backward.time).v == doctest::Approx(repeat / test::kHbm).scale(0));
  CHECK(kv_repeat_time(su.ctx(), su.sharding()).v == doctest::Approx(repeat / test::kHbm).scale(0));
  // Op-level selective checkpointing re-runs both with the other elementwise kernels.
  su.plan.recompute = Recompute::selective;
  su.framework.selective_is_op_sac = true;
  const LayerCost sac = layer_cost(su.ctx(), su.sharding());
  su.framework.gqa_repeats_kv = false;
  CHECK((sac.recompute.time - layer_cost(su.ctx(), su.sharding()).recompute.time).v ==
        doctest::Approx(repeat / test::kHbm).scale(0));
  // Without grouped-query attention there is nothing to repeat.
  su.model = test::tiny_model();
  CHECK(kv_repeat_time(su.ctx(), su.sharding()).v == 0);
}

TEST_CASE("the layer cost is the sum of gemm_time over its GEMMs plus attention plus elementwise") {
  const test::Setup su = tiny();
  const Gpu& g = su.system.gpu;
  auto lin = [&](double m, double n, double k) { return gemm_time(g, Dtype::bf16, m, n, k); };
  const Seconds gemms = lin(256, 192, 64) + lin(256, 64, 64) + lin(256, 256, 64) + lin(256, 64, 256);
  const LayerCost c = layer_cost(su.ctx(), su.sharding());
  CHECK(c.forward.time.v
      == doctest::Approx((gemms + Seconds(kAttn / test::kPeak) + Seconds(720896.0 / test::kHbm)).v).scale(0));
}

TEST_CASE("recompute: selective re-runs the attention core, full the whole forward") {
  test::Setup su = tiny();
  su.plan.recompute = Recompute::selective;
  LayerCost c = layer_cost(su.ctx(), su.sharding());
  CHECK(c.recompute.time == c.forward.attention);
  CHECK(c.recompute.attention == c.forward.attention);
  CHECK(c.recompute.flops == 2 * kAttn);
  su.plan.recompute = Recompute::full;
  c = layer_cost(su.ctx(), su.sharding());
  CHECK(c.recompute.time == c.forward.time);
  CHECK(c.recompute.flops == c.forward.flops);
  // Block method, 1 of the 2 layers: the per-layer mean re-runs half a forward.
  su.plan.recompute_layers = 1;
  c = layer_cost(su.ctx(), su.sharding());
  CHECK(c.recompute.time.v == doctest::Approx(0.5 * c.forward.time.v).scale(0));
  CHECK(c.recompute.flops == doctest::Approx(0.5 * c.forward.flops));
}

TEST_CASE("recompute modules: each recomputed module's forward once more") {
  test::Setup su = tiny();
  compute_only(&su);
  su.plan.recompute = Recompute::selective;
  su.plan.recompute_modules = kRecomputeCoreAttn | kRecomputeMlp;
  // The MLP's two GEMMs: 2 T h f x 2 = 2 x 256 x 64 x 256 x 2.
  const double mlp = 16777216;
  LayerCost c = layer_cost(su.ctx(), su.sharding());
  CHECK(c.recompute.flops == doctest::Approx(2 * kAttn + mlp));
  CHECK(c.recompute.time.v == doctest::Approx((kAttn + mlp) / test::kPeak).scale(0));
  CHECK(c.recompute.attention == c.forward.attention);
  su.plan.recompute_modules = kRecomputeMlp;  // without the attention core
  c = layer_cost(su.ctx(), su.sharding());
  CHECK(c.recompute.flops == doctest::Approx(mlp));
  CHECK(c.recompute.attention.v == 0);

  // The norms: their forward passes, 2 x (2 T h x 2 bytes), once more.
  test::Setup bw = tiny();
  bandwidth_only(&bw);
  bw.plan.recompute = Recompute::selective;
  const Seconds core = layer_cost(bw.ctx(), bw.sharding()).recompute.time;
  bw.plan.recompute_modules = kRecomputeCoreAttn | kRecomputeLayernorm;
  CHECK((layer_cost(bw.ctx(), bw.sharding()).recompute.time - core).v ==
        doctest::Approx(2 * (2.0 * 256 * 64 * 2) / test::kHbm).scale(0));

  // MLA's K/V up projection (q_lora 0): 2 T kv_lora x heads (nope + v) = 2 x 256 x 16 x 4 x 28.
  su.model.mla = MlaDesc{0, 16, 16, 8, 12};
  su.plan.recompute_modules = kRecomputeCoreAttn;
  const double attn_only = layer_cost(su.ctx(), su.sharding()).recompute.flops;
  su.plan.recompute_modules = kRecomputeCoreAttn | kRecomputeMlaUpProj;
  CHECK(layer_cost(su.ctx(), su.sharding()).recompute.flops - attn_only == doctest::Approx(2.0 * 256 * 16 * 4 * 28));
}

TEST_CASE("recompute modules of an MoE layer: the whole layer, its shared experts, or its activation function") {
  // One GPU, T 128, half the layers MoE (moe_test): shared expert 1,572,864 FLOPs, router 131,072, routed experts
  // 3,145,728.
  test::Setup su(test::tiny_moe(), test::plan_of(1, 1, 1));
  compute_only(&su);
  su.plan.recompute = Recompute::selective;
  su.plan.recompute_modules = kRecomputeMoe;
  LayerCost c = layer_cost(su.ctx(), su.sharding());
  CHECK(c.recompute.flops == doctest::Approx(0.5 * (1572864 + 131072 + 3145728)));
  CHECK(c.recompute.moe == c.recompute.time);
  CHECK(c.recompute.moe.v > 0);
  su.plan.recompute_modules = kRecomputeSharedExperts;
  CHECK(layer_cost(su.ctx(), su.sharding()).recompute.flops == doctest::Approx(0.5 * 1572864));
  // The activation function is memory-bound: no FLOPs, time only.
  test::Setup bw(test::tiny_moe(), test::plan_of(1, 1, 1));
  bandwidth_only(&bw);
  bw.plan.recompute = Recompute::selective;
  bw.plan.recompute_modules = kRecomputeMoeAct;
  c = layer_cost(bw.ctx(), bw.sharding());
  CHECK(c.recompute.flops == 0);
  // SwiGLU over 256 pairs of width 32, fused: 3 x 256 x 32 x 2 bytes, in half the layers.
  CHECK(c.recompute.time.v == doctest::Approx(0.5 * 3 * 256 * 32 * 2 / test::kHbm).scale(0));
}

TEST_CASE("tensor and context parallelism divide the per-rank work") {
  const LayerCost one = layer_cost(tiny().ctx(), tiny().sharding());
  const test::Setup tp2 = tiny(2);
  CHECK(layer_cost(tp2.ctx(), tp2.sharding()).forward.flops == one.forward.flops / 2);
  // cp 2: each rank has s/2 queries against all s keys, half the causal work (load-balanced split).
  const test::Setup cp2 = tiny(1, 2);
  CHECK(attention_fwd_flops(cp2.ctx(), cp2.sharding()) == kAttn / 2);
  CHECK(layer_cost(cp2.ctx(), cp2.sharding()).forward.flops == one.forward.flops / 2);
}

TEST_CASE("AsyncTP's reduce kernels: the backward's only where its dX reduce-scatters are paired") {
  test::Setup su = tiny(2);
  bandwidth_only(&su);
  su.plan.sequence_parallel = true;
  su.plan.tp_comm_overlap = true;
  su.framework.tp_overlap_rs_reduce_kernel = true;
  const LayerCost paired = layer_cost(su.ctx(), su.sharding());
  su.framework.tp_overlap_pairs_dx_reduce_scatter = false;
  const LayerCost plain = layer_cost(su.ctx(), su.sharding());
  // Two sums per pass over T 256 x h 64 16-bit elements read and T / 2 x h written: 2 x 256 x 64 x 2 x 1.5.
  const double two_sums = 2 * 256 * 64 * 2 * 1.5;
  CHECK((paired.backward.time - plain.backward.time).v == doctest::Approx(two_sums / test::kHbm).scale(0));
  CHECK(paired.forward.time == plain.forward.time);
}

TEST_CASE("head: embedding on the first stage, LM head + cross-entropy + final norm on the last") {
  test::Setup su = tiny();
  bandwidth_only(&su);
  // Embedding gather 2 x T h x 2 = 65,536 (backward 2x). LM head GEMM 256 x 128 x 64: 114,688 bytes (backward 2x).
  // Fused cross-entropy 12 bytes per logit, half in each pass: 196,608. Final norm 65,536 (backward 2x).
  // The loss's bytes per logit are the framework's trait: the synthetic framework inherits Megatron-LM's unfused
  // vocab-parallel loss (52, framework_profiles_megatron.cc), so the test sets the fused kernel's 12 (NeMo's).
  su.framework.cross_entropy_bytes_per_logit = 12.0;
  LayerCost h = head_cost(su.ctx(), su.sharding());
  CHECK(h.forward.time.v == doctest::Approx((65536.0 + 114688 + 196608 + 65536) / test::kHbm).scale(0));
  CHECK(h.backward.time.v == doctest::Approx((131072.0 + 229376 + 196608 + 131072) / test::kHbm).scale(0));
  // pp 2: the busier (last) stage only.
  su.plan = test::plan_of(1, 2, 1, 1, 2, 4, 128);
  su.system.gpus = 2;
  h = head_cost(su.ctx(), su.sharding());
  CHECK(h.forward.time.v == doctest::Approx((114688.0 + 196608 + 65536) / test::kHbm).scale(0));
  CHECK(h.backward.time.v == doctest::Approx((229376.0 + 196608 + 131072) / test::kHbm).scale(0));
  // Unfused elementwise kernels do not change the loss: its traffic is the per-logit trait alone.
  su.framework.fused_elementwise = false;
  CHECK(head_cost(su.ctx(), su.sharding()).forward.time == h.forward.time);
  // Megatron-LM's unfused vocab-parallel loss: 52 bytes per logit, 26 in each pass.
  su.framework.cross_entropy_bytes_per_logit = 52.0;
  h = head_cost(su.ctx(), su.sharding());
  CHECK(h.forward.time.v == doctest::Approx((114688.0 + 256 * 128 * 26 + 65536) / test::kHbm).scale(0));
  CHECK(h.backward.time.v == doctest::Approx((229376.0 + 256 * 128 * 26 + 131072) / test::kHbm).scale(0));
}

TEST_CASE("output parts: the embedding and LM head bytes head_cost and the MTP module share; frozen, no gradients") {
  test::Setup su = tiny();
  bandwidth_only(&su);
  su.framework.cross_entropy_bytes_per_logit = 12.0;
  // The bytes of the head test above without the final norm: gather 65,536 (scatter-add 2x), LM head GEMM 114,688
  // (backward 2x) plus the loss's 196,608 bytes in each pass (half of 256 x 128 x 12).
  OutputParts o = output_parts(su.ctx(), su.sharding());
  CHECK(o.embed_fwd.v == doctest::Approx(65536.0 / test::kHbm).scale(0));
  CHECK(o.embed_bwd.v == doctest::Approx(131072.0 / test::kHbm).scale(0));
  CHECK(o.head_fwd.v == doctest::Approx((114688.0 + 196608) / test::kHbm).scale(0));
  CHECK(o.head_bwd.v == doctest::Approx((229376.0 + 196608) / test::kHbm).scale(0));
  CHECK(o.head_flops == 2.0 * 256 * 128 * 64);
  // A frozen base (LoRA): no embedding gradient and no LM-head weight gradient; dgrad and the loss stay.
  su.plan.finetune.peft = Peft::lora;
  o = output_parts(su.ctx(), su.sharding());
  CHECK(o.embed_bwd.v == 0);
  CHECK(o.head_bwd.v == doctest::Approx((114688.0 + 196608) / test::kHbm).scale(0));
}

TEST_CASE("head: a framework with its own tensor-parallel loss moves that loss's bytes per logit under tp") {
  test::Setup su = tiny(2);
  bandwidth_only(&su);
  const LayerCost plain = head_cost(su.ctx(), su.sharding());
  su.framework.loss_parallel_cross_entropy_bytes_per_logit = 76.0;
  const LayerCost parallel = head_cost(su.ctx(), su.sharding());
  // T 256 tokens over the local vocabulary 128 / 2, half the bytes in each pass.
  const double extra = 256.0 * 64 * (76.0 - su.framework.cross_entropy_bytes_per_logit) / 2;
  CHECK((parallel.forward.time - plain.forward.time).v == doctest::Approx(extra / test::kHbm).scale(0));
  CHECK((parallel.backward.time - plain.backward.time).v == doctest::Approx(extra / test::kHbm).scale(0));
  // Without tensor parallelism the loss is the ordinary one.
  test::Setup one = tiny();
  bandwidth_only(&one);
  const Seconds before = head_cost(one.ctx(), one.sharding()).forward.time;
  one.framework.loss_parallel_cross_entropy_bytes_per_logit = 76.0;
  CHECK(head_cost(one.ctx(), one.sharding()).forward.time == before);
}

}

TEST_SUITE("layer_cost") {

TEST_CASE("linear slots: each linear's fprop, dgrad and wgrad; TP overlap chunks the GEMMs it feeds") {
  test::Setup su = tiny(2);
  su.plan.sequence_parallel = true;
  compute_only(&su);
  su.system.gpu.eff.kernel_overhead = us(1);  // every GEMM launch costs: chunks show up as extra time
  const LayerCost plain = layer_cost(su.ctx(), su.sharding());
  Seconds fwd, bwd;
  for (int i = 0; i < 4; ++i) {
    CHECK(plain.forward.linear[i].v > 0);
    CHECK(plain.backward.linear[i].v > 0);      // dgrad
    CHECK(plain.backward.linear[i + 4].v > 0);  // wgrad
    fwd += plain.forward.linear[i];
    bwd += plain.backward.linear[i] + plain.backward.linear[i + 4];
  }
  CHECK(fwd.v < plain.forward.time.v);  // attention and elementwise kernels are not in any slot
  CHECK(bwd.v < plain.backward.time.v);
  CHECK(tp_overlap_chunks(su.ctx()).ag == 1);
  su.plan.tp_comm_overlap = true;
  const OverlapChunks ch = tp_overlap_chunks(su.ctx());
  CHECK(ch.ag == 2);  // the all-gather ring: tp chunks
  CHECK(ch.rs == 4);  // Transformer Engine's pipelined reduce-scatter: 4 chunks
  const LayerCost split = layer_cost(su.ctx(), su.sharding());
  // QKV fprop as 2 chunks of half the rows: one more launch; proj fprop as 4 chunks: three more.
  CHECK(split.forward.linear[linear_slot(LinearGemm::qkv)].v ==
        doctest::Approx(plain.forward.linear[linear_slot(LinearGemm::qkv)].v + 1e-6).scale(0));
  CHECK(split.forward.linear[linear_slot(LinearGemm::proj)].v ==
        doctest::Approx(plain.forward.linear[linear_slot(LinearGemm::proj)].v + 3e-6).scale(0));
  // fc2 dgrad behind the all-gather ring: 2 chunks, one more launch.
  CHECK(split.backward.linear[linear_slot(LinearGemm::fc2)].v ==
        doctest::Approx(plain.backward.linear[linear_slot(LinearGemm::fc2)].v + 1e-6).scale(0));
  CHECK(split.forward.time.v == doctest::Approx(plain.forward.time.v + 8e-6).scale(0));
}

TEST_CASE("gradient accumulation fusion: each wgrad writes fp32 main_grad, read first after the first micro-batch") {
  test::Setup su = tiny();
  bandwidth_only(&su);
  const auto wgrad = [&su](LinearGemm w) {
    return layer_cost(su.ctx(), su.sharding()).backward.linear[linear_slot(w, true)].v;
  };
  su.framework.wgrad_into_fp32_main_grad = false;
  // T 256, h 64, f 256, bf16: the MLP-up wgrad is a 64 x 256 GEMM of depth 256: A (X^T, 64 x 256) 32,768 bytes,
  // B (dY, 256 x 256) 131,072, C 32,768.
  const double plain = wgrad(LinearGemm::fc1);
  CHECK(plain == doctest::Approx((32768.0 + 131072.0 + 32768.0) / test::kHbm).scale(0));
  su.framework.wgrad_into_fp32_main_grad = true;
  const int mb = su.plan.num_microbatches();
  REQUIRE(mb >= 1);
  // C as fp32 (65,536 bytes), read back on (mb - 1) / mb of the micro-batches.
  CHECK(wgrad(LinearGemm::fc1) ==
        doctest::Approx((32768.0 + 131072.0 + 65536.0 * (1.0 + (mb - 1.0) / mb)) / test::kHbm).scale(0));
  su.plan.global_batch = 4 * su.plan.global_batch;  // 4x the micro-batches: more of them accumulate
  CHECK(wgrad(LinearGemm::fc1) > plain * 1.3);
}

TEST_CASE("fp8 GEMMs: blockwise and mxfp8 use the block-scaled table, delayed and tensorwise the per-tensor one") {
  test::Setup su = tiny();
  compute_only(&su);
  su.plan.precision = Dtype::fp8;
  Gpu& g = su.system.gpu;
  g.peak[static_cast<int>(Dtype::fp8)] = FlopsPerSec(2 * test::kPeak);
  g.peak[static_cast<int>(Dtype::fp4)] = FlopsPerSec(4 * test::kPeak);  // MX scaling (Blackwell)
  const auto grid = [](double v) {
    Grid3 x;
    x.m = {256};
    x.n = {256};
    x.k = {256};
    x.values = {v};
    return x;
  };
  g.eff.gemm_grid[static_cast<int>(Dtype::fp8)] = grid(0.8);  // per-tensor scaled
  g.eff.gemm_grid_fp8_block = grid(0.4);                       // block scaled: half the rate
  const auto gemms = [&](Fp8Recipe r) {
    su.plan.fp8_recipe = r;
    const LayerCost c = layer_cost(su.ctx(), su.sharding());
    Seconds t;
    for (int i = 0; i < 4; ++i) t += c.forward.linear[i] + c.backward.linear[i] + c.backward.linear[i + 4];
    return t.v;
  };
  // 3x the forward linear FLOPs (fprop, dgrad, wgrad) at the fp8 peak times the table's efficiency.
  CHECK(gemms(Fp8Recipe::tensorwise) == doctest::Approx(3 * kLinear / (2 * test::kPeak * 0.8)).scale(0));
  CHECK(gemms(Fp8Recipe::delayed) == doctest::Approx(3 * kLinear / (2 * test::kPeak * 0.8)).scale(0));
  CHECK(gemms(Fp8Recipe::blockwise) == doctest::Approx(3 * kLinear / (2 * test::kPeak * 0.4)).scale(0));
  CHECK(gemms(Fp8Recipe::mxfp8) == doctest::Approx(3 * kLinear / (2 * test::kPeak * 0.4)).scale(0));
  // Attention stays 16-bit whatever the recipe.
  su.plan.fp8_recipe = Fp8Recipe::blockwise;
  CHECK(layer_cost(su.ctx(), su.sharding()).forward.attention.v == doctest::Approx(kAttn / test::kPeak).scale(0));

  // A GPU without a block-scaled table: the stated rule, its per-tensor fp8 table.
  g.eff.gemm_grid_fp8_block = Grid3{};
  CHECK(gemms(Fp8Recipe::blockwise) == doctest::Approx(gemms(Fp8Recipe::tensorwise)).scale(0));
}

TEST_CASE("fp8 quantization launches: current scaling's memset and scale kernel beside its amax pass and cast") {
  // Bandwidth unbounded, so each quantization operation costs the GPU's fixed kernel time. Per pass, 4 linears:
  // delayed scaling 1 cast-transpose each; Transformer Engine's current scaling 4 operations each (memset, amax,
  // scale, cast; precision_recipe.cc). Parameters kept in fp8 make the weights' copy the same for both.
  test::Setup su = tiny();
  compute_only(&su);
  su.plan.precision = Dtype::fp8;
  su.plan.fp8_param_gather = true;
  su.system.gpu.peak[static_cast<int>(Dtype::fp8)] = FlopsPerSec(2 * test::kPeak);
  su.system.gpu.eff.kernel_overhead = Seconds(3e-6);
  const auto cost = [&](Fp8Recipe r) {
    su.plan.fp8_recipe = r;
    return layer_cost(su.ctx(), su.sharding());
  };
  const LayerCost delayed = cost(Fp8Recipe::delayed), current = cost(Fp8Recipe::tensorwise);
  CHECK(current.forward.time.v - delayed.forward.time.v == doctest::Approx(4 * (4 - 1) * 3e-6).scale(0));
  CHECK(current.backward.time.v - delayed.backward.time.v == doctest::Approx(4 * (4 - 1) * 3e-6).scale(0));
}

TEST_CASE("Transformer Engine 1.x delayed scaling: norms write fp8, the weight-gradient transposes in backward") {
  // Bandwidth only, tp 1: tiny has T = 256, h = 64, 4 x 16 heads, ffn 256 (GELU). Against Transformer Engine
  // 2.x's one cast-transpose per input and gradient (4 B/element), TE v1.8's modules (precision_recipe.h
  // te_v1_layer_quantize): forward, the proj and FC2 inputs' cast-transpose only (4 x 256 x (64 + 256)) and the
  // two norms write 1 byte less per element (2 x 256 x 64); backward adds the fp8_transpose of the QKV and FC1
  // inputs (2 x 2 x 256 x 64) and casts the gradients as before.
  test::Setup su = tiny();
  bandwidth_only(&su);
  su.system.gpu.peak[static_cast<int>(Dtype::fp8)] = FlopsPerSec(1e30);
  su.plan.precision = Dtype::fp8;
  su.plan.fp8_recipe = Fp8Recipe::delayed;
  const LayerCost v2 = layer_cost(su.ctx(), su.sharding());
  su.framework.fp8_library = Fp8Library::transformer_engine_v1;
  const LayerCost v1 = layer_cost(su.ctx(), su.sharding());
  const double fwd_v2 = 4.0 * 256 * (64 + 64 + 64 + 256), fwd_v1 = 4.0 * 256 * (64 + 256) - 2.0 * 256 * 64;
  CHECK(v1.forward.time.v - v2.forward.time.v == doctest::Approx((fwd_v1 - fwd_v2) / test::kHbm).scale(0));
  CHECK(v1.backward.time.v - v2.backward.time.v == doctest::Approx(2.0 * 2 * 256 * 64 / test::kHbm).scale(0));
  // Not for other recipes (current scaling was not read at 1.x).
  su.plan.fp8_recipe = Fp8Recipe::tensorwise;
  const LayerCost cs_v1 = layer_cost(su.ctx(), su.sharding());
  su.framework.fp8_library = Fp8Library::transformer_engine;
  CHECK(cs_v1.forward.time.v == doctest::Approx(layer_cost(su.ctx(), su.sharding()).forward.time.v).scale(0));
}

}  // TEST_SUITE
