// The MLP of one layer on one rank: the dense MLP, the routed MoE layer (router, permutations, the local experts'
// grouped or per-expert GEMMs, shared experts) and their average over the model's dense and MoE layers.
#pragma once

#include "modeler/layer_parts.h"

namespace shardplan {

/// An MLP's GEMMs, its memory-bound forward kernels (activation function; MoE permutation and routing) and the
/// elements of its linear layers' inputs (what an fp8 recipe casts).
struct MlpCost {
  Gemms gemms;
  Gemms up, down;  // the parts of `gemms` before and after the activation (the fc1 and fc2 slots)
  Seconds mem_fwd;
  Seconds mem_bwd;  // the backward of mem_fwd's kernels
  double linear_input_elems = 0;
  double linear_output_elems = 0;  // elements of its linear layers' outputs (the gradients an fp8 recipe casts)
  double linear_weight_elems = 0;  // elements of its linear layers' weights on this rank
  Seconds moe_fwd, moe_bwd;  // the MoE layers' part of the above, averaged over all layers
  Seconds host_fwd;          // forward-only host wait (MoE token counts, moe_host.h), averaged over all layers
  Seconds kernels_fwd, kernels_bwd;  // MoE launches layer_cost does not time otherwise (moe_host.h), averaged
};

/// Elements an MLP's activation function moves per token and FFN column (gated and eager variants).
double activation_elems(const ModelDesc& m, const Framework& fw);
/// A dense MLP of width `ffn` over the rank's tokens (the shared experts too).
MlpCost dense_mlp(const Context& ctx, const Sharding& sh, double ffn);

/// A layer's MLP as its parts: the dense MLP, the MoE layer's (when the model has MoE layers) and the share of
/// the layers that are MoE.
struct MlpParts {
  MlpCost dense, routed;
  double moe = 0;
};

MlpParts mlp_parts(const Context& ctx, const Sharding& sh);
/// The MLP of one layer averaged over the model's dense and MoE layers.
MlpCost mlp_cost(const MlpParts& parts, const Sharding& sh);

/// One MoE layer's forward on one rank by part (the routed experts; the shared experts are a dense MLP), the
/// pieces layer_cost sums, so that they can be checked one by one against a measured MoE-layer op.
struct MoeForwardParts {
  Seconds router_gemm;       // the router's logits GEMM
  Seconds routing;           // softmax / top-k over the logits (fused router: and the aux loss's scores and loss)
  Seconds permutation;       // permute and un-permute passes, and the local-expert sort when a rank holds several
  Seconds routing_bwd;       // the backward of `routing` (not a forward part: what layer_cost charges for it)
  Seconds permutation_bwd;   // the backward of `permutation`, likewise
  Seconds fc1, fc2;          // the grouped gate+up and down GEMMs
  Seconds activation;        // the activation function over the pairs
  Seconds kernels_fwd;       // the layer's small kernels layer_cost times nowhere else (moe_host.h), forward
  Seconds kernels_bwd;       // the same, backward
  Seconds host;              // the token-count wait (moe_host.h)
};
/// Zero parts for a model without MoE layers.
MoeForwardParts moe_forward_parts(const Context& ctx, const Sharding& sh);

}  // namespace shardplan
