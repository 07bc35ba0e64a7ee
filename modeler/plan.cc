#include "modeler/plan.h"

namespace shardplan {

const char* to_string(Recompute r) {
  switch (r) {
    case Recompute::none: return "none";
    case Recompute::selective: return "selective";
    case Recompute::full: return "full";
  }
  return "?";
}

const char* to_string(CpKind k) { return k == CpKind::ring ? "ring" : "allgather"; }

const char* to_string(SdpMask m) { return m == SdpMask::forward ? "forward" : "backward"; }

const char* to_string(SdpGranularity g) { return g == SdpGranularity::block ? "block" : "neuron"; }

const char* to_string(Dtype d) { return kDtypeNames[static_cast<int>(d)]; }

namespace {
constexpr const char* kFp8RecipeNames[] = {"delayed", "tensorwise", "blockwise", "mxfp8", "nvfp4"};
}  // namespace

const char* to_string(Fp8Recipe r) { return kFp8RecipeNames[static_cast<int>(r)]; }
const char* to_string(OffloadDevice d) { return d == OffloadDevice::nvme ? "nvme" : "cpu"; }

std::optional<Fp8Recipe> parse_fp8_recipe(const std::string& text) {
  for (int i = 0; i < 5; ++i)
    if (text == kFp8RecipeNames[i]) return static_cast<Fp8Recipe>(i);
  return std::nullopt;
}

std::string precision_name(const Plan& p) {
  if (p.precision == Dtype::fp4) return "nvfp4";
  if (p.precision != Dtype::fp8) return to_string(p.precision);
  if (!p.fp8_recipe) return "fp8";
  if (*p.fp8_recipe == Fp8Recipe::mxfp8) return "mxfp8";
  return std::string("fp8-") + to_string(*p.fp8_recipe);
}

std::string recompute_modules_string(unsigned modules) {
  std::string out;
  for (const RecomputeModuleName& m : kRecomputeModuleNames)
    if (modules & m.bit) out += (out.empty() ? "" : "+") + std::string(m.name);
  return out;
}

std::string plan_limit_violation(const Plan& p) {
  // Upper bounds only: values below 1 are the strategies' to reject, with their own messages.
  const std::pair<const char*, int> degrees[] = {{"tp", p.tp}, {"tsp", p.tsp}, {"pp", p.pp}, {"vpp", p.vpp},
                                                 {"cp", p.cp}, {"dp", p.dp},   {"ep", p.ep}, {"etp", p.etp}};
  bool all_positive = true;
  for (const auto& [name, v] : degrees) {
    if (v > kMaxPlanGpus) return std::string(name) + " (" + std::to_string(v) + ") must be at most 2^24";
    all_positive = all_positive && v >= 1;
  }
  // Each factor is at most 2^24, so the partial products stay below 2^63 when checked as they grow.
  const long long mp = 1LL * p.tp * p.tsp * p.pp;
  if (all_positive && (mp > kMaxPlanGpus || mp * p.cp > kMaxPlanGpus || mp * p.cp * p.dp > kMaxPlanGpus))
    return "tp x tsp x pp x cp x dp (" + std::to_string(p.tp) + " x " + std::to_string(p.tsp) + " x " +
           std::to_string(p.pp) + " x " + std::to_string(p.cp) + " x " + std::to_string(p.dp) +
           ") must be at most 2^24 GPUs";
  if (all_positive && 1LL * p.pp * p.vpp > kMaxPlanGpus)
    return "pp x vpp (" + std::to_string(p.pp) + " x " + std::to_string(p.vpp) + ") must be at most 2^24";
  if (p.micro_batch > kMaxBatch || p.global_batch > kMaxBatch)
    return "micro_batch (" + std::to_string(p.micro_batch) + ") and global_batch (" + std::to_string(p.global_batch) +
           ") must be at most 2^24 sequences";
  if (p.seq_len > kMaxSeqLen) return "seq_len (" + std::to_string(p.seq_len) + ") must be at most 2^26 tokens";
  return "";
}

std::optional<unsigned> parse_recompute_modules(const std::string& text, std::string* unknown) {
  unsigned modules = 0;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t end = text.find_first_of("+,", start);
    const std::string name = text.substr(start, end == std::string::npos ? std::string::npos : end - start);
    if (!name.empty()) {
      unsigned bit = 0;
      for (const RecomputeModuleName& m : kRecomputeModuleNames)
        if (name == m.name) bit = m.bit;
      if (bit == 0) {
        if (unknown) *unknown = name;
        return std::nullopt;
      }
      modules |= bit;
    }
    if (end == std::string::npos) break;
    start = end + 1;
  }
  if (modules == 0) {
    if (unknown) *unknown = "";
    return std::nullopt;
  }
  return modules;
}

}  // namespace shardplan
