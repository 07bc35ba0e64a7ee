#include "modeler/serving/decode_gemm_table.h"

#include <doctest/doctest.h>

using namespace shardplan;
using namespace shardplan::serving;

TEST_CASE("decode GEMM table: measured GPUs and dtypes, rate rising with the weight's size") {
  const Curve* h100 = decode_gemm_rate("h100-sxm5-80gb", Dtype::bf16);
  REQUIRE(h100 != nullptr);
  // shared/data/measured_kernels/gemm.csv.gz, h100_sxm bf16, m <= 16: ~0.3 TB/s at 1 MiB (the kernel's fixed
  // cost dominates), ~2.8 TB/s at 4 GiB (near the sustained HBM rate).
  CHECK(h100->at(1 << 20) < 0.5e12);
  CHECK(h100->at(4.0 * (1 << 30)) > 2.5e12);
  CHECK(decode_gemm_rate("h100-sxm5-80gb", Dtype::fp8) != nullptr);
  CHECK(decode_gemm_rate("rtx-4090", Dtype::bf16) == nullptr);
}

TEST_CASE("small kernel latency: the measured floor of a kernel under CUDA-graph replay, per GPU") {
  // gemm.csv.gz, bf16, m = 1, n and k in {128, 256}: median 2.899 us on h100_sxm, 2.163 us on b200_sxm.
  REQUIRE(small_kernel_latency("h100-sxm5-80gb"));
  CHECK(small_kernel_latency("h100-sxm5-80gb")->v == doctest::Approx(2.899e-6).scale(0));
  CHECK(small_kernel_latency("b200")->v == doctest::Approx(2.163e-6).scale(0));
  // Between 1.5 and 3.5 us wherever measured: a kernel's fixed cost, not a bandwidth.
  for (const char* g : {"a100-sxm4-80gb", "b300", "gb200", "gb300", "h200-sxm-141gb", "l40s", "rtx-pro-6000-server"}) {
    REQUIRE(small_kernel_latency(g));
    CHECK(small_kernel_latency(g)->v > 1.5e-6);
    CHECK(small_kernel_latency(g)->v < 3.5e-6);
  }
  CHECK_FALSE(small_kernel_latency("rtx-4090"));
}
