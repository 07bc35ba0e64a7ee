// Reading benchmark results: our JSON lines (kernels/harness.h) into typed measurements for the fitter. A row
// whose correctness check failed (wrong > 0) is refused: a fast wrong answer must never become a cost table.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "modeler/collectives_factors.h"
#include "modeler/system.h"

namespace shardplan::calibrate {

enum class Bench { gemm, attention, memory, collective };

/// One result row. Fields not used by its benchmark keep their defaults.
struct Measurement {
  std::string where;     // "file:line" for messages
  Bench bench = Bench::gemm;
  std::string backend;   // cublasLt, shardplan-reference, torch-sdpa-flash, nccl, mpi, ...
  double time_s = 0;     // median per launch
  double time_min_s = 0, time_max_s = 0;
  double flops = 0, bytes = 0;
  // gemm
  Dtype dtype = Dtype::bf16;
  bool block_scaled = false;  // params.dtype "fp8_block": fp8 with 128x128 weight / 1x128 activation block scales
  double m = 0, n = 0, k = 0;
  // attention: the kernel generation the row measures ("flash2", "flash3"; "reference" for our CUDA-core kernel)
  std::string kernel;
  bool backward = false;
  // memory
  std::string op;
  // collective (bytes = the nccl-tests size S)
  Collective collective = Collective::all_reduce;
  int nranks = 0, stride = 1;
  int tier = -1;  // tier index when the source says it (import-nccl-tests --tier); -1: from nranks and stride
};

/// The context records of a file (GPU, driver, versions, hosts, date), kept verbatim for provenance.
struct RawFile {
  std::vector<Measurement> rows;
  std::vector<std::string> contexts;  // one-line summaries: "gemm on NVIDIA H200, driver 580.65, CUDA 13000, ..."
  std::vector<std::pair<std::string, std::string>> gpus;  // each context's "gpu" and its "file:line", for checks
};

/// Parses JSON-lines text. Throws ConfigError "file:line: message" for a malformed line, an unknown benchmark, a
/// missing field, or a row with wrong > 0. A truncated last line (an interrupted run) is skipped, not an error.
RawFile parse_jsonl(std::string_view text, const std::string& filename);

}  // namespace shardplan::calibrate
