// Multi-token prediction (DeepSeek-V3, arXiv 2412.19437 Sec. 2.2), as Megatron-Core core_v0.14.0 (23e00ed0) runs
// one module (megatron/core/transformer/multi_token_prediction.py MultiTokenPredictionLayer, gpt_model.py
// _postprocess): the shared embedding looks up the input ids shifted by one; enorm and hnorm normalise that
// embedding and the previous hidden states; their concatenation goes through eh_proj (a column-parallel linear,
// 2h -> h, in the plan's GEMM precision: it runs inside the fp8 context); one transformer layer built from the
// decoder's last layer spec (gpt_layer_specs.py get_gpt_mtp_block_spec_for_backend: layer_specs[-1]); its
// final_layernorm; then the shared output layer and the cross-entropy once more, scaled by
// mtp_loss_scaling_factor.
#pragma once

#include "modeler/layer_cost.h"

namespace shardplan {

/// Forward and backward time of one MTP module beyond the mean transformer layer that the stage's `layers`
/// already count for it (pipeline_parallel.cc): the embedding lookup, the three norms and the concatenation, the
/// eh_proj GEMM, the last layer kind's difference from the mean layer, and the LM head with the loss. The eh_proj
/// output's tensor-parallel gather is not modelled.
LayerCost mtp_module_cost(const Context& ctx, const Sharding& sh);

}  // namespace shardplan
