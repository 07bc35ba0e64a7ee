#include "modeler/model_desc.h"

#include <doctest/doctest.h>

#include "tests/modeler/test_fixtures.h"

using namespace shardplan;

namespace {
// 2 layers, h 4, f 8, 2 heads of 2, V 10, GELU MLP, untied, biases, LayerNorm, 16 learned positions.
ModelDesc tiny() {
  ModelDesc m = test::plain_model("tiny", 2, 4, 8, 2, 2, 2, 10);
  m.linear_bias = true;
  m.position = PositionKind::learned;
  m.max_position = 16;
  return m;
}

}  // namespace

TEST_CASE("tiny model parameters by hand") {
  const ModelDesc m = tiny();
  // attention 4*(4+2*4) + 4*4 = 64; MLP 2*4*8 = 64; biases (4+8)+4+8+4 = 28; two LayerNorms 2*(2*4) = 16.
  CHECK(params_per_layer(m) == 172);
  CHECK(embedding_params(m) == 10 * 4 + 16 * 4);  // token table + position table
  CHECK(lm_head_params(m) == 40);
  CHECK(non_embedding_params(m) == 2 * 172 + 8);  // + final LayerNorm
  CHECK(total_params(m) == 352 + 104 + 40);
}

TEST_CASE("tiny model variants: gated, GQA, RMSNorm, tied") {
  ModelDesc m = tiny();
  m.gated_mlp = true;
  m.kv_heads = 1;
  m.linear_bias = false;
  m.norm = NormKind::rmsnorm;
  m.tied_embeddings = true;
  m.position = PositionKind::rope;
  // attention 4*(4+2*2) + 4*4 = 48; MLP 3*4*8 = 96; two RMSNorms 2*4 = 8.
  CHECK(params_per_layer(m) == 152);
  CHECK(lm_head_params(m) == 0);
  CHECK(total_params(m) == 2 * 152 + 4 + 40);
}

TEST_CASE("tiny model FLOPs per token by hand") {
  // Per layer forward: QKV+O 2*4*(2*4+2*4) = 128, MLP 2*2*4*8 = 128, attention 2*2*s*4 = 64 at s = 4;
  // logits 2*4*10 = 80; training = 3x forward.
  CHECK(model_flops_per_token(tiny(), 4) == 3.0 * (2 * (128 + 128 + 64) + 80));
}

TEST_CASE("GPT-3 175B matches Megatron's 72*l*h^2*(1 + s/(6h) + V/(12*l*h)) per token") {
  const ModelDesc m = test::gpt3_175b();
  const double l = 96, h = 12288, s = 2048, v = 51200;
  const double megatron = 72.0 * l * h * h * (1.0 + s / (6.0 * h) + v / (12.0 * l * h));
  CHECK(model_flops_per_token(m, 2048) == doctest::Approx(megatron).epsilon(1e-12));
  CHECK(model_flops_per_token(m, 2048) == doctest::Approx(1.0764e12).epsilon(1e-4));
  // 12*l*h^2 dominates the parameter count; biases, norms, embeddings bring it to 174.6B.
  CHECK(total_params(m) == doctest::Approx(174.6e9).epsilon(1e-3));
}

TEST_CASE("Megatron num_floating_point_operations for the 24-layer h2048 V131072 model (published_runs)") {
  // mcore080_h100_weak_1.7b: 12*l*h^2*(1 + kv/a + s/h + f/h + V/(2*l*h)) = 1.1274e10 FLOP/token at s 4096.
  ModelDesc m;
  m.layers = 24;
  m.hidden = 2048;
  m.ffn_hidden = 8192;
  m.heads = m.kv_heads = 16;
  m.head_dim = 128;
  m.vocab = 131072;
  m.tied_embeddings = true;
  CHECK(model_flops_per_token(m, 4096) == doctest::Approx(1.1274e10).epsilon(1e-4));
}

TEST_CASE("tiny MoE model by hand: dense first layer, then experts") {
  ModelDesc m = tiny();
  m.moe = MoeDesc{};
  m.moe->experts = 4;
  m.moe->top_k = 2;
  m.moe->expert_ffn_hidden = 2;
  m.moe->shared_experts = 1;
  m.moe->dense_layers = 1;
  CHECK(is_moe_layer(m, 1));
  CHECK(!is_moe_layer(m, 0));
  // Layer 0 as the dense tiny model (172). Layer 1: attention 64 + biases (q+2kv+h) 16, norms 16, experts 4 x 2*4*2
  // = 64, shared expert 16, router 4*4 = 16: 192.
  CHECK(layer_params(m, 0) == 172);
  CHECK(layer_params(m, 1) == 192);
  CHECK(params_per_layer(m) == 182);
  CHECK(routed_expert_params(m) == 64);
  CHECK(total_params(m) == 172 + 192 + 8 + 104 + 40);
  CHECK(activated_params(m) == total_params(m) - 2 * 16);  // two of four experts unused per token
  // Layer 1 forward at s 4: projections 2*64, scores 2*4*(4+4) = 64, experts 2*2*4*(2*2 + 2) = 96, router 2*4*4 = 32.
  CHECK(model_flops_per_token(m, 4) == 3.0 * (320 + 320 + 80));
}

TEST_CASE("tiny MLA model by hand") {
  ModelDesc m = tiny();
  m.layers = 1;
  m.linear_bias = false;
  m.norm = NormKind::rmsnorm;
  m.tied_embeddings = true;
  m.position = PositionKind::rope;
  m.mla = MlaDesc{2, 2, 1, 1, 2};  // q_lora, kv_lora, qk_nope, qk_rope, v
  // q: 4*2 + 2*(2*(1+1)) = 16; kv: 4*(2+1) + 2*(2*(1+2)) = 24; o: 2*2*4 = 16; latent norms 2+2; MLP 2*4*8 = 64;
  // two RMSNorms 8.
  CHECK(layer_params(m, 0) == 16 + 24 + 16 + 4 + 64 + 8);
  CHECK(total_params(m) == 132 + 4 + 40);
  // Forward at s 4: projections 2*56, scores 2*4*(2*2 + 2*2) = 64, MLP 2*2*4*8 = 128, logits 80.
  CHECK(model_flops_per_token(m, 4) == 3.0 * (112 + 64 + 128 + 80));
}

TEST_CASE("sliding-window layers attend to at most the window") {
  ModelDesc m = tiny();
  m.sliding_window = 2;
  m.full_attention_every = 2;  // layer 0 slides, layer 1 is full (gpt-oss pattern)
  CHECK(is_sliding_layer(m, 0));
  CHECK(!is_sliding_layer(m, 1));
  CHECK(model_flops_per_token(m, 4) == 3.0 * ((320 - 32) + 320 + 80));  // layer 0 scores over 2 keys, not 4
  CHECK(model_flops_per_token(m, 2) == model_flops_per_token(tiny(), 2));  // window >= s: no change
  m.attention_sinks = true;
  CHECK(total_params(m) == 496 + 2 * 2);  // one sink logit per head and layer
}

TEST_CASE("QK-norm adds its scale vectors: head_dim each for q and k per head, the full widths otherwise") {
  ModelDesc m = tiny();  // heads 2, kv_heads 2, head_dim 2
  const double base = params_per_layer(m);
  m.qk_norm = QkNorm::per_head;
  CHECK(params_per_layer(m) == base + 2 * 2);  // Qwen3: q_norm and k_norm of head_dim each
  m.qk_norm = QkNorm::full;
  CHECK(params_per_layer(m) == base + 2 * 2 + 2 * 2);  // OLMo-2: heads x head_dim and kv_heads x head_dim
  CHECK(model_flops_per_token(m, 4) == model_flops_per_token(tiny(), 4));  // no GEMM work
}
