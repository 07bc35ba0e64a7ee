#include "calibrate/fit_params.h"

#include <algorithm>

namespace shardplan::calibrate {

std::string ParamRef::label() const {
  std::string s = fit_parameter_spec(kind).name;
  if (kind == FitParameter::gemm_scale) s += std::string(".") + kDtypeNames[static_cast<size_t>(dtype)];
  if (kind == FitParameter::busbw_scale || kind == FitParameter::alltoall_scale) s += "." + tier;
  return s;
}

void apply_param(System* s, const ParamRef& p, double value) {
  switch (p.kind) {
    case FitParameter::gemm_scale: scale_gemm_efficiency(&s->gpu, p.dtype, value); break;
    case FitParameter::attention_scale: scale_attention_efficiency(&s->gpu, value); break;
    case FitParameter::memory_bw_scale: scale_memory_efficiency(&s->gpu, value); break;
    case FitParameter::busbw_scale:
      for (Tier& t : s->tiers)
        if (t.name == p.tier) {
          scale_busbw(&t, value);
          if (p.alltoall_apart) scale_alltoall_busbw(&t, 1.0 / value);  // all-to-all is alltoall_scale's
        }
      break;
    case FitParameter::alltoall_scale:
      for (Tier& t : s->tiers)
        if (t.name == p.tier) scale_alltoall_busbw(&t, value);
      break;
    case FitParameter::overlap_efficiency: s->overlap_efficiency = value; break;
    case FitParameter::kernel_overhead_us: s->gpu.eff.kernel_overhead = us(value); break;
    case FitParameter::host_layer_pass_ms: s->host_layer_pass = ms(value); break;
  }
}

double base_value(const System& s, const ParamRef& p) {
  switch (p.kind) {
    case FitParameter::overlap_efficiency: return s.overlap_efficiency;
    case FitParameter::kernel_overhead_us: return s.gpu.eff.kernel_overhead.v * 1e6;
    case FitParameter::host_layer_pass_ms: return s.host_layer_pass.v * 1e3;
    default: return 1.0;
  }
}

std::vector<ParamRef> candidate_params(const std::vector<RunCase>& runs) {
  std::vector<ParamRef> out;
  if (runs.empty()) return out;
  const System& s = runs.front().base;
  std::vector<Dtype> dtypes = {Dtype::bf16};
  for (const RunCase& c : runs) {
    const Dtype d = c.run->plan.plan.precision;
    if (std::find(dtypes.begin(), dtypes.end(), d) == dtypes.end() && s.gpu.peak_for(d).v > 0) dtypes.push_back(d);
  }
  // bf16 last: a dtype without tables of its own takes a copy of bf16's before either is scaled (system.h), so
  // applying the parameters in this order keeps each scale its own.
  std::rotate(dtypes.begin(), dtypes.begin() + 1, dtypes.end());
  for (Dtype d : dtypes) out.push_back({FitParameter::gemm_scale, d, ""});
  out.push_back({FitParameter::attention_scale, Dtype::bf16, ""});
  out.push_back({FitParameter::memory_bw_scale, Dtype::bf16, ""});
  std::vector<std::string> tiers;
  for (const RunCase& c : runs)
    for (const Tier& t : c.base.tiers)
      if (std::find(tiers.begin(), tiers.end(), t.name) == tiers.end()) tiers.push_back(t.name);
  // Expert-parallel MoE runs dispatch and combine their tokens with all-to-alls, whose achieved bandwidth is not
  // the ring collectives' (fit_parameters.h): each tier's all-to-all then has a scale of its own.
  bool all_to_all = false;
  for (const RunCase& c : runs) all_to_all = all_to_all || (c.run->moe && c.run->plan.plan.ep > 1);
  for (const std::string& t : tiers) out.push_back({FitParameter::busbw_scale, Dtype::bf16, t, all_to_all});
  if (all_to_all)
    for (const std::string& t : tiers) out.push_back({FitParameter::alltoall_scale, Dtype::bf16, t, false});
  out.push_back({FitParameter::overlap_efficiency, Dtype::bf16, ""});
  out.push_back({FitParameter::kernel_overhead_us, Dtype::bf16, ""});
  out.push_back({FitParameter::host_layer_pass_ms, Dtype::bf16, ""});
  return out;
}

}  // namespace shardplan::calibrate
