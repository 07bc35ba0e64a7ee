#include "modeler/io/serving_host_io.h"

#include "modeler/io/paths.h"
#include "modeler/io/yaml_reader.h"

namespace shardplan::io {

serving::Host parse_host(std::string_view text, const std::string& filename) {
  const YAML::Node root = parse_yaml(text, filename);
  MapReader r(root, filename, "");
  if (r.positive_int("schema_version") != 1) r.fail("schema_version", "only schema 1 is known");
  r.choice("kind", {"host"});
  serving::Host h;
  h.name = r.string("name");
  h.memory = GiB(r.positive("memory_gib"));
  h.memory_bw = GBps(r.positive("memory_bw_gbps"));
  h.cpu_flops = TFlops(r.positive("cpu_tflops"));
  h.pcie_bw = GBps(r.positive("pcie_gbps"));
  const YAML::Node src = r.sequence("sources");
  for (const auto& s : src) h.sources.push_back(s.as<std::string>());
  r.finish();
  return h;
}

serving::Host load_host(const std::string& name_or_path) {
  const std::string path = resolve_data_file(name_or_path, "hwprofiles/hosts", {".yaml"}, "host profile");
  return parse_host(read_file(path), path);
}

}  // namespace shardplan::io
