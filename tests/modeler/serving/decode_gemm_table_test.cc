#include "modeler/serving/decode_gemm_table.h"

#include <doctest/doctest.h>

#include <string>

using namespace shardplan;
using namespace shardplan::serving;

TEST_CASE("decode GEMM table: every measured GPU has a bf16 row, H100 variants share the H100's") {
  for (const std::string gpu : {"a100-sxm4-80gb", "h100-sxm5-80gb", "h200-sxm-141gb", "b200", "gb200", "b300",
                                "gb300", "l40s", "rtx-pro-6000-server", "a100-sxm4-40gb", "h100-sxm5-96gb",
                                "h800-sxm5-80gb"})
    CHECK_MESSAGE(decode_gemm_rate(gpu, shardplan::Dtype::bf16) != nullptr, gpu);
  // Same silicon and HBM: the copies carry the measured H100 values.
  CHECK(decode_gemm_rate("h800-sxm5-80gb", shardplan::Dtype::bf16)->at(1 << 28) ==
        decode_gemm_rate("h100-sxm5-80gb", shardplan::Dtype::bf16)->at(1 << 28));
}

TEST_CASE("decode GEMM table: the rate rises with the weight size and levels off below the HBM peak") {
  const shardplan::Curve* h200 = decode_gemm_rate("h200-sxm-141gb", shardplan::Dtype::bf16);
  REQUIRE(h200 != nullptr);
  // 1 MiB of weights is bound by the kernel's fixed cost (a few us): far below H200's 4.8 TB/s.
  CHECK(h200->at(1 << 20) < 0.5e12);
  double prev = 0;
  for (int e = 20; e <= 30; ++e) {  // monotone up to 1 GiB (the measured bins)
    CHECK_MESSAGE(h200->at(double(1ULL << e)) > prev, "2^", e);
    prev = h200->at(double(1ULL << e));
  }
  // 4 GiB of weights stream at 0.8-1.0 of the 4.8 TB/s HBM3e peak (NVIDIA H200 datasheet).
  CHECK(h200->at(double(1ULL << 32)) > 0.8 * 4.8e12);
  CHECK(h200->at(double(1ULL << 32)) < 4.8e12);
  // Beyond the measured range the curve holds its last value (clamp), it does not extrapolate past HBM.
  CHECK(h200->at(double(1ULL << 36)) == doctest::Approx(h200->at(double(1ULL << 32))));
  // B200: 8 TB/s HBM3e (NVIDIA DGX B200 datasheet); the large bins stay below it.
  const shardplan::Curve* b200 = decode_gemm_rate("b200", shardplan::Dtype::bf16);
  REQUIRE(b200 != nullptr);
  CHECK(b200->at(double(1ULL << 32)) > 5.0e12);
  CHECK(b200->at(double(1ULL << 32)) < 8.0e12);
}

TEST_CASE("decode GEMM table: fp8 has its own row, A100 has none, unknown GPUs none") {
  const shardplan::Curve* bf16 = decode_gemm_rate("h100-sxm5-80gb", shardplan::Dtype::bf16);
  const shardplan::Curve* fp8 = decode_gemm_rate("h100-sxm5-80gb", shardplan::Dtype::fp8);
  REQUIRE(bf16 != nullptr);
  REQUIRE(fp8 != nullptr);
  CHECK(fp8 != bf16);
  // fp8 includes the per-call activation quantisation (a second kernel): slower per byte at small sizes.
  CHECK(fp8->at(1 << 20) < bf16->at(1 << 20));
  // A100 has no fp8 tensor cores, so AIC measured no fp8 GEMM there.
  CHECK(decode_gemm_rate("a100-sxm4-80gb", shardplan::Dtype::fp8) == nullptr);
  CHECK(decode_gemm_rate("rtx-4090", shardplan::Dtype::bf16) == nullptr);
  CHECK(decode_gemm_rate("", shardplan::Dtype::bf16) == nullptr);
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

TEST_CASE("decode GEMM table: measured m between 16 and 128 have their own rows, interpolated in time per byte") {
  const double w = double(1ULL << 27);  // 128 MiB of weights
  // Up to 16 rows: the pooled m <= 16 curve (m = 1, 4, 16 measured; read per m they differ by noise, docs/serving.md).
  const shardplan::Curve* pooled = decode_gemm_rate("h100-sxm5-80gb", shardplan::Dtype::bf16);
  REQUIRE(pooled != nullptr);
  CHECK(*decode_gemm_bytes_per_s("h100-sxm5-80gb", shardplan::Dtype::bf16, 1, w) == pooled->at(w));
  CHECK(*decode_gemm_bytes_per_s("h100-sxm5-80gb", shardplan::Dtype::bf16, 16, w) == pooled->at(w));
  // decode_gemm_rows.inc, h100-sxm5-80gb bf16 at 2^27 bytes: 2643 GB/s at m <= 16, 2529 at m = 64, 2521 at 96,
  // 2530 at 112 (the measured rows, not the generic curve).
  CHECK(*decode_gemm_bytes_per_s("h100-sxm5-80gb", shardplan::Dtype::bf16, 64, w) == doctest::Approx(2529e9));
  CHECK(*decode_gemm_bytes_per_s("h100-sxm5-80gb", shardplan::Dtype::bf16, 112, w) == doctest::Approx(2530e9));
  // Between measured m (64 and 65: 2529 and 2498) the time per byte is interpolated linearly.
  const double mid = *decode_gemm_bytes_per_s("h100-sxm5-80gb", shardplan::Dtype::bf16, 64.5, w);
  CHECK(mid == doctest::Approx(1.0 / (0.5 / 2529e9 + 0.5 / 2498e9)));
  // Above the largest measured m (112) that row holds, up to the prefill table's 128.
  CHECK(*decode_gemm_bytes_per_s("h100-sxm5-80gb", shardplan::Dtype::bf16, 127, w) == doctest::Approx(2530e9));
  // The aliases carry every measured m; GPUs and dtypes without a row have none.
  CHECK(*decode_gemm_bytes_per_s("h800-sxm5-80gb", shardplan::Dtype::bf16, 80, w) ==
        *decode_gemm_bytes_per_s("h100-sxm5-80gb", shardplan::Dtype::bf16, 80, w));
  CHECK_FALSE(decode_gemm_bytes_per_s("a100-sxm4-80gb", shardplan::Dtype::fp8, 64, w));
  CHECK_FALSE(decode_gemm_bytes_per_s("rtx-4090", shardplan::Dtype::bf16, 64, w));
}

TEST_CASE("rate_between_rows: end curves outside the measured m, time per unit linear in m between them") {
  CurvesByRows c;
  c.emplace_back(1.0, shardplan::Curve::constant(4.0, "test"));
  c.emplace_back(16.0, shardplan::Curve::constant(1.0, "test"));
  CHECK(rate_between_rows(c, 0.25, 5.0) == 4.0);
  CHECK(rate_between_rows(c, 1.0, 5.0) == 4.0);
  CHECK(rate_between_rows(c, 16.0, 5.0) == 1.0);
  CHECK(rate_between_rows(c, 100.0, 5.0) == 1.0);
  // Halfway in m: 1 / rate = (1/4 + 1/1) / 2.
  CHECK(rate_between_rows(c, 8.5, 5.0) == doctest::Approx(1.0 / 0.625));
  // One curve: that curve at every m.
  c.pop_back();
  CHECK(rate_between_rows(c, 8.0, 5.0) == 4.0);
}
