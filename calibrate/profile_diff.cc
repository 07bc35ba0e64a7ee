#include "calibrate/profile_diff.h"

#include <algorithm>
#include <cstdio>

#include "modeler/gemm_model.h"

namespace shardplan::calibrate {
namespace {

std::string sci(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.3g", v);
  return buf;
}

void diff_curve(const std::string& table, const std::string& unit, const Curve& a, const Curve& b,
                std::vector<DiffRow>& out) {
  if (a.empty() && b.empty()) return;
  std::vector<double> xs = a.x;
  xs.insert(xs.end(), b.x.begin(), b.x.end());
  std::sort(xs.begin(), xs.end());
  xs.erase(std::unique(xs.begin(), xs.end()), xs.end());
  for (const double x : xs)
    out.push_back({table, "eff @ " + sci(x) + " " + unit, a.empty() ? 1.0 : a.at(x), b.empty() ? 1.0 : b.at(x)});
}

}  // namespace

std::vector<DiffRow> diff_systems(const System& a, const System& b) {
  std::vector<DiffRow> out;
  const ComputeEfficiency& ea = a.gpu.eff;
  const ComputeEfficiency& eb = b.gpu.eff;
  out.push_back({"gpu", "kernel_overhead_us", ea.kernel_overhead.v * 1e6, eb.kernel_overhead.v * 1e6});
  for (int d = 0; d < kNumDtypes; ++d)
    diff_curve(std::string("gemm ") + kDtypeNames[d], "FLOPs", ea.gemm[d], eb.gemm[d], out);
  diff_curve("gemm_k", "k", ea.gemm_k, eb.gemm_k, out);
  const auto& kernels = kAttentionKernelNames;
  for (int k = 0; k < kNumAttentionKernels; ++k) {
    diff_curve(std::string("attention ") + kernels[k] + " fwd", "FLOPs", ea.attention_fwd[k], eb.attention_fwd[k], out);
    diff_curve(std::string("attention ") + kernels[k] + " bwd", "FLOPs", ea.attention_bwd[k], eb.attention_bwd[k], out);
  }
  diff_curve("memory", "bytes", ea.memory, eb.memory, out);
  for (const Tier& ta : a.tiers) {
    const auto it = std::find_if(b.tiers.begin(), b.tiers.end(), [&](const Tier& t) { return t.name == ta.name; });
    if (it == b.tiers.end()) continue;
    const std::string table = "tier " + ta.name;
    out.push_back({table, "bw_per_gpu_gbps", ta.bw_per_gpu.v / 1e9, it->bw_per_gpu.v / 1e9});
    out.push_back({table, "latency_us", ta.latency.v * 1e6, it->latency.v * 1e6});
    diff_curve(table + " busbw_eff", "bytes", ta.busbw_eff, it->busbw_eff, out);
    diff_curve(table + " p2p_eff", "bytes", ta.p2p_eff, it->p2p_eff, out);
  }
  return out;
}

}  // namespace shardplan::calibrate
