// DeepSpeed ZeRO-3's gathered parameters in GPU memory. DeepSpeed gathers parameters per nn.Module, not per
// transformer layer: PartitionedParameterCoordinator (deepspeed/runtime/zero/partitioned_param_coordinator.py at
// edaa722) fetches a module's own parameters before it runs, prefetches the next ones in the recorded trace up to
// stage3_prefetch_bucket_size elements (while fewer than stage3_max_live_parameters are available), and after the
// module runs releases every parameter that the trace does not use again within stage3_max_reuse_distance
// elements. Under activation recompute a layer's recomputed forward is followed by that layer's backward, so the
// modules near the end of the layer stay gathered until their backward; without recompute each module is gathered
// alone. Gradients of trainable parameters are produced whole (model dtype) by the module's backward and copied into
// the contiguous reduce bucket (stage3.py: __ipg_bucket_flat_buffer, reduce_bucket_size elements of the model dtype,
// allocated at start-up when contiguous_gradients, the default) before the reduce-scatter.
// Not modelled: parameters under stage3_param_persistence_threshold (1e5 elements: norms, small LoRA matrices)
// stay gathered on every rank (a few MB), and the retention at the end of forward of modules reused within the
// reuse distance by the first backward steps (none for a head of more than half the distance).
#pragma once

#include <vector>

#include "modeler/strategies/strategy.h"
#include "modeler/units.h"

namespace shardplan {

/// DeepSpeed's zero_optimization defaults (deepspeed/runtime/zero/config.py at edaa722), all in elements. accelerate's
/// generated DeepSpeed config (accelerate utils/dataclasses.py DeepSpeedPlugin) and Megatron-DeepSpeed's example
/// configs set none of them, so the defaults apply.
struct DeepSpeedZero3Config {
  double prefetch_bucket = 5e7;  // stage3_prefetch_bucket_size
  double max_live = 1e9;         // stage3_max_live_parameters
  double max_reuse = 1e9;        // stage3_max_reuse_distance
  double reduce_bucket = 5e8;    // reduce_bucket_size
};

/// One module's own parameters on this rank: `numel` as DeepSpeed counts them (elements of the stored tensor: a
/// 4-bit base packed in bf16 storage holds 4 weights per element), `bytes` gathered, `grad_bytes` of the whole
/// gradient its backward produces (0 when frozen).
struct Zero3Module {
  double numel = 0, bytes = 0, grad_bytes = 0;
};

/// The peak gathered bytes (parameters, the running module's gradient, and the prefetched parameters) while one
/// layer of `modules` (forward order) runs its backward: after its recomputed forward when `recompute`, else
/// module by module.
struct Zero3Peak {
  double gathered = 0;  // parameters kept or being used, and the gradient of the module in backward
  double prefetch = 0;  // parameters prefetched for the next modules
};
Zero3Peak zero3_layer_peak(const std::vector<Zero3Module>& modules, bool recompute, const DeepSpeedZero3Config& c);

/// The modules of one transformer layer on this rank, forward order: Megatron's fused QKV, output projection, fc1
/// (gate + up) and fc2, or Hugging Face's separate q, k, v, o, gate, up, down (Framework::fused_projections); MoE
/// and MLA layers as one module of the layer's parameters (an upper bound).
std::vector<Zero3Module> zero3_layer_modules(const Context& ctx, const Sharding& sh);

struct Zero3WorkingSet {
  Bytes gathered;    // the larger of the LM head at the start of backward and a layer's peak (no prefetch)
  Bytes prefetch;    // prefetched parameters at that peak
  Bytes ipg_bucket;  // the reduce bucket, reduce_bucket_size elements of the 16-bit model dtype
  Bytes total() const { return gathered + prefetch + ipg_bucket; }
};
/// DeepSpeed ZeRO-3's buffers on one rank of the plan (Framework::zero3_gather == deepspeed_modules).
Zero3WorkingSet deepspeed_zero3_working_set(const Context& ctx, const Sharding& sh,
                                            const DeepSpeedZero3Config& c = DeepSpeedZero3Config{});

}  // namespace shardplan
