// Writing a calibrated cluster profile: YAML through yaml-cpp's Emitter (never hand-assembled text). The file is
// written by the one atomic writer of every output, io::write_file_atomic (modeler/io/atomic_write.h).
//
// The profile inherits the base cluster and overrides only what was measured:
//   schema_version, kind: cluster, name, inherits, provenance,
//   gpu_overrides.efficiency.{gemm.<dtype>, attention.<kernel>.{fwd,bwd}, memory, kernel_overhead_us,
//                             kernel_overhead_source}
//   tiers: every tier of the base (the list replaces the base's), fitted ones with new latency_us and curves.
#pragma once

#include <string>

#include "calibrate/fit.h"
#include "modeler/system.h"

namespace shardplan::calibrate {

struct ProfileSpec {
  std::string name;        // the new cluster's name
  std::string inherits;    // the --base cluster as the user named it
  std::string provenance;  // hosts, GPU, versions, rows, residuals
  std::string source;      // short calibration label written into every fitted table's source
};

std::string emit_profile(const ProfileSpec& spec, const System& base, const Fit& fit);

}  // namespace shardplan::calibrate
