// Writing a GPU tables file (hwprofiles/tables/<gpu>.yaml, format in hwprofiles/README.md) from a TablesFit:
// YAML through yaml-cpp's Emitter, deterministic (no dates or hosts beyond what the measurements' context says),
// so regenerating the shipped tables from the same data gives the same bytes.
#pragma once

#include <string>

#include "calibrate/fit_tables.h"

namespace shardplan::calibrate {

struct TablesSpec {
  std::string gpu;         // the GPU profile's name
  std::string provenance;  // what was measured, how, by whom; residuals are appended
  std::vector<std::string> sources;
};

std::string emit_tables(const TablesSpec& spec, const TablesFit& fit);

}  // namespace shardplan::calibrate
