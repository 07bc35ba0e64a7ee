#include "modeler/system.h"

#include <cmath>
#include <string>

#include "modeler/problems.h"

namespace shardplan {

void set_power_limit(Gpu* gpu, double watts) {
  if (gpu->tdp_w <= 0)
    throw ConfigError("power limit " + num(watts) + " W: the profile of " + gpu->name +
                      " states no tdp_w");
  if (!(watts > 0 && watts <= gpu->tdp_w))  // also nan; printed as %g, never cast to int
    throw ConfigError("power limit " + num(watts) + " W is outside (0, " + num(gpu->tdp_w) + "] W, the TDP of " +
                      gpu->name);
  gpu->clock_scale = std::cbrt(watts / gpu->tdp_w);
}

namespace {
void scale_curve(Curve* c, double k) {
  for (double& y : c->y) y *= k;
}
}  // namespace

void scale_gemm_efficiency(Gpu* gpu, Dtype dtype, double k) {
  SHARDPLAN_CHECK(k > 0);
  const size_t d = static_cast<size_t>(dtype), bf16 = static_cast<size_t>(Dtype::bf16);
  ComputeEfficiency& e = gpu->eff;
  if (d != bf16 && e.gemm[d].empty() && e.gemm_grid[d].empty()) {  // the bf16 fallback (gemm_model.cc)
    e.gemm[d] = e.gemm[bf16];
    e.gemm_grid[d] = e.gemm_grid[bf16];
  }
  scale_curve(&e.gemm[d], k);
  for (double& v : e.gemm_grid[d].values) v *= k;
  // Block-scaled fp8 GEMMs are fp8 GEMMs: a scale fitted to the plan's fp8 steps applies to their table too.
  if (dtype == Dtype::fp8)
    for (double& v : e.gemm_grid_fp8_block.values) v *= k;
}

void scale_attention_efficiency(Gpu* gpu, double k) {
  SHARDPLAN_CHECK(k > 0);
  for (int i = 0; i < kNumAttentionKernels; ++i) {
    scale_curve(&gpu->eff.attention_fwd[static_cast<size_t>(i)], k);
    scale_curve(&gpu->eff.attention_bwd[static_cast<size_t>(i)], k);
  }
}

void scale_memory_efficiency(Gpu* gpu, double k) {
  SHARDPLAN_CHECK(k > 0);
  scale_curve(&gpu->eff.memory, k);
}

void scale_busbw(Tier* tier, double k) {
  SHARDPLAN_CHECK(k > 0);
  scale_curve(&tier->busbw_eff, k);
  scale_curve(&tier->p2p_eff, k);
  for (Curve& c : tier->busbw_eff_by) scale_curve(&c, k);
}

void scale_alltoall_busbw(Tier* tier, double k) {
  SHARDPLAN_CHECK(k > 0);
  Curve& own = tier->busbw_eff_by[static_cast<int>(Collective::all_to_all)];
  if (own.empty()) own = tier->busbw_eff;  // the fallback collectives.cc uses, made the tier's own first
  scale_curve(&own, k);
}

int System::tier_for_group(int size, int stride) const {
  SHARDPLAN_CHECK(!tiers.empty());
  // A group of `size` ranks at `stride` spans (size-1)*stride+1 consecutive ranks; with Megatron's contiguous
  // rank order it stays inside a domain when that span fits and the domain boundaries align with the span.
  const long long span = static_cast<long long>(size - 1) * stride + 1;
  for (size_t i = 0; i + 1 < tiers.size(); ++i)
    if (tiers[i].domain_gpus > 0 && span <= tiers[i].domain_gpus) return static_cast<int>(i);
  return static_cast<int>(tiers.size() - 1);
}

}  // namespace shardplan
