#include "modeler/serving/formats.h"

#include <doctest/doctest.h>

#include "modeler/serving/tensors.h"
#include "tests/modeler/serving/serving_fixtures.h"

using namespace shardplan;
using namespace shardplan::serving;

TEST_CASE("bits per weight follow the block layouts") {
  CHECK(bits_per_weight(WeightFormat::q4_k) == doctest::Approx(4.5));
  CHECK(bits_per_weight(WeightFormat::q6_k) == doctest::Approx(6.5625));
  CHECK(bits_per_weight(WeightFormat::q8_0) == doctest::Approx(8.5));
  CHECK(bits_per_weight(WeightFormat::nvfp4) == doctest::Approx(4.5));
  CHECK(bits_per_weight(WeightFormat::mxfp4) == doctest::Approx(4.25));
  CHECK(bits_per_weight(WeightFormat::bf16) == 16.0);
}

TEST_CASE("format names round-trip and unknown names are refused") {
  for (const char* n : {"bf16", "fp8_block", "nvfp4", "int4_wo", "q4_k_m", "q3_k_m", "q2_k"}) {
    const auto f = parse_weight_format(n);
    REQUIRE(f);
    CHECK(weight_format_name(*f) == n);
  }
  CHECK_FALSE(parse_weight_format("q4_k_x"));
  CHECK_FALSE(parse_kv_bytes("int3"));
  CHECK(*parse_kv_bytes("fp8") == 1.0);
}

TEST_CASE("q4_k_m puts the output and the use_more_bits layers' attn_v and ffn_down in q6_k") {
  CHECK(gguf_tensor_format(WeightFormat::q4_k_m, TensorRole::output, 32, 32) == WeightFormat::q6_k);
  CHECK(gguf_tensor_format(WeightFormat::q4_k_m, TensorRole::attn_v, 0, 32) == WeightFormat::q6_k);
  CHECK(gguf_tensor_format(WeightFormat::q4_k_m, TensorRole::attn_v, 5, 32) == WeightFormat::q4_k);
  CHECK(gguf_tensor_format(WeightFormat::q4_k_m, TensorRole::attn_q, 0, 32) == WeightFormat::q4_k);
  CHECK(gguf_tensor_format(WeightFormat::q4_k_m, TensorRole::ffn_down, 31, 32) == WeightFormat::q6_k);
}

TEST_CASE("Llama-3-8B Q4_K_M weighs what llama-bench reports (4.92e9 bytes) within 3%") {
  // Source: the serving-runs row llamacpp_xd_l3_rtx4090_8b_q4km (XiongjieDai README, llama-bench size column).
  Precision p;
  p.weights = p.moe_weights = WeightFormat::q4_k_m;
  const Bytes b = total_bytes(model_tensors(test::llama3_8b(), p));
  CHECK(b.v == doctest::Approx(4.92e9).epsilon(0.03));
  p.weights = p.moe_weights = WeightFormat::fp16;
  CHECK(total_bytes(model_tensors(test::llama3_8b(), p)).v == doctest::Approx(16.06e9).epsilon(0.01));
}

TEST_CASE("fp8 and fp4 run on their tensor cores only where the GPU has them") {
  System s = test::round_system();
  CHECK(math_dtype(WeightFormat::fp8, s.gpu) == Dtype::fp8);
  CHECK(math_dtype(WeightFormat::nvfp4, s.gpu) == Dtype::bf16);  // no fp4 peak: dequantised
  s.gpu.peak[static_cast<int>(Dtype::fp4)] = TFlops(4000);
  CHECK(math_dtype(WeightFormat::nvfp4, s.gpu) == Dtype::fp4);
  CHECK(math_dtype(WeightFormat::q4_k_m, s.gpu) == Dtype::bf16);
}

TEST_CASE("a stated fp8 on a block-scaled fp8 checkpoint runs fp8_block kernels; other formats stand") {
  CHECK(checkpoint_kernel_format(WeightFormat::fp8, 128) == WeightFormat::fp8_block);
  CHECK(checkpoint_kernel_format(WeightFormat::fp8, 0) == WeightFormat::fp8);  // per-tensor checkpoint
  for (WeightFormat f : {WeightFormat::fp8_block, WeightFormat::nvfp4, WeightFormat::bf16, WeightFormat::mxfp8})
    CHECK(checkpoint_kernel_format(f, 128) == f);

  WeightFormat w = WeightFormat::fp8, e = WeightFormat::fp8_block;  // SGLang DeepSeek-V3 rows: fp8 / fp8_block
  CHECK(apply_checkpoint_format(&w, &e, 128) == "fp8 on a 128x128 block-scaled checkpoint: fp8_block kernels");
  CHECK(w == WeightFormat::fp8_block);
  CHECK(e == WeightFormat::fp8_block);
  w = e = WeightFormat::nvfp4;
  CHECK(apply_checkpoint_format(&w, &e, 128).empty());
  CHECK(w == WeightFormat::nvfp4);
  w = e = WeightFormat::fp8;
  CHECK(apply_checkpoint_format(&w, &e, 0).empty());
  CHECK(e == WeightFormat::fp8);
}

TEST_CASE("GGUF block formats and their conversions per weight in Metal's mul_mv kernels") {
  for (WeightFormat f :
       {WeightFormat::q8_0, WeightFormat::q6_k, WeightFormat::q5_k, WeightFormat::q4_k, WeightFormat::q3_k,
        WeightFormat::q2_k, WeightFormat::q4_0, WeightFormat::q4_k_m, WeightFormat::q5_k_m, WeightFormat::q3_k_m}) {
    CAPTURE(weight_format_name(f));
    CHECK(is_gguf_block_format(f));
    CHECK(metal_mul_mv_converts_per_weight(f) == 1.0);
  }
  for (WeightFormat f : {WeightFormat::bf16, WeightFormat::fp16, WeightFormat::f32, WeightFormat::fp8,
                         WeightFormat::int4_wo, WeightFormat::mxfp4}) {
    CAPTURE(weight_format_name(f));
    CHECK_FALSE(is_gguf_block_format(f));
    CHECK(metal_mul_mv_converts_per_weight(f) == 0.0);
  }
}
