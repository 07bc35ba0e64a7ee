// Hardware profiles: GPU files (hwprofiles/gpus/*.yaml) and cluster files (hwprofiles/clusters/*.yaml) -> System.
// The format is documented in hwprofiles/README.md; calibration writes cluster files in the same format.
#pragma once

#include <string>
#include <string_view>

#include "modeler/system.h"

namespace shardplan::io {

/// The node a GPU ships in (DGX/HGX board, NVL72 compute tray, OAM platform, workstation) and its default network:
/// what `--gpu G --gpus N` and the published runs build when no cluster file is named.
struct StandardNode {
  int gpus_per_node = 0;
  Tier scale_up;              // NVLink/xGMI/PCIe domain; its domain_gpus may exceed the node (NVL72)
  Tier scale_out;             // per-GPU NIC share of the scale-out network
  Bytes host_memory_per_gpu;
  BytesPerSec host_memory_bw_per_gpu;  // optional host_memory_bw_gbps_per_gpu; 0 when absent
  // Optional local NVMe per GPU (nvme_gib_per_gpu, nvme_read_gbps_per_gpu, nvme_write_gbps_per_gpu); 0 when absent.
  Bytes nvme_per_gpu;
  BytesPerSec nvme_read_bw_per_gpu, nvme_write_bw_per_gpu;
};

/// A GPU file: the GPU and its standard node.
struct GpuProfile {
  Gpu gpu;
  StandardNode node;
};

GpuProfile parse_gpu_profile(std::string_view text, const std::string& filename);
GpuProfile load_gpu_profile(const std::string& name_or_path);  // hwprofiles/gpus/<name>.yaml or a path
Gpu parse_gpu(std::string_view text, const std::string& filename);
Gpu load_gpu(const std::string& name_or_path);

/// Cluster file -> System with `gpus` GPUs (0 = the file's default_gpus). gpus must be a multiple of
/// gpus_per_node unless smaller than one node. `inherits` and `gpu_overrides` are deep-merged (maps key by key,
/// lists and scalars replace). Errors name file:line: key.path.
System parse_cluster(std::string_view text, const std::string& filename, int gpus);
System load_system(const std::string& name_or_path, int gpus);  // hwprofiles/clusters/<name>.yaml or a path

/// Overrides of the standard cluster; each applies when > 0. nic_gbps_per_gpu is in Gb/s (bits), as NICs and the
/// published-runs file quote it.
struct StandardSystemOptions {
  int gpus = 0;            // default: one node
  int gpus_per_node = 0;
  int nvlink_domain = 0;   // GPUs in the scale-up domain (72 for NVL72 with 4-GPU trays)
  double nic_gbps_per_gpu = 0;
  double power_limit_w = 0;  // board power cap (0: the TDP)
};

/// The standard cluster for a GPU: its node's scale-up domain, then its scale-out network.
System standard_system(const GpuProfile& profile, const StandardSystemOptions& opts);
/// Same, for a GPU loaded by name: reads the standard node from hwprofiles/gpus/<gpu.name>.yaml and keeps `gpu`
/// as given (with any efficiency tables the caller replaced).
System standard_system(const Gpu& gpu, const StandardSystemOptions& opts);

}  // namespace shardplan::io
