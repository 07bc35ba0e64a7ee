#include "modeler/serving/prefill_gemm_table.h"

#include <doctest/doctest.h>

using namespace shardplan::serving;

TEST_CASE("prefill GEMM table: measured GPUs and formats, rising with FLOPs, below the dense peak") {
  const shardplan::Curve* fp8 = prefill_gemm_rate("h200-sxm-141gb", WeightFormat::fp8);
  const shardplan::Curve* block = prefill_gemm_rate("h200-sxm-141gb", WeightFormat::fp8_block);
  const shardplan::Curve* bf16 = prefill_gemm_rate("h200-sxm-141gb", WeightFormat::bf16);
  REQUIRE(fp8 != nullptr);
  REQUIRE(block != nullptr);
  REQUIRE(bf16 != nullptr);
  // Small GEMMs are bound by the kernel's fixed cost; large ones approach but stay under H200's dense peaks
  // (989 TFLOP/s bf16, 1979 fp8).
  CHECK(fp8->at(1e9) < fp8->at(1e12));
  CHECK(fp8->at(1e12) > 1.0e15);
  CHECK(fp8->at(1e12) < 1.979e15);
  CHECK(bf16->at(1e12) < 0.989e15);
  CHECK(bf16->at(1e12) < fp8->at(1e12));
  // Block scaling costs a little on Hopper at mid sizes (2^36 FLOPs: the Llama-8B QKV GEMM at 8k tokens).
  CHECK(block->at(6.9e10) < fp8->at(6.9e10));
  // fp16 reads the bf16 row; formats and GPUs without measurements have none.
  CHECK(prefill_gemm_rate("h200-sxm-141gb", WeightFormat::fp16) == bf16);
  CHECK(prefill_gemm_rate("h200-sxm-141gb", WeightFormat::nvfp4) == nullptr);
  CHECK(prefill_gemm_rate("rtx-4090", WeightFormat::bf16) == nullptr);
}
