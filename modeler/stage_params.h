// Parameters held by one rank of a pipeline stage, before data-parallel (ZeRO/FSDP) sharding.
#pragma once

#include "modeler/strategies/strategy.h"

namespace shardplan {

struct StageParams {
  double layers = 0;     // transformer-layer parameters on the stage (local share), routed experts excluded
  double experts = 0;    // routed-expert parameters on the stage (local share: / ep x etp); 0 for dense models
  double embedding = 0;  // input embedding (+ positions) on the first stage
  double head = 0;       // LM head on the last stage (a second copy of the embedding when tied and pp > 1)
  double final_norm = 0; // the norm before the LM head, on the last stage (replicated over tp)
  /// MTP modules beyond their transformer layers (which `layers` counts): eh_proj, three norms, and the embedding
  /// copy a rank without the first stage's builds for the shifted lookup (Megatron-Core gpt_model.py).
  double mtp = 0;
  double total() const { return layers + embedding + head + final_norm + mtp + experts; }
  /// Parameters synchronised over the data-parallel (dp x cp) group: all but the routed experts.
  double dense() const { return layers + embedding + head + final_norm + mtp; }
};

/// The stage with the most parameters: the first (embedding) or the last (LM head) stage; where the pipeline
/// strategy names the modelled rank's ends (Sharding::ends), that rank's. Megatron places the
/// embedding on stage 0 and the LM head and loss on the last; with tied embeddings and pp > 1 both hold a copy.
StageParams busiest_stage_params(const Context& ctx, const Sharding& sh);
/// Parameters of the first and the last stage (the same stage when pp == 1).
StageParams first_stage_params(const Context& ctx, const Sharding& sh);
StageParams last_stage_params(const Context& ctx, const Sharding& sh);

/// The share of the modelled rank's transformer layers (sh.layers, its MTP modules' layers included) that are MoE
/// layers: where the pipeline strategy knows the rank's own decoder layers (Sharding::moe_layer_share, a custom
/// layout), that share of its decoder layers and the MTP modules' layers as the model's last layer (mtp_cost.cc:
/// Megatron-Core builds the MTP layer with the decoder's last layer spec); otherwise the model's mean over its dense
/// and MoE layers. 0 for dense models.
double stage_moe_share(const ModelDesc& m, const Sharding& sh);

/// Parameters whose gradients (`gradients`) or optimizer states (otherwise) one rank of the busiest stage keeps
/// after ZeRO sharding over the data-parallel and the expert-data-parallel groups (and SDP's held fraction).
double owned_state_params(const Context& ctx, const Sharding& sh, bool gradients);

}  // namespace shardplan
