#include "modeler/validation_record.h"

#include <cctype>
#include <cmath>
#include <cstdio>

namespace shardplan {

std::string gpu_generation(const std::string& gpu) {
  auto starts = [&gpu](const char* p) { return gpu.rfind(p, 0) == 0; };
  if (starts("a100")) return "A100";
  if (starts("h100") || starts("h800") || starts("h200") || starts("gh200")) return "H100";
  if (starts("b200") || starts("gb200") || starts("b300") || starts("gb300")) return "Blackwell";
  if (starts("v100")) return "V100";
  std::string s = gpu;
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

std::string framework_family(const std::string& profile) {
  if (profile == "megatron-lm-legacy") return "megatron-lm";
  if (profile == "nemo-2024") return "nemo";
  return profile;
}

RecordMatch nearest_record(const ValidationRecord& record, const std::string& gpu, const std::string& framework) {
  const std::string gen = gpu_generation(gpu), fam = framework_family(framework);
  const RecordGroup *same_gen = nullptr, *same_fw = nullptr;
  for (const RecordGroup& g : record.groups) {
    if (g.runs <= 0) continue;
    if (g.generation == gen && g.framework == fam) return {&g, true};
    if (g.generation == gen && (!same_gen || g.runs > same_gen->runs)) same_gen = &g;
    if (g.framework == fam && (!same_fw || g.runs > same_fw->runs)) same_fw = &g;
  }
  return {same_gen ? same_gen : same_fw, false};
}

std::string record_text(const RecordMatch& m, const std::string& gpu, const std::string& framework) {
  const std::string gen = gpu_generation(gpu), fam = framework_family(framework);
  if (!m.group) return "not validated: no published " + gen + " or " + fam + " runs in the validation record";
  const RecordGroup& g = *m.group;
  char buf[256];
  std::snprintf(buf, sizeof buf, "%d %s %s runs: MAPE %.0f%%, bias %+.0f%%", g.runs, g.generation.c_str(),
                g.framework.c_str(), g.mape_pct, g.bias_pct);
  if (m.exact) return std::string("validated on ") + buf;
  return "no published " + gen + " " + fam + " runs; nearest validation record: " + buf;
}

}  // namespace shardplan
