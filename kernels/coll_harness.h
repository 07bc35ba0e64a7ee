// The collective sweep shared by the NCCL (GPU buffers) and MPI (host buffers) backends: one loop over
// collectives x groups x sizes, nccl-tests' buffer conventions, and inputs whose results are exactly predictable
// (small integers in float: every partial sum stays below 2^24, so any reduction order gives the exact value and
// the check is bit-exact, the idea of nccl-tests' verifiable/).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "kernels/harness.h"
#include "modeler/collectives_factors.h"

namespace shardplan::bench {

/// Elements (float32) per rank for a collective whose nccl-tests size is about `bytes` over `n` ranks. Counts are
/// rounded down to 16-byte multiples per rank, as nccl-tests does, and `bytes` is the size actually measured.
struct CollShape {
  std::size_t send_elems = 0, recv_elems = 0, per_rank = 0;
  std::size_t bytes = 0;
};
CollShape coll_shape(Collective c, std::size_t bytes, int n);

/// Input element i on group rank r, and the value element i of the result must hold on rank r.
float coll_input(Collective c, int r, int n, std::size_t i, std::size_t per_rank);
float coll_expected(Collective c, int r, int n, std::size_t i, std::size_t per_rank);

/// One communication library. A backend owns a world of ranks, splits it into groups (all groups run
/// concurrently, as all TP groups of a job do), and runs one collective on the current group.
class CollBackend {
 public:
  virtual ~CollBackend() = default;
  virtual int world_rank() const = 0;
  virtual int world_size() const = 0;
  /// Splits the world into groups of `size` ranks `stride` apart; false when the world does not tile.
  virtual bool set_group(int size, int stride) = 0;
  /// Allocates buffers for `shape` and fills the inputs with coll_input.
  virtual void prepare(Collective c, const CollShape& shape) = 0;
  /// Runs `iters` launches back to back; returns seconds per launch, the maximum over all ranks.
  virtual double time(Collective c, const CollShape& shape, int iters) = 0;
  /// Runs once on fresh inputs and counts result elements that differ from coll_expected, summed over ranks.
  virtual long long check(Collective c, const CollShape& shape) = 0;
  /// Host names of all ranks (for the context record), gathered on every rank.
  virtual std::vector<std::string> hosts() = 0;
};

/// Flags of the collective benchmarks, for --help and unknown-flag checks.
extern const char* const kCollUsage;
extern const std::vector<std::string> kCollFlags;

/// The sweep: --collectives, --groups, --placements contiguous,strided, --min-bytes/--max-bytes/--factor,
/// --warmup, --reps. Results are written by world rank 0.
void run_collective_sweep(CollBackend& backend, const Args& args, Reporter& reporter);

}  // namespace shardplan::bench
