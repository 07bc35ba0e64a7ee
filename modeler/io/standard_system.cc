// The standard node of a GPU profile as a System (io::standard_system, declared in system_io.h): the datasheet
// node, scale-up and scale-out tiers of the profile, with the user's GPU count, node size, NVLink domain, NIC and
// power limit; the YAML readers of clusters and profiles stay in system_io.cc.
#include <string>

#include "modeler/io/system_io.h"
#include "modeler/problems.h"

namespace shardplan::io {

System standard_system(const GpuProfile& profile, const StandardSystemOptions& opts) {
  const StandardNode& node = profile.node;
  if (opts.gpus < 0 || opts.gpus_per_node < 0 || opts.nvlink_domain < 0 || opts.nic_gbps_per_gpu < 0)
    throw ConfigError("standard " + profile.gpu.name + " system: GPU counts and NIC bandwidth must be positive");
  System s;
  s.gpu = profile.gpu;
  s.gpus_per_node = opts.gpus_per_node > 0 ? opts.gpus_per_node : node.gpus_per_node;
  s.gpus = opts.gpus > 0 ? opts.gpus : s.gpus_per_node;
  s.host_memory_per_gpu = node.host_memory_per_gpu;
  s.host_memory_bw_per_gpu = node.host_memory_bw_per_gpu;
  s.nvme_per_gpu = node.nvme_per_gpu;
  s.nvme_read_bw_per_gpu = node.nvme_read_bw_per_gpu;
  s.nvme_write_bw_per_gpu = node.nvme_write_bw_per_gpu;
  s.name = profile.gpu.name + " x" + std::to_string(s.gpus) + " (standard node)";
  s.provenance = "datasheet defaults: standard node of " + profile.gpu.name;

  Tier up = node.scale_up;
  if (opts.nvlink_domain > 0)
    up.domain_gpus = opts.nvlink_domain;
  else if (opts.gpus_per_node > 0 && node.scale_up.domain_gpus == node.gpus_per_node)
    up.domain_gpus = s.gpus_per_node;  // the standard domain is the node: a smaller or larger node carries it along
  Tier out = node.scale_out;
  if (opts.nic_gbps_per_gpu > 0) {
    out.bw_per_gpu = Gbps(opts.nic_gbps_per_gpu);
    out.sources.push_back("--nic-gbps " + num(opts.nic_gbps_per_gpu) + " Gb/s per GPU (replaces the datasheet NIC)");
  }
  s.tiers = {up, out};
  if (opts.power_limit_w > 0) set_power_limit(&s.gpu, opts.power_limit_w);

  const std::string what = "standard " + profile.gpu.name + " system: ";
  if (s.gpus > s.gpus_per_node && s.gpus % s.gpus_per_node != 0)
    throw ConfigError(what + "gpus (" + std::to_string(s.gpus) + ") is not a multiple of gpus per node (" +
                      std::to_string(s.gpus_per_node) + ")");
  if (up.domain_gpus % s.gpus_per_node != 0 && s.gpus_per_node % up.domain_gpus != 0)
    throw ConfigError(what + "NVLink domain (" + std::to_string(up.domain_gpus) +
                      ") is neither a multiple nor a divisor of gpus per node (" + std::to_string(s.gpus_per_node) +
                      ")");
  return s;
}

System standard_system(const Gpu& gpu, const StandardSystemOptions& opts) {
  GpuProfile profile = load_gpu_profile(gpu.name);
  profile.gpu = gpu;
  return standard_system(profile, opts);
}

}  // namespace shardplan::io
