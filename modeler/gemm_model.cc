#include "modeler/gemm_model.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "modeler/problems.h"

namespace shardplan {

GemmTile gemm_tile(const Gpu& gpu) {
  // The Gpu profile has no architecture field; the profile names of Hopper and later parts (h100, h200, h800,
  // gh200, b200, gb200, b300, gb300) start with one of these prefixes.
  static const char* const kHopperPlus[] = {"h1", "h2", "h8", "gh", "b1", "b2", "b3", "gb"};
  for (const char* p : kHopperPlus)
    if (gpu.name.rfind(p, 0) == 0) return {128, 256};
  return {128, 128};
}

double wave_efficiency(const Gpu& gpu, double m, double n) {
  if (gpu.sm_count <= 0 || m <= 0 || n <= 0) return 1.0;
  const GemmTile t = gemm_tile(gpu);
  const double tiles = std::ceil(m / t.m) * std::ceil(n / t.n);
  const double waves = std::ceil(tiles / gpu.sm_count);
  return tiles / (waves * gpu.sm_count);
}

double dtype_bytes(Dtype dtype) {
  switch (dtype) {
    case Dtype::fp32:
    case Dtype::tf32: return 4.0;
    case Dtype::bf16:
    case Dtype::fp16: return 2.0;
    case Dtype::fp8: return 1.0;
    case Dtype::fp4: return 0.5;
  }
  return 2.0;
}

Bytes gemm_bytes(Dtype dtype, double m, double n, double k, GemmOutput out) {
  const double in = dtype_bytes(dtype);
  const double c = out.bytes_per_elem > 0 ? out.bytes_per_elem : std::max(in, 2.0);
  return Bytes((m * k + k * n) * in + m * n * c * (1.0 + out.c_reads));
}

namespace {
const Curve& gemm_curve(const Gpu& gpu, Dtype dtype) {
  const Curve& own = gpu.eff.gemm[static_cast<int>(dtype)];
  return own.empty() ? gpu.eff.gemm[static_cast<int>(Dtype::bf16)] : own;
}
}  // namespace

bool has_fp8_block_table(const Gpu& gpu) { return !gpu.eff.gemm_grid_fp8_block.empty(); }

const Grid3* gemm_grid(const Gpu& gpu, Dtype dtype, Fp8Scaling scaling) {
  if (dtype == Dtype::fp8 && scaling == Fp8Scaling::block && has_fp8_block_table(gpu))
    return &gpu.eff.gemm_grid_fp8_block;
  const Grid3& own = gpu.eff.gemm_grid[static_cast<int>(dtype)];
  if (!own.empty()) return &own;
  // A dtype with its own FLOPs table keeps it; one with neither falls back to bf16's, grid first (system.h).
  if (!gpu.eff.gemm[static_cast<int>(dtype)].empty()) return nullptr;
  const Grid3& bf16 = gpu.eff.gemm_grid[static_cast<int>(Dtype::bf16)];
  return bf16.empty() ? nullptr : &bf16;
}

double gemm_shape_efficiency(const Gpu& gpu, Dtype dtype, double m, double n, double k, Fp8Scaling scaling) {
  if (const Grid3* g = gemm_grid(gpu, dtype, scaling)) return g->at(m, n, k);
  return gemm_efficiency(gpu, dtype, 2.0 * m * n * k, k) * wave_efficiency(gpu, m, n);
}

double gemm_efficiency(const Gpu& gpu, Dtype dtype, double flops) {
  const Curve& c = gemm_curve(gpu, dtype);
  return c.empty() ? 1.0 : c.at(flops);
}

double gemm_efficiency(const Gpu& gpu, Dtype dtype, double flops, double k) {
  const double e = gemm_efficiency(gpu, dtype, flops);
  if (gpu.eff.gemm_k.empty()) return e;
  const Curve& c = gemm_curve(gpu, dtype);
  const double top = c.empty() ? 1.0 : *std::max_element(c.y.begin(), c.y.end());
  return std::min(e * gpu.eff.gemm_k.at(k), top);
}

double memory_efficiency(const Gpu& gpu, double bytes) {
  return gpu.eff.memory.empty() ? 1.0 : gpu.eff.memory.at(bytes);
}

Seconds gemm_time(const Gpu& gpu, Dtype dtype, double m, double n, double k, Fp8Scaling scaling, GemmOutput out) {
  const FlopsPerSec peak = gpu.sustained_peak(dtype);
  if (peak.v <= 0)
    throw ConfigError("gpu '" + gpu.name + "' states no " + kDtypeNames[static_cast<int>(dtype)] + " peak");
  const Flops flops(2.0 * m * n * k);
  const Bytes bytes = gemm_bytes(dtype, m, n, k, out);
  const Seconds compute = flops / (peak * gemm_shape_efficiency(gpu, dtype, m, n, k, scaling));
  const Seconds memory = gpu.hbm_bw.v > 0 ? bytes / (gpu.hbm_bw * memory_efficiency(gpu, bytes.v)) : Seconds(0);
  return gpu.eff.kernel_overhead + std::max(compute, memory);
}

}  // namespace shardplan
