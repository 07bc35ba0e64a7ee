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

std::optional<Fp8Recipe> parse_fp8_recipe(const std::string& text) {
  for (int i = 0; i < 5; ++i)
    if (text == kFp8RecipeNames[i]) return static_cast<Fp8Recipe>(i);
  return std::nullopt;
}

std::string recompute_modules_string(unsigned modules) {
  std::string out;
  for (const RecomputeModuleName& m : kRecomputeModuleNames)
    if (modules & m.bit) out += (out.empty() ? "" : "+") + std::string(m.name);
  return out;
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
