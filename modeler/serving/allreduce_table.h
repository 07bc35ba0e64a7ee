// Measured latency of the serving engines' one-node tensor-parallel all-reduce (custom all-reduce kernels under
// CUDA graphs), per GPU profile name and group size, from AIConfigurator's measured kernels (allreduce_table.cc).
#pragma once

#include <string>

#include "modeler/curve.h"

namespace shardplan::serving {

/// Largest message the table covers (64 MiB); larger all-reduces keep the collective model.
inline constexpr double kAllReduceTableMaxBytes = 64.0 * 1024 * 1024;

/// Latency curve (x: message bytes, y: seconds) of one bf16 all-reduce over `gpus` GPUs of one node (2, 4 or
/// 8) on `gpu` (a profile name); nullptr where the table has no such GPU or group size. An 8-GPU group of
/// gb200/gb300 (two NVL72 trays) takes the b200/b300 8-GPU row (allreduce_table.cc says why).
const Curve* tp_allreduce_latency(const std::string& gpu, int gpus);

}  // namespace shardplan::serving
