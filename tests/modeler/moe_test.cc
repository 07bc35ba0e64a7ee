// The MoE, MLA and sliding-window parts of the layer cost and memory models (mlp_cost.cc, attention_cost.cc,
// layer_cost.cc, memory_model.cc).
#include <doctest/doctest.h>

#include "modeler/moe_host.h"

#include "modeler/evaluate.h"
#include "modeler/gemm_model.h"
#include "modeler/layer_cost.h"
#include "modeler/memory_model.h"
#include "tests/modeler/test_fixtures.h"

using namespace shardplan;
using namespace shardplan::test;

namespace {

double forward_flops(const ModelDesc& m, Plan p = plan_of(1, 1, 1)) {
  const Setup s(m, p);
  return layer_cost(s.ctx(), s.sharding()).forward.flops;
}

}  // namespace

TEST_SUITE("moe") {

TEST_CASE("MoE layer: router + top_k routed experts + shared expert, averaged with the dense layers") {
  const double T = 128, h = 64;
  const double dense_mlp = 2 * T * h * 96 * 3;
  const double moe_mlp = 2 * T * h * 32 * 3 + 2 * T * h * 8 + 2 * (T * 2) * h * 32 * 3;  // shared, router, experts
  CHECK(forward_flops(tiny_moe()) - forward_flops(tiny_gqa_gated()) == doctest::Approx(0.5 * (moe_mlp - dense_mlp)));
}

TEST_CASE("expert parallelism keeps the FLOPs per rank (tokens x top_k are conserved over the EP group)") {
  Plan ep = plan_of(1, 1, 4, 1, 1, 4);
  ep.ep = 4;
  CHECK(forward_flops(tiny_moe(), ep) == doctest::Approx(forward_flops(tiny_moe())));
}

TEST_CASE("grouped GEMM efficiency is the table's at the per-expert size, not the summed size") {
  // A GEMM table rising with size: small per-expert GEMMs are slower per FLOP than one big GEMM.
  Setup many(tiny_moe(), plan_of(1, 1, 1)), few(tiny_moe(), plan_of(1, 1, 1));
  many.model.moe->experts = 64;
  many.model.moe->top_k = 16;
  many.model.moe->expert_ffn_hidden = 8;  // same routed FLOPs as 8 experts, top 2, width 64
  few.model.moe->expert_ffn_hidden = 64;
  Curve rising;
  rising.x = {1e5, 1e9};
  rising.y = {0.1, 1.0};
  for (Setup* s : {&many, &few}) s->system.gpu.eff.gemm[static_cast<int>(Dtype::bf16)] = rising;
  const LayerCost a = layer_cost(many.ctx(), many.sharding()), b = layer_cost(few.ctx(), few.sharding());
  CHECK(a.forward.time > b.forward.time);
}

TEST_CASE("fp8 quantizes each linear's input: every token-expert pair's expert inputs, not the router's") {
  // T 128, h 64, 4 heads of 16. Attention: QKV input T h + output projection input T x 64 = 16,384 elements.
  // Dense layer MLP: T h + T x 96 = 20,480. MoE layer: shared expert T h + T x 32 = 12,288, experts over
  // 2T pairs x (64 + 32) = 24,576; averaged over one dense and one MoE layer: 28,672. Current scaling reads each
  // input once more than delayed scaling (its amax pass: 2 bytes per element); weights kept in fp8 cost both the
  // same, so the forward differs by exactly that pass and the backward by the same pass over the gradients.
  Setup su(tiny_moe(), plan_of(1, 1, 1));
  su.plan.precision = Dtype::fp8;
  su.plan.fp8_param_gather = true;
  su.system.gpu.peak[static_cast<int>(Dtype::fp8)] = su.system.gpu.peak[static_cast<int>(Dtype::bf16)] * 2.0;
  su.plan.fp8_recipe = Fp8Recipe::tensorwise;
  const LayerCost current = layer_cost(su.ctx(), su.sharding());
  su.plan.fp8_recipe = Fp8Recipe::delayed;
  const LayerCost delayed = layer_cost(su.ctx(), su.sharding());
  CHECK((current.forward.time - delayed.forward.time).v == doctest::Approx((16384.0 + 28672.0) * 2.0 / kHbm).scale(0));
  CHECK(current.backward.time > delayed.backward.time);
}

TEST_CASE("a rank holding several experts sorts the received pairs by expert and back (Megatron permutation 2)") {
  // Bandwidth only. T 128, top-2: 256 pairs of h 64. From one local expert to two, the MoE layer (half of the
  // layers) gains the sort and the unsort, each a read and a write of every pair: 256 x 64 x 2 x 2 x 2 = 131,072
  // bytes, and the grouped GEMMs read one more weight of each: fc1 64 x 64 x 2 = 8,192, fc2 32 x 64 x 2 = 4,096.
  // Backward: the elementwise passes twice; the dX GEMMs read the extra weights (12,288 bytes) and the dW GEMMs
  // write their gradients: fp32 into main_grad under the synthetic (Megatron-LM) framework's gradient
  // accumulation fusion (framework.h wgrad_into_fp32_main_grad), read back on 7 of the 8 micro-batches:
  // 6,144 elements x 4 x (1 + 7/8) = 46,080 bytes.
  Setup su(tiny_moe(), plan_of(1, 1, 1));
  REQUIRE(su.framework.wgrad_into_fp32_main_grad);
  REQUIRE(su.plan.num_microbatches() == 8);
  su.system.gpu.peak[static_cast<int>(Dtype::bf16)] = FlopsPerSec(1e30);
  Sharding sh = su.sharding();
  sh.local_experts = 1;
  const LayerCost one = layer_cost(su.ctx(), sh);
  sh.local_experts = 2;
  const LayerCost two = layer_cost(su.ctx(), sh);
  CHECK((two.forward.time - one.forward.time).v == doctest::Approx(0.5 * (131072.0 + 12288.0) / kHbm).scale(0));
  CHECK((two.backward.time - one.backward.time).v ==
        doctest::Approx(0.5 * (2 * 131072.0 + 12288.0 + 46080.0) / kHbm).scale(0));
}

TEST_CASE("fused permutation (TE) reads each token once and writes its top-k rows; unfused moves every pair twice") {
  // Bandwidth only. T 128 tokens, 256 pairs, h 64, 2-byte rows, 8 local experts (the sort and its inverse,
  // 256 rows read and written each: 131,072 bytes). Per pass (permute, un-permute): unfused 2 x 256 rows,
  // fused 128 + 256: unfused 131,072 + 131,072 bytes, fused 98,304 + 131,072. Backward: fused, each pass's
  // backward is the other pass (TE v2.7 permutation.py), the same bytes; unfused twice. MoE is half the layers.
  // (Approx(...).scale(0): doctest's default scale of 1 would accept any two times under a microsecond.)
  Setup su(tiny_moe(), plan_of(1, 1, 1));
  su.system.gpu.peak[static_cast<int>(Dtype::bf16)] = FlopsPerSec(1e30);
  su.framework.fused_moe_permutation = false;
  const LayerCost unfused = layer_cost(su.ctx(), su.sharding());
  su.framework.fused_moe_permutation = true;
  const LayerCost fused = layer_cost(su.ctx(), su.sharding());
  const double u = 262144.0, f = 229376.0;
  CHECK((unfused.forward.time - fused.forward.time).v == doctest::Approx(0.5 * (u - f) / kHbm).scale(0));
  CHECK((unfused.backward.time - fused.backward.time).v == doctest::Approx(0.5 * (2.0 * u - f) / kHbm).scale(0));
  const MoeForwardParts q = moe_forward_parts(su.ctx(), su.sharding());
  CHECK(q.permutation_bwd.v == doctest::Approx(q.permutation.v).scale(0));
  CHECK(find_framework("nemo")->fused_moe_permutation);
  CHECK_FALSE(find_framework("megatron-lm")->fused_moe_permutation);  // --moe-permute-fusion is off by default
}

TEST_CASE("fused router (TE): top-k, aux-loss scores and loss move 30 bytes per fp32 logit forward, 29 backward") {
  // T 128 x 8 experts = 1024 logits at 1000 GB/s: top-k 13 + 13, aux scores 13 + 12, aux loss 4 + 4
  // (fused_topk_with_score_function.cu, fused_score_for_moe_aux_loss.cu, fused_moe_aux_loss.cu); unfused 8 and 16.
  Setup su(tiny_moe(), plan_of(1, 1, 1));
  su.framework.fused_moe_router = true;
  const MoeForwardParts fused = moe_forward_parts(su.ctx(), su.sharding());
  CHECK(fused.routing.v == doctest::Approx(1024.0 * 30.0 / kHbm).scale(0));
  CHECK(fused.routing_bwd.v == doctest::Approx(1024.0 * 29.0 / kHbm).scale(0));
  su.framework.fused_moe_router = false;
  const MoeForwardParts eager = moe_forward_parts(su.ctx(), su.sharding());
  CHECK(eager.routing.v == doctest::Approx(1024.0 * 8.0 / kHbm).scale(0));
  CHECK(eager.routing_bwd.v == doctest::Approx(1024.0 * 16.0 / kHbm).scale(0));
}

TEST_CASE("MLA: projections through the LoRA ranks, attention over qk = nope + rope and v head dims") {
  ModelDesc m = tiny_model();  // h 64, 4 heads, f 256, not gated
  MlaDesc a;
  a.q_lora_rank = 0;
  a.kv_lora_rank = 16;
  a.qk_nope_head_dim = 16;
  a.qk_rope_head_dim = 8;
  a.v_head_dim = 12;
  m.mla = a;
  const double T = 128, h = 64, H = 4, qk = 24, v = 12;
  const double proj = 2 * T * (h * H * qk + h * (16 + 8) + 16 * H * (16 + v) + H * v * h);
  const double attn = 2 * T * (T / 2) * H * (qk + v);  // causal half, QK^T over qk and PV over v
  const double mlp = 2 * T * h * 256 * 2;
  CHECK(forward_flops(m) == doctest::Approx(proj + 2 * attn + mlp));
}

TEST_CASE("sliding-window layers attend w - w^2 / 2s keys per query on average") {
  ModelDesc m = tiny_model();
  m.sliding_window = 32;
  m.full_attention_every = 2;  // layer 2 full, layer 1 sliding
  const double b_s_heads_2d = 128.0 * 4 * 2 * 16;
  const double full_keys = 64, window_keys = 32 - 32.0 * 32 / (2 * 128);
  // Forward counts attention FLOPs twice (QK^T and PV FLOPs x 2 per multiply-add are in attn x 2).
  CHECK(forward_flops(tiny_model()) - forward_flops(m) ==
        doctest::Approx(2 * 2 * b_s_heads_2d * 0.5 * (full_keys - window_keys)));
}

TEST_CASE("MoE activations: router probabilities, permuted tokens, expert fc1/act/fc2, shared expert") {
  const Setup moe(tiny_moe(), plan_of(1, 1, 1)), dense(tiny_gqa_gated(), plan_of(1, 1, 1));
  const double a = activation_bytes_per_layer(moe.model, moe.sharding(), Recompute::none, false, true);
  const double d = activation_bytes_per_layer(dense.model, dense.sharding(), Recompute::none, false, true);
  const double routed = 128 * 8 * 4 + 256 * (2 * 64 + 3 * 32) * 2 + 128 * 32 * 3 * 2;
  const double dense_mlp = 128 * 96 * 3 * 2;
  CHECK(a - d == doctest::Approx(0.5 * (routed - dense_mlp)));
}

TEST_CASE("an MoE model evaluates end to end with the ep share of the step") {
  Plan p = plan_of(1, 1, 8, 1, 1, 8);
  p.ep = 8;
  const Setup s(tiny_moe(), p);
  const Estimate e = evaluate(s.model, s.system, s.plan, s.framework);
  REQUIRE(e.problems.empty());
  CHECK(e.time.exposed_comm[static_cast<int>(CommKind::ep)].v > 0);
  CHECK(e.model_flops_per_token > 0);
  // The MoE layers' share of compute: every layer's share, for every micro-batch (1 here, on 2 layers).
  const LayerCost c = layer_cost(s.ctx(), s.sharding());
  CHECK(e.time.moe.v == doctest::Approx(((c.forward.moe + c.backward.moe) * 2.0).v).scale(0));
  CHECK(e.time.moe < e.time.compute);
}

TEST_CASE("the MoE share of a layer: router, shared and routed experts of the MoE layers, none for dense models") {
  // Compute only (HBM unbounded, no kernel overhead): the MoE layer's GEMMs at the peak. T 128, h 64: shared
  // expert 2 T h x 32 x 3 = 1,572,864 FLOPs, router 2 T h x 8 = 131,072, experts over 2T pairs 3,145,728; the MoE
  // layer is one of two. Backward runs twice the forward's GEMM FLOPs.
  Setup su(tiny_moe(), plan_of(1, 1, 1));
  su.system.gpu.hbm_bw = BytesPerSec(1e30);
  const LayerCost c = layer_cost(su.ctx(), su.sharding());
  const double moe_flops = 1572864.0 + 131072.0 + 3145728.0;
  // Plus the dropless dispatcher's wait for the token counts (moe_host.h), on the MoE half of the layers.
  const double wait = kEagerOpHostSeconds * kKernelsAfterTokenSync;
  CHECK(c.forward.moe.v == doctest::Approx(0.5 * moe_flops / kPeak + 0.5 * wait).scale(0));
  CHECK(c.backward.moe.v == doctest::Approx(0.5 * 2 * moe_flops / kPeak).scale(0));
  const Setup dense(tiny_gqa_gated(), plan_of(1, 1, 1));
  CHECK(layer_cost(dense.ctx(), dense.sharding()).forward.moe.v == 0);
}

TEST_CASE("moe_forward_parts: the routed experts' forward by part, summing to the layer's MoE time") {
  // tiny_moe without shared experts or dense layers, one GPU, T 128: 256 token-expert pairs over 8 experts, 32 rows
  // each (h 64, expert ffn 32, gated). The synthetic GPU runs every kernel at 1000 GB/s or 100 TFLOP/s, so each
  // small GEMM is memory bound: bytes = (m k + k n) 2 + m n 2 per expert.
  ModelDesc m = tiny_moe();
  m.moe->shared_experts = 0;
  m.moe->dense_layers = 0;
  const Setup s(m, plan_of(1, 1, 1));
  const MoeForwardParts q = moe_forward_parts(s.ctx(), s.sharding());
  const double ns = 1e-9;
  CHECK(q.router_gemm.v == doctest::Approx(19.456 * ns).scale(0));  // 128 x 8 x 64: (128*64 + 64*8) 2 + 128*8*2 bytes
  CHECK(q.fc1.v == doctest::Approx(131.072 * ns).scale(0));         // 8 x (32*64 + 64*64 + 32*64) x 2 bytes
  CHECK(q.fc2.v == doctest::Approx(81.92 * ns).scale(0));           // 8 x (32*32 + 32*64 + 32*64) x 2 bytes
  CHECK(q.routing.v == doctest::Approx(8.192 * ns).scale(0));       // fp32 logits 128 x 8, read and written
  // Unfused permute and un-permute (2 x 256 rows of 64 bf16 each, twice), then the local-expert sort and its
  // inverse (256 rows read and written, twice): 131.072 + 131.072 ns.
  CHECK(q.permutation.v == doctest::Approx(262.144 * ns).scale(0));
  CHECK(q.activation.v == doctest::Approx(49.152 * ns).scale(0));  // fused SwiGLU: 3 x 256 x 32 bf16 elements
  // Dropless routing waits for the token counts: 3 eager ops at the unmeasured GPU's 10 us (moe_host.h).
  CHECK(q.host.v == doctest::Approx(30e-6).scale(0));
  CHECK(q.kernels_fwd.v == 0);  // the synthetic GPU's kernel overhead is 0
  const Seconds sum = q.router_gemm + q.routing + q.permutation + q.fc1 + q.fc2 + q.activation + q.kernels_fwd + q.host;
  CHECK(layer_cost(s.ctx(), s.sharding()).forward.moe.v == doctest::Approx(sum.v).scale(0));
  const Setup dense(tiny_gqa_gated(), plan_of(1, 1, 1));
  CHECK(moe_forward_parts(dense.ctx(), dense.sharding()).fc1.v == 0);
}

TEST_CASE("TE GroupedLinear's per-expert GEMMs each cost one GEMM of the expert's shape, kernel time included") {
  // tiny_moe on one GPU: 8 local experts of 32 rows each (256 pairs, h 64, gated fc1 of width 64). Transformer
  // Engine v2.7 runs one cuBLAS GEMM per expert (nvte_multi_stream_cublas_gemm), so the forward fc1 is 8 GEMMs of
  // 32 x 64 x 64, each paying the 4 us kernel overhead the GEMM table was inverted with; one grouped kernel pays it
  // once. Compute bound (HBM unlimited).
  Setup su(tiny_moe(), plan_of(1, 1, 1));
  su.system.gpu.hbm_bw = BytesPerSec(1e30);
  su.system.gpu.eff.kernel_overhead = Seconds(4e-6);
  su.framework.moe_gemm_per_expert = true;
  const MoeForwardParts per_expert = moe_forward_parts(su.ctx(), su.sharding());
  CHECK(per_expert.fc1.v == doctest::Approx(8.0 * gemm_time(su.system.gpu, Dtype::bf16, 32, 64, 64).v).scale(0));
  CHECK(per_expert.fc1.v == doctest::Approx(8.0 * (4e-6 + 2.0 * 32 * 64 * 64 / kPeak)).epsilon(1e-3));
  su.framework.moe_gemm_per_expert = false;
  const MoeForwardParts grouped = moe_forward_parts(su.ctx(), su.sharding());
  CHECK(grouped.fc1.v == doctest::Approx(4e-6 + 8.0 * 2.0 * 32 * 64 * 64 / kPeak).epsilon(1e-3));
  CHECK(per_expert.fc2.v - grouped.fc2.v == doctest::Approx(7.0 * 4e-6).epsilon(1e-3));
}

TEST_CASE("the MoE router's GEMM stays in 16 bits under an fp8 recipe; the experts' GEMMs run in fp8") {
  // Compute bound (HBM unlimited). T 128, 8 experts, h 64: router 2 x 128 x 8 x 64 = 131,072 FLOPs at the bf16
  // peak (100 TFLOP/s), not the fp8 one (200); fc1 over 256 pairs: 2 x 256 x 64 x 64 = 2,097,152 FLOPs at 200.
  Setup su(tiny_moe(), plan_of(1, 1, 1));
  su.system.gpu.hbm_bw = BytesPerSec(1e30);
  su.system.gpu.peak[static_cast<int>(Dtype::fp8)] = FlopsPerSec(2.0 * kPeak);
  su.plan.precision = Dtype::fp8;
  const MoeForwardParts fp8 = moe_forward_parts(su.ctx(), su.sharding());
  CHECK(fp8.router_gemm.v == doctest::Approx(131072.0 / kPeak).scale(0));
  CHECK(fp8.fc1.v == doctest::Approx(2097152.0 / (2.0 * kPeak)).scale(0));
  su.plan.precision = Dtype::bf16;
  const MoeForwardParts bf16 = moe_forward_parts(su.ctx(), su.sharding());
  CHECK(bf16.router_gemm.v == doctest::Approx(fp8.router_gemm.v).scale(0));
  CHECK(bf16.fc1.v == doctest::Approx(2.0 * fp8.fc1.v).scale(0));
}

}
