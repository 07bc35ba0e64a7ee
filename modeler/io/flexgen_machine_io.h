// Offload-machine profiles (hwprofiles/machines/*.yaml): one GPU with its host memory, PCIe link and disk, the
// sustained rates FlexGen's schedule runs at (modeler/serving/flexgen.h), every number with its source.
#pragma once

#include <string>
#include <string_view>

#include "modeler/serving/flexgen.h"

namespace shardplan::io {

struct FlexgenMachineProfile {
  serving::FlexgenMachine machine;
  std::string gpu;  // the hwprofiles/gpus profile of its GPU
  std::vector<std::string> sources;
};

FlexgenMachineProfile parse_flexgen_machine(std::string_view text, const std::string& filename);
FlexgenMachineProfile load_flexgen_machine(const std::string& name_or_path);  // hwprofiles/machines/<name>.yaml

}  // namespace shardplan::io
