// GPU tables files (hwprofiles/tables/<gpu>.yaml): the measured tables of one GPU as `shardplan calibrate fit
// --gpu-tables` writes them, which a GPU profile names with `tables: <name>` and which replace the profile's own:
// GEMM grids per dtype, fused-attention curves, per-collective busbw curves of the scale-up tier. Format in
// hwprofiles/README.md.
#pragma once

#include <string>
#include <string_view>

#include "modeler/io/system_io.h"

namespace shardplan::io {

/// Reads a tables document and applies it to `profile` (whose GPU name it must state). Throws ConfigError naming
/// file:line: key for bad input, all range problems together.
void apply_gpu_tables(std::string_view text, const std::string& filename, GpuProfile* profile);

}  // namespace shardplan::io
