// Parameters held by one rank of a pipeline stage, before data-parallel (ZeRO/FSDP) sharding.
#pragma once

#include "modeler/strategies/strategy.h"

namespace shardplan {

struct StageParams {
  double layers = 0;     // transformer-layer parameters on the stage (local share)
  double embedding = 0;  // input embedding (+ positions) on the first stage
  double head = 0;       // LM head on the last stage (a second copy of the embedding when tied and pp > 1)
  double total() const { return layers + embedding + head; }
};

/// The stage with the most parameters: the first (embedding) or the last (LM head) stage. Megatron places the
/// embedding on stage 0 and the LM head and loss on the last; with tied embeddings and pp > 1 both hold a copy.
StageParams busiest_stage_params(const Context& ctx, const Sharding& sh);
/// Parameters of the first and the last stage (the same stage when pp == 1).
StageParams first_stage_params(const Context& ctx, const Sharding& sh);
StageParams last_stage_params(const Context& ctx, const Sharding& sh);

}  // namespace shardplan
