#include "modeler/io/run_json.h"

namespace shardplan::io {

nlohmann::json run_json(const RunCost& r, const RunSpec& spec) {
  nlohmann::json j = {
      {"tokens", r.tokens},
      {"steps", r.steps},
      {"compute_s", r.compute.v},
      {"wall_s", r.wall.v},
      {"wall_days", r.wall.v / 86400},
      {"goodput", r.goodput},
      {"gpu_hours", r.gpu_hours},
      {"gpu_hour_price", spec.gpu_hour_price},
      {"cost", spec.gpu_hour_price > 0 ? nlohmann::json(r.cost) : nlohmann::json(nullptr)},
      {"gpu_power_w", r.gpu_power_w},
      {"node_overhead", spec.node_overhead},
      {"pue", spec.pue},
      {"it_energy_kwh", r.it_energy_kwh},
      {"facility_energy_kwh", r.facility_energy_kwh},
  };
  j["failures"] = nullptr;
  if (r.failures_modelled)
    j["failures"] = {{"mtbf_hours_per_gpu", spec.mtbf_hours_per_gpu},
                     {"system_mtbf_s", r.system_mtbf.v},
                     {"expected_interruptions", r.expected_failures},
                     {"restart_s", spec.restart.v}};
  j["checkpoint"] = nullptr;
  if (r.failures_modelled || spec.checkpoint_interval)
    j["checkpoint"] = {{"bytes", r.checkpoint_bytes.v},
                       {"interval_s", r.checkpoint_interval.v},
                       {"interval_rule", spec.checkpoint_interval ? "given" : "daly"},
                       {"blocking_s", r.checkpoint_blocking.v},
                       {"write_s", r.checkpoint_write.v},
                       {"write_gbps_per_gpu", spec.checkpoint_gbps_per_gpu},
                       {"async", spec.async_checkpoint}};
  return j;
}

}  // namespace shardplan::io
