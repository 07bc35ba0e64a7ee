#include "modeler/finetune.h"

#include <doctest/doctest.h>

#include "modeler/layer_cost.h"
#include "modeler/memory_model.h"
#include "test_fixtures.h"

using namespace shardplan;
using namespace shardplan::test;

namespace {
Finetune lora(int rank, unsigned targets, Peft peft = Peft::lora) {
  Finetune f;
  f.peft = peft;
  f.lora_rank = rank;
  f.lora_targets = targets;
  return f;
}
/// The synthetic framework as a plan-only launcher (no launcher rules refuse adapters).
Framework plain_framework() {
  Framework f = synthetic_framework();
  f.launcher = Launcher::none;
  return f;
}
Plan single(int seq = 128, int mbs = 1) { return plan_of(1, 1, 1, 1, mbs, mbs, seq); }
bool has(const Problems& ps, const std::string& code) { return codes(ps).find(code) != std::string::npos; }
constexpr unsigned kAll = kLoraQ | kLoraK | kLoraV | kLoraO | kLoraGate | kLoraUp | kLoraDown;
}  // namespace

TEST_SUITE("finetune") {
  TEST_CASE("LoRA parameter counts for Llama-2-7B, checked by hand") {
    const ModelDesc m = llama2_7b();
    // q and v are 4096 x 4096: r (4096 + 4096) each, 32 layers.
    CHECK(adapter_params(m, lora(16, kLoraQ | kLoraV)) == 32.0 * 2 * 16 * (4096 + 4096));  // 8,388,608
    CHECK(adapter_params(m, lora(8, kLoraQ | kLoraV)) == 4194304.0);
    // All linears at rank 8: four 4096 x 4096 projections and three 4096 x 11008 ones per layer.
    CHECK(adapter_params(m, lora(8, kAll)) == 32.0 * 8 * (4 * 8192 + 3 * (4096 + 11008)));  // 19,988,480
    // DoRA adds one magnitude per output column of each target.
    CHECK(adapter_params(m, lora(16, kLoraQ | kLoraV, Peft::dora)) == 8388608.0 + 32.0 * (4096 + 4096));
    CHECK(adapter_params(m, Finetune{}) == 0.0);
  }

  TEST_CASE("GQA targets: k and v project to kv_heads x head_dim") {
    const ModelDesc m = tiny_gqa_gated();  // h 64, 2 K/V heads of 16, gated ffn 96
    CHECK(target_shape(m, kLoraK).in == 64);
    CHECK(target_shape(m, kLoraK).out == 32);
    CHECK(target_shape(m, kLoraDown).in == 96);
    CHECK(adapter_params_per_layer(m, lora(2, kLoraK | kLoraDown)) == 2.0 * (64 + 32) + 2.0 * (96 + 64));
  }

  TEST_CASE("NF4 with double quantisation: 4.127 bits per weight (QLoRA Sec. 3)") {
    CHECK(kNf4BytesPerParam == doctest::Approx(4.127 / 8).epsilon(1e-4).scale(0));
  }

  TEST_CASE("trainable share and groups") {
    const ModelDesc m = llama2_7b();
    Plan p = single();
    CHECK(trainable_share(m, p) == 1.0);
    p.finetune = lora(8, kLoraQ | kLoraV);
    CHECK(trainable_share(m, p) == doctest::Approx(4194304.0 / total_params(m)).scale(0));
    const std::vector<ParamGroup> g = trainable_groups(m, p);
    REQUIRE(g.size() == 4);  // A and B of q and v
    CHECK(g[0].rows == 8);
    CHECK(g[0].cols == 4096);
    double sum = 0;
    for (const ParamGroup& x : g) sum += x.params();
    CHECK(sum == 4194304.0);
    // Every weight: the groups add up to the model's count.
    p.finetune = Finetune{};
    sum = 0;
    for (const ParamGroup& x : trainable_groups(m, p)) sum += x.params();
    CHECK(sum == doctest::Approx(total_params(m)));
  }

  TEST_CASE("target names parse and print") {
    std::string unknown;
    CHECK(parse_lora_targets("q,v", &unknown) == (kLoraQ | kLoraV));
    CHECK(parse_lora_targets("q+k+v+o", &unknown) == (kLoraQ | kLoraK | kLoraV | kLoraO));
    CHECK(parse_lora_targets("all", &unknown) == kAll);
    CHECK_FALSE(parse_lora_targets("q,x", &unknown).has_value());
    CHECK(unknown == "x");
    CHECK(lora_targets_string(kLoraV | kLoraQ | kLoraDown) == "q+v+down");
    CHECK(parse_peft("qlora") == Peft::qlora);
    CHECK_FALSE(parse_peft("adapter").has_value());
  }

  TEST_CASE("validation") {
    const System s = synthetic_system(1);
    const Framework plain = plain_framework();
    Plan p = single();
    p.finetune.lora_rank = 8;
    CHECK(has(validate_plan(tiny_gqa_gated(), s, p, plain), "lora_needs_peft"));
    p.finetune = lora(0, kLoraQ);
    CHECK(has(validate_plan(tiny_gqa_gated(), s, p, plain), "lora_rank_range"));
    p.finetune = lora(8, 0);
    CHECK(has(validate_plan(tiny_gqa_gated(), s, p, plain), "lora_targets_empty"));
    p.finetune = lora(40, kLoraK);  // k is 64 x 32
    CHECK(has(validate_plan(tiny_gqa_gated(), s, p, plain), "lora_rank_exceeds"));
    p.finetune = lora(8, kLoraGate);
    CHECK(has(validate_plan(tiny_model(), s, p, plain), "lora_target_missing"));  // plain GELU MLP
    p.finetune = lora(8, kLoraUp);
    CHECK(has(validate_plan(tiny_moe(), s, p, plain), "lora_target_moe"));
    p.finetune = lora(8, kLoraQ, Peft::qlora);
    p.precision = Dtype::fp8;
    CHECK(has(validate_plan(tiny_gqa_gated(), s, p, plain), "qlora_precision"));
    p.precision = Dtype::bf16;
    CHECK(validate_plan(tiny_gqa_gated(), s, p, plain).empty());
  }

  TEST_CASE("launchers: Megatron-LM has no LoRA, NeMo no QLoRA, torchtitan adapts wk and wv together") {
    const System s = synthetic_system(1);
    Plan p = single();
    p.finetune = lora(8, kLoraQ | kLoraV);
    Framework fw = plain_framework();
    fw.launcher = Launcher::megatron;
    CHECK(has(validate_plan(tiny_gqa_gated(), s, p, fw), "peft_unsupported"));
    fw.launcher = Launcher::nemo;
    CHECK_FALSE(has(validate_plan(tiny_gqa_gated(), s, p, fw), "peft_unsupported"));
    p.finetune.peft = Peft::qlora;
    CHECK(has(validate_plan(tiny_gqa_gated(), s, p, fw), "peft_unsupported"));
    p.finetune.peft = Peft::lora;
    fw.launcher = Launcher::torchtitan;
    CHECK(has(validate_plan(tiny_gqa_gated(), s, p, fw), "peft_unsupported"));  // v without k
    p.finetune.lora_targets = kLoraQ | kLoraK | kLoraV;
    CHECK_FALSE(has(validate_plan(tiny_gqa_gated(), s, p, fw), "peft_unsupported"));
    p.finetune.optimizer = Optimizer::adafactor;
    CHECK(has(validate_plan(tiny_gqa_gated(), s, p, fw), "optimizer_unsupported"));
  }

  TEST_CASE("memory: adapters get gradients and optimizer states, the base keeps only its weights") {
    Setup full(llama2_7b(), single(1024));
    full.framework = plain_framework();
    Setup ft = full;
    ft.plan.finetune = lora(8, kLoraQ | kLoraV);
    const MemoryBreakdown a = memory_breakdown(full.ctx(), full.sharding(), full.schedule());
    const MemoryBreakdown b = memory_breakdown(ft.ctx(), ft.sharding(), ft.schedule());
    const double adapters = 4194304.0;
    CHECK(b.gradients.v == doctest::Approx(adapters * 4.0));   // fp32 gradients of the adapters only
    CHECK(b.optimizer.v == doctest::Approx(adapters * 12.0));  // master + AdamW moments
    CHECK(b.weights.v == doctest::Approx((total_params(llama2_7b()) + adapters) * 2.0));
    CHECK(a.gradients.v == doctest::Approx(total_params(llama2_7b()) * 4.0));
    // QLoRA: the layers' linears at 4.127 bits (4-bit codes and their statistics), norms, embedding and head at 16
    // bits.
    ft.plan.finetune.peft = Peft::qlora;
    const MemoryBreakdown q = memory_breakdown(ft.ctx(), ft.sharding(), ft.schedule());
    const ModelDesc m = llama2_7b();
    const double layers = 32.0 * params_per_layer(m), norms = 32.0 * 2 * 4096;
    const double expected =
        (layers - norms) * kNf4BytesPerParam + (total_params(m) - layers + norms) * 2.0 + adapters * 2.0;
    CHECK(q.weights.v == doctest::Approx(expected));
  }

  TEST_CASE("saved activations: frozen linears drop the inputs kept only for their weight gradients") {
    Setup s(tiny_model(), single(128));
    s.plan.finetune = lora(4, kLoraQ | kLoraV);
    const Sharding sh = s.sharding();
    // T = 128 tokens, h 64, f 256, 2-byte inputs: the MLP's input and the down projection's input go, the two
    // rank-4 intermediates come.
    const double expected = -(128.0 * 64 * 2) - 128.0 * 256 * 2 + 2 * (128.0 * 4 * 2);
    CHECK(finetune_activation_delta(s.model, sh, s.plan, 2.0, s.framework) == expected);
    s.plan.finetune.lora_targets = kLoraQ | kLoraUp | kLoraDown;
    CHECK(finetune_activation_delta(s.model, sh, s.plan, 2.0, s.framework) == 3 * (128.0 * 4 * 2));
    s.plan.finetune = Finetune{};
    CHECK(finetune_activation_delta(s.model, sh, s.plan, 2.0, s.framework) == 0.0);
  }

  TEST_CASE("saved activations: with lora_dropout each adapter keeps its own dropped-out input and mask") {
    Setup s(tiny_model(), single(128));
    s.plan.finetune = lora(4, kLoraQ | kLoraV);
    s.plan.finetune.lora_dropout = 0.1;
    const Sharding sh = s.sharding();
    // T = 128, h 64, f 256: the shared QKV input, the MLP input and the down input are no longer kept by anyone;
    // q and v each keep a 16-bit dropped-out copy of the 64-wide input and its 1-byte mask, and their x A.
    const double expected =
        -(128.0 * 64 * 2) * 2 - 128.0 * 256 * 2 + 2 * (128.0 * 64 * 3) + 2 * (128.0 * 4 * 2);
    CHECK(finetune_activation_delta(s.model, sh, s.plan, 2.0, s.framework) == expected);
    // The down projection reads the 256-wide activation output: its copy and mask are 3 bytes x 256 per token.
    s.plan.finetune.lora_targets = kLoraDown;
    CHECK(finetune_activation_delta(s.model, sh, s.plan, 2.0, s.framework) ==
          -(128.0 * 64 * 2) * 2 - 128.0 * 256 * 2 + 128.0 * 256 * 3 + 128.0 * 4 * 2);
    s.plan.finetune.lora_dropout = 1.0;
    Problems ps;
    validate_finetune(s.ctx(), &ps);
    CHECK(has(ps, "lora_dropout_range"));
    s.plan.finetune = Finetune{};
    s.plan.finetune.lora_dropout = 0.1;
    Problems none;
    validate_finetune(s.ctx(), &none);
    CHECK(has(none, "lora_needs_peft"));
  }

  TEST_CASE("saved activations: LitGPT's fused QKV adapter keeps one dropped-out copy and zero_pad's source") {
    Setup s(tiny_gqa_gated(), single(128));  // h 64, 4 query heads and 2 K/V heads of 16, gated ffn 96
    s.framework.lora_fused_qkv = true;
    s.plan.finetune = lora(4, kLoraQ | kLoraV);
    s.plan.finetune.lora_dropout = 0.05;
    const Sharding sh = s.sharding();
    // T = 128. Nobody keeps the QKV, MLP or down inputs (2 bytes x 64, 64, 96); q and v share one 16-bit
    // dropped-out copy of the 64-wide input and its 1-byte mask; zero_pad's index_copy keeps B's output over q (64)
    // and v (32) in 16 bits; each target keeps its rank-4 intermediate.
    const double expected =
        -(128.0 * 64 * 2) * 2 - 128.0 * 96 * 2 + 128.0 * 64 * 3 + 128.0 * (64 + 32) * 2 + 2 * (128.0 * 4 * 2);
    CHECK(finetune_activation_delta(s.model, sh, s.plan, 2.0, s.framework) == expected);
    // All of q, k, v adapted: zero_pad returns B's output as it is (nothing kept for it).
    s.plan.finetune.lora_targets = kLoraQ | kLoraK | kLoraV;
    CHECK(finetune_activation_delta(s.model, sh, s.plan, 2.0, s.framework) ==
          -(128.0 * 64 * 2) * 2 - 128.0 * 96 * 2 + 128.0 * 64 * 3 + 3 * (128.0 * 4 * 2));
    // Separate modules (PEFT): q and v each keep their own copy and mask, and no zero_pad.
    s.framework.lora_fused_qkv = false;
    s.plan.finetune.lora_targets = kLoraQ | kLoraV;
    CHECK(finetune_activation_delta(s.model, sh, s.plan, 2.0, s.framework) ==
          -(128.0 * 64 * 2) * 2 - 128.0 * 96 * 2 + 2 * (128.0 * 64 * 3) + 2 * (128.0 * 4 * 2));
  }

  TEST_CASE("saved activations: bitsandbytes before 0.43.2 keeps every 4-bit linear's input") {
    Setup s(tiny_model(), single(128));  // h 64, f 256
    s.plan.finetune = lora(4, kLoraQ | kLoraV, Peft::qlora);
    const Sharding sh = s.sharding();
    // MatMul4Bit's ctx.tensors = (A, B): the QKV, MLP and down inputs all stay, so only the two rank-4
    // intermediates are added.
    s.framework.qlora_keeps_linear_inputs = true;
    CHECK(finetune_activation_delta(s.model, sh, s.plan, 2.0, s.framework) == 2 * (128.0 * 4 * 2));
    // From 0.43.2 (ctx.tensors = (None, B)) the frozen MLP and down inputs go as under LoRA.
    s.framework.qlora_keeps_linear_inputs = false;
    CHECK(finetune_activation_delta(s.model, sh, s.plan, 2.0, s.framework) ==
          -(128.0 * 64 * 2) - 128.0 * 256 * 2 + 2 * (128.0 * 4 * 2));
    // The trait is bitsandbytes': a 16-bit LoRA base is unaffected.
    s.framework.qlora_keeps_linear_inputs = true;
    s.plan.finetune.peft = Peft::lora;
    CHECK(finetune_activation_delta(s.model, sh, s.plan, 2.0, s.framework) ==
          -(128.0 * 64 * 2) - 128.0 * 256 * 2 + 2 * (128.0 * 4 * 2));
  }

  TEST_CASE("QLoRA under Lightning's bitsandbytes plugin: the LM head in NF4 and two dequantised copies") {
    const ModelDesc m = llama2_7b();
    Setup s(m, single(1024));
    s.framework = plain_framework();
    s.plan.finetune = lora(8, kLoraQ | kLoraV, Peft::qlora);
    const MemoryBreakdown before = memory_breakdown(s.ctx(), s.sharding(), s.schedule());
    s.framework.qlora_quantizes_lm_head = true;
    s.framework.qlora_dequant_copies = 2.0;
    const MemoryBreakdown after = memory_breakdown(s.ctx(), s.sharding(), s.schedule());
    // The 32000 x 4096 head goes from 2 bytes to 4.127 bits per weight.
    const double head = 32000.0 * 4096;
    CHECK(after.weights.v == doctest::Approx(before.weights.v - head * (2.0 - kNf4BytesPerParam)));
    // The largest dequantised weight is now the head (not an 11008 x 4096 MLP matrix), an fp16 and a bf16 copy.
    CHECK(finetune_buffers(s.ctx(), s.sharding()).v == head * 2 * 2);
    s.framework.qlora_quantizes_lm_head = false;
    CHECK(finetune_buffers(s.ctx(), s.sharding()).v == 11008.0 * 4096 * 2 * 2);
  }

  TEST_CASE("QLoRA: data parallelism shards the 4-bit codes; every rank keeps the quantisation statistics") {
    const ModelDesc m = llama2_7b();
    Setup one(m, single(1024));
    one.framework = plain_framework();
    one.plan.finetune = lora(8, kLoraQ | kLoraV, Peft::qlora);
    one.plan.zero = 3;
    Plan p2 = one.plan;
    p2.dp = 2;
    p2.global_batch = 2;
    Setup two(m, p2);
    two.framework = plain_framework();
    const MemoryBreakdown a = memory_breakdown(one.ctx(), one.sharding(), one.schedule());
    const MemoryBreakdown b = memory_breakdown(two.ctx(), two.sharding(), two.schedule());
    const double linears = 32.0 * params_per_layer(m) - 32.0 * 2 * 4096;
    // Halving everything but the statistics: a - b = (a - stats) / 2.
    const double stats = linears * kNf4StatsBytesPerParam;
    CHECK(kNf4StatsBytesPerParam == doctest::Approx(1.0 / 64 + 4.0 / (64 * 256)));
    CHECK(b.weights.v == doctest::Approx((a.weights.v - stats) / 2 + stats));
    CHECK(gathered_param_bytes(one.plan) == kNf4PackedBytesPerParam);
  }

  TEST_CASE("time: no weight-gradient GEMMs for frozen weights; the adapters' GEMMs are added") {
    Setup full(llama2_7b(), single(2048));
    full.framework = plain_framework();
    Setup ft = full;
    ft.plan.finetune = lora(8, kLoraQ | kLoraV);
    const LayerCost a = layer_cost(full.ctx(), full.sharding());
    const LayerCost b = layer_cost(ft.ctx(), ft.sharding());
    // Forward: the same GEMMs plus the adapters' 2 T r (in + out) per target.
    const double T = 2048, adapter_fwd = 2.0 * 2 * T * 8 * (4096 + 4096);
    CHECK(b.forward.flops == doctest::Approx(a.forward.flops + adapter_fwd));
    // Backward: the layer GEMMs' FLOPs halve (input gradients only); attention's backward is unchanged.
    CHECK(b.backward.flops < a.backward.flops);
    CHECK(b.backward.time < a.backward.time);
    CHECK(b.forward.time > a.forward.time);
    // QLoRA dequantises every base linear before its forward and its input-gradient GEMM.
    ft.plan.finetune.peft = Peft::qlora;
    const LayerCost q = layer_cost(ft.ctx(), ft.sharding());
    const double weights = 4.0 * 4096 * 4096 + 3.0 * 4096 * 11008;
    const double dequant = weights * (kNf4BytesPerParam + 2.0) / kHbm;
    CHECK(q.forward.time.v == doctest::Approx(b.forward.time.v + dequant).scale(0));
    CHECK(q.backward.time.v == doctest::Approx(b.backward.time.v + dequant).scale(0));
  }

  TEST_CASE("evaluate: gradient all-reduce carries the adapters only; MFU counts the frozen model's FLOPs") {
    Plan p = plan_of(1, 1, 8, 1, 1, 8, 1024);
    p.zero = 0;
    const Framework fw = plain_framework();
    const Estimate full = evaluate(llama2_7b(), synthetic_system(8), p, fw);
    p.finetune = lora(8, kLoraQ | kLoraV);
    const Estimate ft = evaluate(llama2_7b(), synthetic_system(8), p, fw);
    REQUIRE(ft.feasible());
    CHECK(ft.model_flops_per_token < full.model_flops_per_token);
    CHECK(ft.tokens_per_s > full.tokens_per_s);
    CHECK(ft.memory.total() < full.memory.total());
  }

  TEST_CASE("full fine-tuning of a packed 128K sequence is a plan like any other") {
    Plan p = plan_of(1, 1, 1, 8, 1, 1, 131072);
    p.recompute = Recompute::full;
    const Estimate e = evaluate(llama2_7b(), synthetic_system(8), p, plain_framework());
    for (const Problem& pr : e.problems) CHECK(pr.code.rfind("oom", 0) == 0);  // at most "does not fit"
    CHECK(e.tokens_per_s > 0);
  }
}
