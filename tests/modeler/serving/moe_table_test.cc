#include "modeler/serving/moe_table.h"

#include <doctest/doctest.h>

using namespace shardplan;
using namespace shardplan::serving;

namespace {
Gpu named(const char* name, double hbm_gbps, bool fp4) {
  Gpu g;
  g.name = name;
  g.hbm_bw = GBps(hbm_gbps);
  g.peak[static_cast<int>(Dtype::bf16)] = TFlops(1000);
  g.peak[static_cast<int>(Dtype::fp8)] = TFlops(2000);
  if (fp4) g.peak[static_cast<int>(Dtype::fp4)] = TFlops(4000);
  return g;
}
}  // namespace

TEST_CASE("MoE layer table: measured GPUs and formats, rising with bytes, near the HBM rate at the top") {
  const Gpu h200 = named("h200-sxm-141gb", 4800, false);
  const CurvesByRows* fp8b = moe_layer_rates(h200, WeightFormat::fp8_block);
  REQUIRE(fp8b != nullptr);
  // One curve per measured count of rows per touched expert, ascending.
  REQUIRE(fp8b->size() == 5);
  CHECK(fp8b->front().first == 1);
  CHECK(fp8b->back().first == 16);
  for (const auto& [rows, c] : *fp8b) {
    // A 4 MiB layer is bound by its fixed costs (routing, permutation, two launches); 4 GiB approaches 4.8 TB/s.
    CHECK(c.at(1 << 22) < 0.4e12);
    CHECK(c.at(1 << 22) < c.at(1 << 28));
    CHECK(c.at(1ULL << 32) > 3.4e12);
    // Counting the experts EP rank 0 touches under the collectors' routing keeps every rate under the HBM one
    // (the old count read up to 16 TB/s at ep 8).
    CHECK(c.at(1ULL << 32) < 4.8e12);
  }
  // Per-tensor and block-scaled fp8 are measured separately; bf16 and fp16 share the 16-bit rows.
  CHECK(moe_layer_rates(h200, WeightFormat::fp8) != fp8b);
  CHECK(moe_layer_rates(h200, WeightFormat::fp16) == moe_layer_rates(h200, WeightFormat::bf16));
  // GGUF block formats and unmeasured GPUs have no row.
  CHECK(moe_layer_rates(h200, WeightFormat::q4_k) == nullptr);
  CHECK(moe_layer_rates(named("rtx-4090", 1008, false), WeightFormat::bf16) == nullptr);
  CHECK(!moe_layer_bytes_per_s(named("rtx-4090", 1008, false), WeightFormat::bf16, 1, 1e9));
}

TEST_CASE("MoE layer table: the rate at a layer's rows per touched expert, interpolated between measured rows") {
  const Gpu h200 = named("h200-sxm-141gb", 4800, false);
  const CurvesByRows& c = *moe_layer_rates(h200, WeightFormat::fp8_block);
  const double b = 1ULL << 31;
  const auto at = [&](double rows) { return *moe_layer_bytes_per_s(h200, WeightFormat::fp8_block, rows, b); };
  // At a measured count its own curve: 1 row per touched expert streams faster than 16 at 2 GiB (measured
  // medians 3.91 and 3.41 TB/s, calibrate/serving_tables.py).
  CHECK(at(1) == doctest::Approx(c.front().second.at(b)));
  CHECK(at(16) == doctest::Approx(c.back().second.at(b)));
  CHECK(at(1) > at(16) * 1.1);
  // Below 1 and above 16 the end curves; between 8 and 16 the time per byte is linear in rows.
  CHECK(at(0.5) == doctest::Approx(at(1)));
  CHECK(at(40) == doctest::Approx(at(16)));
  const double r8 = at(8), r16 = at(16);
  CHECK(1.0 / at(12) == doctest::Approx(0.5 / r8 + 0.5 / r16));
}

TEST_CASE("MoE layer table: profiles of the same silicon share rows; MXFP4 activations follow the tensor cores") {
  CHECK(moe_layer_rates(named("h800-sxm5-80gb", 3350, false), WeightFormat::bf16) ==
        moe_layer_rates(named("h100-sxm5-80gb", 3350, false), WeightFormat::bf16));
  // Hopper runs MXFP4 experts with bf16 activations, Blackwell with MXFP8 ones: different measured kernels.
  const CurvesByRows* hopper = moe_layer_rates(named("b200", 7700, false), WeightFormat::mxfp4);
  const CurvesByRows* blackwell = moe_layer_rates(named("b200", 7700, true), WeightFormat::mxfp4);
  REQUIRE(hopper != nullptr);
  REQUIRE(blackwell != nullptr);
  CHECK(hopper != blackwell);
}

TEST_CASE("MoE layer FLOP table beyond 16 rows per expert: measured GPUs, rising with FLOPs, below the peak") {
  const Gpu h200 = named("h200-sxm-141gb", 4800, false);
  const Curve* fp8b = moe_layer_flop_rate(h200, WeightFormat::fp8_block);
  REQUIRE(fp8b != nullptr);
  // Small layers are bound by their fixed costs and weights; the largest stay well under the 1979 TFLOP/s peak
  // (the grouped GEMMs, permutation and SwiGLU timed together).
  CHECK(fp8b->at(1e9) < 0.1e15);
  CHECK(fp8b->at(1e9) < fp8b->at(1e12));
  CHECK(fp8b->at(1.76e13) < 1.0e15);
  // Its own row per format; the 96 GB H100 reads the 80 GB one; unmeasured GPUs and GGUF formats have none.
  CHECK(moe_layer_flop_rate(h200, WeightFormat::fp8) != fp8b);
  CHECK(moe_layer_flop_rate(named("h100-sxm5-96gb", 3350, false), WeightFormat::fp8_block) ==
        moe_layer_flop_rate(named("h100-sxm5-80gb", 3350, false), WeightFormat::fp8_block));
  CHECK(moe_layer_flop_rate(named("rtx-4090", 1008, false), WeightFormat::bf16) == nullptr);
  CHECK(moe_layer_flop_rate(h200, WeightFormat::q4_k) == nullptr);
}
