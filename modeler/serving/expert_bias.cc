#include "modeler/serving/expert_bias.h"

#include <algorithm>
#include <regex>

#include "modeler/problems.h"

namespace shardplan::serving {

double host_expert_bias_roundtrip_s(const OffloadSetup& s) {
  const ModelDesc& m = s.model->model;
  if (!m.moe || !m.moe->expert_bias) return 0;
  // MUL_MAT_ID writes f32: [hidden, top_k, tokens].
  const double out = 4.0 * m.hidden * m.moe->top_k * s.prefill_tokens;
  // Device to host and back over the link (the CPU backend's compute buffer is the GPU's pinned host buffer type,
  // so both copies run at the pinned rate); the CPU's ADD_ID reads the tensor and writes it.
  return 2.0 * out / s.host.pcie_bw.v + 2.0 * out / s.host.memory_bw.v;
}

bool ik_n_cpu_moe_moves_biases(const std::string& build_date) {
  return !build_date.empty() && build_date <= "2025-10-19";  // ISO dates compare as strings
}

std::vector<bool> host_bias_blocks(int layers, int n_cpu_moe, bool n_cpu_moe_moves_biases,
                                   const std::vector<std::string>& cpu_regexes) {
  std::vector<std::regex> res;
  for (const std::string& r : cpu_regexes) {
    try {
      res.emplace_back(r);
    } catch (const std::regex_error&) {
      throw ConfigError("tensor override '" + r + "' is not a regular expression");
    }
  }
  std::vector<bool> host(std::max(0, layers), false);
  for (int l = 0; l < layers; ++l) {
    if (n_cpu_moe_moves_biases && l < n_cpu_moe) host[l] = true;
    const std::string name = "blk." + std::to_string(l) + ".ffn_down_exps.bias";
    for (const auto& re : res)
      if (std::regex_search(name, re)) host[l] = true;
  }
  return host;
}

int add_host_bias_prefill(const std::vector<OffloadItem>& items, const OffloadSetup& s,
                          const std::vector<bool>& host_bias, Placement* p) {
  const double per_block = host_expert_bias_roundtrip_s(s);
  if (per_block <= 0) return 0;
  int blocks = 0;
  for (size_t i = 0; i < items.size() && i < p->home[0].size(); ++i) {
    const OffloadItem& it = items[i];
    if (!it.expert || it.layer < 0 || it.layer >= static_cast<int>(host_bias.size())) continue;
    if (it.name.find("ffn_down_exps") == std::string::npos || !host_bias[it.layer]) continue;
    if (p->home[0][i] != Home::stream) continue;
    ++blocks;
  }
  p->step[0] = Seconds(p->step[0].v + per_block * blocks);
  return blocks;
}

}  // namespace shardplan::serving
