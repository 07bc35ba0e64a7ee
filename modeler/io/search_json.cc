#include "modeler/io/search_json.h"

#include <map>

namespace shardplan::io {

using nlohmann::json;

namespace {
json with_gpus(const Estimate& e, int gpus) {
  json j = estimate_json(e);
  j["gpus"] = gpus;
  return j;
}
}  // namespace

json search_json(const ReportContext& ctx, const std::vector<SearchPoint>& points) {
  json results = json::array(), pareto = json::array(), misses = json::array();
  std::map<std::string, uint64_t> rejected;
  uint64_t evaluated = 0, feasible = 0, space = 0;
  bool cancelled = false;
  double best_step = -1;
  for (const SearchPoint& pt : points) {
    const SearchResult& r = *pt.result;
    for (const Estimate& e : r.top) results.push_back(with_gpus(e, pt.gpus));
    for (const Estimate& e : r.nearest_misses) misses.push_back(with_gpus(e, pt.gpus));
    if (points.size() == 1) {
      for (const Estimate& e : r.pareto) pareto.push_back(with_gpus(e, pt.gpus));
    } else if (!r.top.empty()) {
      // More GPUs belong on the front only when they shorten the step.
      const double step = r.top.front().time.step().v;
      if (best_step < 0 || step < best_step) {
        pareto.push_back(with_gpus(r.top.front(), pt.gpus));
        best_step = step;
      }
    }
    for (const auto& [code, n] : r.rejected) rejected[code] += n;
    evaluated += r.evaluated;
    feasible += r.feasible;
    space += r.space_size;
    cancelled = cancelled || r.cancelled;
  }
  json labels = json::object();
  for (const auto& [code, n] : rejected) labels[code] = rejection_label(code);
  return json{{"schema_version", 1},
              {"context", context_json(ctx)},
              {"results", results},
              {"rejected", rejected},
              {"rejected_labels", labels},
              {"pareto", pareto},
              {"pareto_axes", points.size() == 1 ? "step_s vs memory headroom" : "step_s vs gpus"},
              {"nearest_misses", misses},
              {"space_size", space},
              {"evaluated", evaluated},
              {"feasible", feasible},
              {"cancelled", cancelled}};
}

}  // namespace shardplan::io
