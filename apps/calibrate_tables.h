// `shardplan calibrate import-aic` and `calibrate fit --gpu-tables`: the path from NVIDIA AIConfigurator's
// measured kernel database to the shipped GPU tables (hwprofiles/tables/, `make tables`).
#pragma once

#include <string>
#include <vector>

namespace shardplan::cli {

/// Reads DIR/{gemm,attention_prefill,nccl}.csv, writes the JSON lines of GPU `gpu` to `out` (atomically; an
/// existing file only with `force`). Returns the exit status.
int import_aic(const std::string& dir, const std::string& gpu, const std::string& aic_system_name,
               const std::string& out, bool force);

/// Fits JSON-lines files into the tables file of GPU `gpu` (hwprofiles/tables format) and checks it loads.
int fit_gpu_tables(const std::vector<std::string>& inputs, const std::string& gpu, const std::string& out, bool force);

}  // namespace shardplan::cli
