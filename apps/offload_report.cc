#include "apps/offload_report.h"

#include "apps/text.h"

namespace shardplan::cli {

std::string format_offload(const Estimate& e, const System& sys) {
  const Plan& p = e.plan;
  const OffloadEstimate& o = e.offload;
  if (p.optimizer_offload <= 0 && !o.any()) return "";
  std::string what;
  auto add = [&what](const std::string& s) { what += (what.empty() ? "" : ", ") + s; };
  if (p.optimizer_offload > 0) add("optimizer " + fmt("%g", p.optimizer_offload));
  if (p.param_offload) add("parameters");
  if (p.activation_offload_layers > 0) add("activations of " + std::to_string(p.activation_offload_layers) + " layers");
  std::string s = (p.optimizer_offload > 0 && what.find(',') == std::string::npos
                       ? "optimizer offload " + fmt("%g", p.optimizer_offload)
                       : "offload (" + what + ")") +
                  ": host memory " + fmt("%.1f", to_GiB(o.host)) + " GiB per GPU of " +
                  fmt("%.0f", to_GiB(sys.host_memory_per_gpu)) + " GiB";
  if (o.nvme.v > 0)
    s += "; NVMe " + fmt("%.1f", to_GiB(o.nvme)) + " GiB per GPU of " + fmt("%.0f", to_GiB(sys.nvme_per_gpu)) + " GiB";
  s += "\n  per step " + fmt("%.2f", o.device_to_host.v / 1e9) + " GB to the host and " +
       fmt("%.2f", o.host_to_device.v / 1e9) + " GB back over " + fmt("%.0f", to_GBps(sys.gpu.host_link_bw)) +
       " GB/s (" + fmt("%.3f s", o.transfer.v) + "); CPU step " + fmt("%.3f s", o.cpu_step.v);
  if (sys.host_memory_bw_per_gpu.v > 0)
    s += " at " + fmt("%.1f", to_GBps(sys.host_memory_bw_per_gpu)) + " GB/s of host DRAM per GPU";
  s += "; exposed " + fmt("%.3f s", o.exposed.v) + "\n";
  if (o.layer_transfer.v > 0)
    s += "  per-layer copies (parameters, gradients, activations) " + fmt("%.2f", o.layer_transfer.v / 1e9) +
         " GB per step, exposed " + fmt("%.3f s", o.layer_exposed.v) + "\n";
  if (o.nvme_traffic.v > 0)
    s += "  NVMe " + fmt("%.2f", o.nvme_traffic.v / 1e9) + " GB per step (" + fmt("%.1f", o.nvme_gbps) +
         " GB/s averaged over the step; drive " + fmt("%.1f", to_GBps(sys.nvme_read_bw_per_gpu)) + " read, " +
         fmt("%.1f", to_GBps(sys.nvme_write_bw_per_gpu)) + " write GB/s)\n";
  s += "  host link " + fmt("%.1f", o.link_gbps) + " GB/s averaged over the step of " +
       fmt("%.0f", to_GBps(sys.gpu.host_link_bw)) + " GB/s\n";
  return s;
}

}  // namespace shardplan::cli
