#include "modeler/io/flexgen_machine_io.h"

#include "modeler/io/paths.h"
#include "modeler/io/yaml_reader.h"

namespace shardplan::io {

FlexgenMachineProfile parse_flexgen_machine(std::string_view text, const std::string& filename) {
  const YAML::Node root = parse_yaml(text, filename);
  MapReader r(root, filename, "");
  if (r.positive_int("schema_version") != 1) r.fail("schema_version", "only schema 1 is known");
  r.choice("kind", {"offload-machine"});
  FlexgenMachineProfile p;
  serving::FlexgenMachine& m = p.machine;
  m.name = r.string("name");
  p.gpu = r.string("gpu");
  m.gpu_gemm = TFlops(r.positive("gpu_gemm_tflops"));
  m.gpu_memory_bw = GBps(r.positive("gpu_memory_bw_gbps"));
  m.gpu_memory = GiB(r.positive("gpu_memory_gib"));
  m.pcie_h2d = GBps(r.positive("pcie_h2d_gbps"));
  m.pcie_d2h = GBps(r.positive("pcie_d2h_gbps"));
  m.host_memory = GiB(r.positive("host_memory_gib"));
  m.host_memory_bw = GBps(r.positive("host_memory_bw_gbps"));
  m.disk = GiB(r.positive("disk_gib"));
  m.disk_read = GBps(r.positive("disk_read_gbps"));
  m.disk_write = GBps(r.positive("disk_write_gbps"));
  const YAML::Node src = r.sequence("sources");
  for (const auto& s : src) p.sources.push_back(s.as<std::string>());
  if (p.sources.empty()) r.fail("sources", "every profile names its sources");
  r.finish();
  return p;
}

FlexgenMachineProfile load_flexgen_machine(const std::string& name_or_path) {
  const std::string path = resolve_data_file(name_or_path, "hwprofiles/machines", {".yaml"}, "machine profile");
  return parse_flexgen_machine(read_file(path), path);
}

}  // namespace shardplan::io
