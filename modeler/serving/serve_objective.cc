#include "modeler/serving/serve_objective.h"

#include <limits>

namespace shardplan::serving {

const char* to_string(ServeObjective o) { return kServeObjectiveNames[static_cast<int>(o)]; }

std::optional<ServeObjective> parse_serve_objective(const std::string& name) {
  for (int i = 0; i < 3; ++i)
    if (name == kServeObjectiveNames[i]) return static_cast<ServeObjective>(i);
  return std::nullopt;
}

double cost_per_mtok(double gpu_hour_price, double tokens_per_s_per_gpu) {
  if (tokens_per_s_per_gpu <= 0) return std::numeric_limits<double>::infinity();
  return gpu_hour_price * 1e6 / (3600.0 * tokens_per_s_per_gpu);
}

double objective_score(ServeObjective o, const PlanRate& r) {
  switch (o) {
    case ServeObjective::per_gpu:
      return r.tokens_per_s_per_gpu;
    case ServeObjective::per_dollar:
      return r.gpu_hour_price > 0 ? 3600.0 * r.tokens_per_s_per_gpu / r.gpu_hour_price : 0;  // tokens per unit
    case ServeObjective::throughput:
      return r.tokens_per_s_per_gpu * r.gpus;
  }
  return 0;
}

}  // namespace shardplan::serving
