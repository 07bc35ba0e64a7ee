#include "apps/offload_report.h"

#include "apps/text.h"

namespace shardplan::cli {

std::string format_offload(const Estimate& e, const System& sys) {
  if (e.plan.optimizer_offload <= 0) return "";
  const OffloadEstimate& o = e.offload;
  return "optimizer offload " + fmt("%g", e.plan.optimizer_offload) + ": host memory " + fmt("%.1f", to_GiB(o.host)) +
         " GiB per GPU of " + fmt("%.0f", to_GiB(sys.host_memory_per_gpu)) + " GiB\n  per step " +
         fmt("%.2f", o.device_to_host.v / 1e9) + " GB to the host and " + fmt("%.2f", o.host_to_device.v / 1e9) +
         " GB back over " + fmt("%.0f", to_GBps(sys.gpu.host_link_bw)) + " GB/s (" + fmt("%.3f s", o.transfer.v) +
         "); CPU Adam " + fmt("%.3f s", o.cpu_step.v) + " at " + fmt("%.1f", to_GBps(sys.host_memory_bw_per_gpu)) +
         " GB/s of host DRAM per GPU; exposed " + fmt("%.3f s", o.exposed.v) + "; host link " +
         fmt("%.1f", o.link_gbps) + " GB/s averaged over the step\n";
}

}  // namespace shardplan::cli
