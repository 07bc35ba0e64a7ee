// The flags `serve predict` and `serve search` share, registered and parsed in one place: the prefix-cache hit
// rate (--prefix-hit), the model transforms (--sparsity, --low-rank; docs/transforms.md), the batch cap
// (--max-batch) and the engine memory fraction (--mem-fraction). The speculative-decoding flags have their own
// file (serve_spec_flags.h).
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "modeler/serving/serving_model.h"
#include "modeler/serving/transforms.h"

namespace shardplan::cli {

struct SharedServeFlags {
  double prefix_hit = 0;    // fraction of prompt tokens served from the prefix cache
  std::string sparsity;     // --sparsity spec; empty: dense
  std::string low_rank;     // --low-rank spec; empty: full rank
  int max_batch = 0;        // sequences per attention-DP rank; 0: the KV cache decides (predict), the ladder (search)
  double mem_fraction = 0;  // 0: the engine's default fraction (engine_memory.h)
};

/// Registers the four flags on `app`. `search`: --max-batch caps the search's batch ladder instead of fixing the
/// plan's batch, and the help says so.
void add_shared_serve_flags(CLI::App* app, SharedServeFlags* f, bool search);

/// --sparsity then --low-rank, parsed (transforms.h); ConfigError naming the flag for a bad spec.
std::vector<serving::Transform> parse_transforms(const SharedServeFlags& f);

/// ConfigError naming --sparsity and `gpu` when a transformed tensor has no kernel on it (2:4 needs Sparse Tensor
/// Cores; check_transform_kernels).
void check_transforms_run(const serving::ServingModel& sm, const Gpu& gpu);

/// "sparsity 2:4, low-rank 64" for the output; empty when neither is given.
std::string transforms_note(const SharedServeFlags& f);

/// The batch ladder of a search under --max-batch N: the rungs below N, then N itself (N is the cap the user
/// named, so it is tried even when it is not a rung). `ladder` unchanged when N is 0.
std::vector<int> capped_batches(const std::vector<int>& ladder, int max_batch);

}  // namespace shardplan::cli
