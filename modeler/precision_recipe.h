// Low-precision training recipes (fp8 and fp4 GEMMs) as the kernels they run besides the GEMMs themselves: every
// quantized GEMM operand is produced from its 16-bit tensor by quantization kernels (amax, scale, cast, the
// transposed copy the other GEMM of the pair needs), which are memory-bound and cost HBM traffic of their own.
// The bytes per element below are counted from the kernels Transformer Engine and torchao launch; nothing here is
// fitted to a measured run.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "modeler/framework.h"
#include "modeler/gemm_model.h"
#include "modeler/plan.h"
#include "modeler/strategies/strategy.h"
#include "modeler/workload.h"

namespace shardplan {

/// HBM bytes read + written per element of a 16-bit tensor quantized for the GEMMs that use it (both the row-wise
/// copy and the column-wise copy the backward pass needs), and the number of kernels that do it.
struct QuantizeCost {
  double bytes_per_elem = 0;
  int kernels = 0;          // the kernels that move bytes_per_elem between them
  int launch_only_ops = 0;  // GPU operations beside them that move next to nothing (a memset, a 1x1 kernel)
};

/// The quantization of each kind of GEMM operand under a recipe: the layer input (forward GEMM and, column-wise,
/// the weight-gradient GEMM), the output gradient (data-gradient and weight-gradient GEMMs) and the weight.
struct RecipeKernels {
  QuantizeCost activation, gradient, weight;
};

/// The fp8 operands of one layer's four linears (QKV, output projection, MLP up and down) on one rank, in
/// elements, as Transformer Engine 1.x's Megatron-Core modules see them (te_v1_layer_quantize).
struct LinearOperands {
  double normed_input_local = 0;  // QKV and MLP-up inputs (the norms' outputs) on the local sequence shard
  double normed_input_full = 0;   // the same after sequence parallelism's all-gather (= local without it)
  double row_input = 0;           // output-projection and MLP-down inputs
  double column_grad = 0;         // QKV and MLP-up output gradients
  double row_grad_local = 0;      // output-projection and MLP-down output gradients on the local sequence shard
  double row_grad_full = 0;       // the same all-gathered (= local without sequence parallelism)
};

/// `bytes` read + written by `kernels` kernels of equal size.
struct QuantizePass {
  double bytes = 0;
  int kernels = 0;
};

/// One layer's fp8 quantization passes, forward and backward (weights aside), and the bytes per element the norms
/// before QKV and MLP-up write (1 where they write the fp8 cast themselves, else 2).
struct LayerQuantize {
  std::vector<QuantizePass> fwd, bwd;
  double norm_output_bytes = 2.0;
};

/// Transformer Engine 1.x (v1.7, v1.8, v1.9) delayed scaling in Megatron-Core's TE layer spec, where QKV and MLP-up
/// are LayerNormLinear and the output projection and MLP-down are Linear. `sequence_parallel`: with tp > 1.
/// `bias`: the linears have biases (the row-parallel gradient's bias sum is then a kernel of its own).
LayerQuantize te_v1_layer_quantize(const LinearOperands& ops, bool sequence_parallel, bool bias);

/// Bytes per element of the activations and gradients sequence parallelism all-gathers around the linears (the
/// QKV and MLP-up inputs in forward and again for their weight gradients, the output-projection and MLP-down
/// output gradients): 1 where the linears quantize their local shard and gather the fp8 data, else the 16-bit
/// tensor. The reduce-scatters stay 16-bit. Per-tensor recipes gather fp8:
/// - Transformer Engine 1.x delayed scaling: its own gather_along_first_dim of the fp8 tensor; with userbuffers,
///   base.py initialize_ub makes every all-gather buffer uint8 under fp8.
/// - Transformer Engine 2.x delayed and current (tensorwise) scaling (v2.7 distributed.py gather_along_first_dim:
///   _all_gather_fp8 for Float8Quantizer and Float8CurrentScalingQuantizer; linear.py and layernorm_linear.py
///   quantize the local input row-wise before the forward gather and give the quantizer to the backward re-gather;
///   base.py grad_output_preprocess quantizes the row-parallel output gradient before its gather). Its blockwise
///   and MXFP8 gathers are not counted as fp8 (_all_gather_fp8_blockwise, _all_gather_mxfp8 gather the 16-bit
///   tensor and quantize after it in some of their paths).
/// - torchao tensorwise under DTensor tensor parallelism (torchtitan 9dec370 parallelize_llama.py apply_tp uses
///   torchao's Float8ColwiseParallel, Float8RowwiseParallel and PrepareFloat8ModuleInput when float8 is on; torchao
///   v0.7.0 float8_tensor_parallel.py casts the module inputs before the Shard(1) -> Replicate redistribute and the
///   output gradients before the backward's all-gather; float8_ops.py allgather_fp8 gathers the fp8 data).
double tp_all_gather_bytes(const Plan& p, const Framework& fw);

/// Transformer Engine 1.x delayed scaling's amax reductions (v1.8 fp8.py reduce_and_update_fp8_tensors): once per
/// fp8_autocast exit (Megatron-Core enters one per model chunk's forward, transformer_block.py) and once after the
/// backward of a chunk's first fp8 module, the fp32 amaxes its modules recorded (base.py: 3 per GEMM forward --
/// input, weight, output -- and 2 backward) are concatenated and all-reduced with MAX over the amax reduction
/// group, Megatron-Core's tensor x data x context-parallel ranks (get_amax_reduction_group(with_context_parallel=
/// True)), on the compute stream, before a fused amax-and-scale update. Per micro-batch and pipeline stage; nothing
/// where the plan is not fp8 delayed scaling under TE 1.x or the group is one rank.
///
/// Current (tensorwise) scaling reduces the amax of a tensor sharded over the tensor-parallel ranks before it is
/// cast, so that the gathered fp8 tensor has one scale: one exposed 4-byte MAX all-reduce over tp per such cast,
/// per layer and micro-batch (layer_forward / layer_backward), where tp > 1:
/// - Transformer Engine 2.x with sequence parallelism (v2.7 linear.py and layernorm_linear.py
///   _customize_quantizers_float8_current_scaling: with_amax_reduction on the column-parallel input quantizer and
///   the row-parallel output-gradient quantizer, amax_reduction_group = tp_group): QKV and MLP-up inputs forward,
///   output-projection and MLP-down gradients backward.
/// - torchao under DTensor tensor parallelism (torchao v0.7.0 float8_utils.py tensor_to_amax: torch.max over a
///   sharded DTensor is a partial value; the clamp in amax_to_scale makes it replicated, one all-reduce, as
///   fsdp_utils.py states for the weights): the attention and MLP inputs (PrepareFloat8ModuleInput) forward, and
///   every Float8Linear's output gradient backward (NoopFwToFloat8E5M2BwDynamic): torchtitan's separate wq, wk, wv,
///   wo, w1, w3 (gated MLPs) and w2 (models/llama/model.py).
void add_amax_reductions(const Context& ctx, const Sharding& sh, CommPlan* comm);

/// The recipe a plan runs: the plan's own, else nvfp4 for fp4 GEMMs, else the framework's published recipe.
Fp8Recipe effective_fp8_recipe(const Plan& p, const Framework& fw);

/// Whether Transformer Engine runs per-tensor fp8 GEMMs in non-TN layouts on `g`, so that its quantizers write no
/// transposed copy (v2.7 common/transformer_engine.cpp nvte_is_non_tn_fp8_gemm_supported: compute capability
/// 10.x-11.x or 13.0 and later, i.e. Blackwell datacenter parts). A profile without a compute capability is taken
/// as TN-only (Hopper, Ada), the layout every earlier fp8 GPU has.
bool te_fp8_non_tn_gemm(const Gpu& g);

/// The quantization kernels of `recipe` as `fw`'s library runs them (Framework::fp8_library) on `gpu`.
RecipeKernels recipe_kernels(Fp8Recipe recipe, const Framework& fw, const Gpu& gpu);

/// The GEMM table `recipe`'s fp8 GEMMs use (gemm_model.h). blockwise: the block-scaled (fp8_block) table. mxfp8:
/// the same, since MXFP8 is block scaling done by Blackwell's tensor cores (1x32 blocks, E8M0 scales), the MMA the
/// measured fp8_block GEMMs run on SM100/103 (DeepGEMM's 1x128 UE8M0 kernel, AIC README), and Transformer Engine
/// runs Float8BlockScaling as MXFP8 on SM >= 10.0 (docs fp8_blockwise_scaling.rst), so the two recipes share one
/// GEMM there; its peak is the fp8 peak (NVIDIA's B200/GB200 datasheets publish one FP8 tensor-core rate, no
/// separate MXFP8 one).
/// delayed, tensorwise (and torchao's rowwise, counted as tensorwise): per_tensor. nvfp4 runs fp4 GEMMs, which
/// have one table.
Fp8Scaling gemm_scaling(Fp8Recipe recipe);

/// Whether the plan's GEMMs are quantized (fp8 or fp4).
inline bool quantized_gemms(const Plan& p) { return p.precision == Dtype::fp8 || p.precision == Dtype::fp4; }

/// Bytes per layer parameter moved by a ZeRO/FSDP parameter all-gather: the recipe's storage dtype where the
/// framework gathers quantized weights (Megatron fp8_param_gather, torchao enable_fsdp_float8_all_gather, plus the
/// block scales), else the 16-bit compute copy.
double param_gather_bytes(const Plan& p, const Framework& fw);

}  // namespace shardplan
