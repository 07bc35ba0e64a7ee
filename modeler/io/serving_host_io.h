// Host profiles (hwprofiles/hosts/*.yaml): the CPU, host memory and PCIe link a GPU offloads to.
#pragma once

#include <string>
#include <string_view>

#include "modeler/serving/serving_types.h"

namespace shardplan::io {

serving::Host parse_host(std::string_view text, const std::string& filename);
serving::Host load_host(const std::string& name_or_path);  // hwprofiles/hosts/<name>.yaml or a path

}  // namespace shardplan::io
