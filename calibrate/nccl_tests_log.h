// Reading nccl-tests text output (NVIDIA/nccl-tests src/util.cu), current and older column formats, so clusters
// measured with the standard tool can be imported without re-running anything.
//
// Formats handled (see tests/data/nccl_tests_samples.txt):
//  * current (>= ~2.13): size count type redop root | time algbw busbw #wrong | time algbw busbw #wrong
//  * older: no root column, a float max-error column instead of #wrong; very old all_gather had no redop column
// Rows are read as: size = first token, the last 8 numeric tokens = out-of-place and in-place
// [time(us) algbw busbw wrong-or-error] ("N/A" = not checked). A log may hold several runs (-N, or one binary
// after another); a run starts at "# nThread" or at a column header after rows.
//
// Logs as users capture them (fixtures in tests/data/nccl_tests_captured.txt):
//  * a launcher prefix on every line is removed: Open MPI `mpirun --tag-output` ("[1,0]<stdout>:", PRRTE's
//    "[1,0]:" and "[1,0][host:pid]<stdout>:"), "[0] " (rank-prefix formats), Slurm `srun --label` ("0: ", padded);
//    lines are grouped by that prefix, so interleaved output of several processes is read one process at a time;
//  * NCCL_DEBUG=INFO/WARN lines ("host:pid:tid [dev] NCCL INFO ...") and any other non-row text are skipped;
//  * CRLF line ends are accepted.
// No std::regex: its recursive matcher overflows the stack on long words (a 30,000-character token crashed it).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "modeler/collectives_factors.h"

namespace shardplan::calibrate {

struct NcclTestsRow {
  double bytes = 0;        // the nccl-tests size S
  double time_us = 0;      // out-of-place time (us)
  double algbw_gbps = 0, busbw_gbps = 0;
  double wrong = 0;        // #wrong, or the max error in older logs
  double ip_time_us = 0;   // in-place time
};

/// One "Using devices" line: which host ran the rank, and the device's name as CUDA reports it.
struct NcclTestsRank {
  std::string host;    // "ztan-mig-235z"
  std::string device;  // "NVIDIA H100 80GB HBM3"
};

struct NcclTestsRun {
  std::string binary;                      // "all_reduce_perf", or "" when the log does not name it
  std::optional<Collective> collective;
  int nranks = 0;                          // from the "Using devices" list; 0 when the log has none
  std::vector<NcclTestsRank> ranks;        // the "Using devices" list, in rank order
  std::string stream;                      // the launcher prefix the run was read under ("1,0", "task 0"), or ""
  bool error_column = false;               // older format: last column is a max error, not a count
  std::string failure;                     // the footer or row that shows a failed correctness check, "" if none
  std::string unreadable;                  // the first row with a non-finite or negative number (not in rows)
  int line = 0;                            // line where the run starts
  std::vector<NcclTestsRow> rows;
};

/// Splits a log into runs; never throws for unusual lines (interleaved NCCL INFO lines, shell prompts).
std::vector<NcclTestsRun> parse_nccl_tests(std::string_view text);

/// Length of a launcher's tag at the start of `line` (mpirun --tag-output, srun --label, "[rank] "; see above), 0
/// when there is none.
size_t launcher_prefix_length(std::string_view line);

/// The distinct hosts of a run's ranks, in order of first appearance.
std::vector<std::string> run_hosts(const NcclTestsRun& run);

/// Throws ConfigError when a run cannot be used: a failed correctness check, an unknown collective or rank count,
/// a single rank (a collective needs two).
/// `ranks_override` (> 0) replaces the rank count for logs that do not list devices.
void check_usable(const NcclTestsRun& run, const std::string& filename, int ranks_override = 0);

}  // namespace shardplan::calibrate
