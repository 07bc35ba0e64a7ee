#include "modeler/precision_recipe.h"

#include <algorithm>

#include "modeler/layer_parts.h"
#include "modeler/model_desc.h"

namespace shardplan {

namespace {
constexpr double kSrc = 2.0;  // the 16-bit tensor a quantization kernel reads

/// Transformer Engine (transformer_engine/pytorch/tensor/*_tensor.py quantizers and the common/ kernels they call).
/// Every fp8 linear quantizes its input, its output gradient and its weight into a row-wise copy (forward GEMM,
/// data gradient) and a column-wise copy (weight gradient; on Hopper the transposed data, since its fp8 tensor
/// cores take only TN layouts), both written by one fused kernel. Where the GPU's fp8 GEMMs take other layouts
/// (`non_tn`: Blackwell), the per-tensor quantizers write the row-wise data only and the weight-gradient GEMM reads
/// it as is (v2.7 pytorch/csrc/quantizer.cpp: Float8Quantizer and Float8CurrentScalingQuantizer create the
/// transpose only when `columnwise_usage && !nvte_is_non_tn_fp8_gemm_supported()`).
RecipeKernels transformer_engine(Fp8Recipe r, bool non_tn) {
  const double transpose = non_tn ? 0.0 : 1.0;  // the column-wise fp8 copy's write, per element
  switch (r) {
    case Fp8Recipe::delayed: {
      // DelayedScaling: the scale comes from the amax history of earlier steps, so one fused cast-transpose
      // (common/transpose/cast_transpose.cu) reads the tensor and writes both fp8 copies, recording the amax as it
      // goes; the history update and its reduction are one small kernel per step.
      const QuantizeCost q{kSrc + 1.0 + transpose, 1};
      return {q, q, q};
    }
    case Fp8Recipe::tensorwise: {
      // Float8CurrentScaling (v2.7 pytorch/csrc/quantizer.cpp Float8CurrentScalingQuantizer::quantize_impl): the
      // tensor's own amax first (nvte_compute_amax, common/recipe/current_scaling.cu: a cudaMemsetAsync of the amax,
      // then the amax kernel, a full read), the scale from it (nvte_compute_scale_from_amax, a 1x1 kernel), then
      // the cast-transpose (nvte_quantize_v2): two kernels that read the tensor twice, and two that move nothing.
      const QuantizeCost q{kSrc + kSrc + 1.0 + transpose, 2, 2};
      return {q, q, q};
    }
    case Fp8Recipe::blockwise: {
      // Float8BlockScaling (common/transpose/quantize_transpose_vector_blockwise.cu, ..._square_blockwise.cu):
      // each 1x128 (activations, gradients) or 128x128 (weights) block's amax is taken inside the quantize kernel;
      // both copies plus an fp32 scale per block and direction.
      const QuantizeCost act{kSrc + 1.0 + 1.0 + 2.0 * 4.0 / 128.0, 1};
      const QuantizeCost w{kSrc + 1.0 + 1.0 + 2.0 * 4.0 / (128.0 * 128.0), 1};
      return {act, act, w};
    }
    case Fp8Recipe::mxfp8: {
      // MXFP8BlockScaling (common/cast/mxfp8/quantize_mxfp8.cuh): 1x32 blocks along rows and along columns, an E8M0
      // scale byte per block and direction, in one kernel.
      const QuantizeCost q{kSrc + 1.0 + 1.0 + 2.0 / 32.0, 1};
      return {q, q, q};
    }
    case Fp8Recipe::nvfp4: {
      // NVFP4BlockScaling (common/cast/nvfp4/): a per-tensor amax (the second-level fp32 scale) first, then the
      // quantize kernel writing 4-bit data (0.5 byte) row-wise and column-wise with an E4M3 scale per 1x16 block;
      // the random Hadamard transform of the weight-gradient operands is fused into that kernel.
      const QuantizeCost q{kSrc + kSrc + 0.5 + 0.5 + 2.0 / 16.0, 2};
      return {q, q, q};
    }
  }
  return {};
}

/// torchao Float8Linear (torchao/float8/float8_linear.py, float8_scaling_utils.py): tensor-wise dynamic scaling
/// casts each operand with its own amax (torch.amax over the tensor, a full read) and the cast (read, write fp8);
/// torch._scaled_mm wants the weight-gradient operands column-major, a transposed fp8 copy (read 1, write 1).
/// Under torch.compile Inductor fuses the cast with the transposed write; eager runs them separately. Recipes
/// other than tensor-wise (torchao's rowwise, mxfp8) are counted as Transformer Engine's of the same kind.
RecipeKernels torchao(Fp8Recipe r, bool non_tn) {
  if (r != Fp8Recipe::tensorwise && r != Fp8Recipe::delayed) return transformer_engine(r, non_tn);
  const QuantizeCost q{kSrc + kSrc + 1.0 + 1.0 + 1.0, 3};
  return {q, q, q};
}
}  // namespace

LayerQuantize te_v1_layer_quantize(const LinearOperands& o, bool sp, bool bias) {
  // Sources: transformer_engine/pytorch/module/{layernorm_linear,linear,base}.py at v1.7, v1.8 and v1.9 (the same
  // code paths in all three).
  LayerQuantize q;
  // LayerNormLinear (QKV, MLP up): the norm kernel writes its output in fp8 (ln_out_dtype uint8, _apply_normalization
  // with fp8 output), so no cast runs and the norm writes 1 byte per element instead of 2; the weight gradient's
  // transposed copy is made in backward by tex.fp8_transpose of the (re-gathered) fp8 input: read 1, write 1.
  q.norm_output_bytes = 1.0;
  q.bwd.push_back({2.0 * o.normed_input_full, 2});
  // Linear (output projection, MLP down), _Linear.forward: fp8_cast_transpose_fused (read 2, write both copies)
  // unless sequence_parallel, where cast_to_fp8 writes the row-wise copy only and backward transposes it
  // (tex.fp8_transpose of the saved input).
  if (sp) {
    q.fwd.push_back({3.0 * o.row_input, 2});
    q.bwd.push_back({2.0 * o.row_input, 2});
  } else {
    q.fwd.push_back({4.0 * o.row_input, 2});
  }
  // Output gradients, base.py grad_output_preprocess. Column-parallel (no gather): one fused cast-transpose (with
  // the bias gradient fused in when there is one). Row-parallel under sequence parallelism: the bias sum over the
  // local gradient (bias only), cast_to_fp8 of the local gradient, the all-gather in fp8, then tex.fp8_transpose of
  // the gathered tensor; without it, one fused cast-transpose.
  q.bwd.push_back({4.0 * o.column_grad, 2});
  if (sp) {
    if (bias) q.bwd.push_back({2.0 * o.row_grad_local, 2});
    q.bwd.push_back({3.0 * o.row_grad_local, 2});
    q.bwd.push_back({2.0 * o.row_grad_full, 2});
  } else {
    q.bwd.push_back({4.0 * o.row_grad_full, 2});
  }
  return q;
}

Fp8Recipe effective_fp8_recipe(const Plan& p, const Framework& fw) {
  if (p.fp8_recipe) return *p.fp8_recipe;
  if (p.precision == Dtype::fp4) return Fp8Recipe::nvfp4;
  return fw.fp8_recipe;
}

bool te_fp8_non_tn_gemm(const Gpu& g) {
  const double cc = g.compute_capability;
  return (cc >= 10.0 && cc < 12.0) || cc >= 13.0;
}

RecipeKernels recipe_kernels(Fp8Recipe recipe, const Framework& fw, const Gpu& gpu) {
  // Transformer Engine 1.x has no non-TN fp8 GEMM path (nvte_is_non_tn_fp8_gemm_supported came with 2.x).
  const bool non_tn = fw.fp8_library != Fp8Library::transformer_engine_v1 && te_fp8_non_tn_gemm(gpu);
  return fw.fp8_library == Fp8Library::torchao ? torchao(recipe, non_tn) : transformer_engine(recipe, non_tn);
}

Fp8Scaling gemm_scaling(Fp8Recipe recipe) {
  return recipe == Fp8Recipe::blockwise || recipe == Fp8Recipe::mxfp8 ? Fp8Scaling::block : Fp8Scaling::per_tensor;
}

double tp_all_gather_bytes(const Plan& p, const Framework& fw) {
  if (p.precision != Dtype::fp8) return 2.0;
  const Fp8Recipe r = effective_fp8_recipe(p, fw);
  switch (fw.fp8_library) {
    case Fp8Library::transformer_engine_v1:
      return r == Fp8Recipe::delayed ? 1.0 : 2.0;
    case Fp8Library::transformer_engine:
      return r == Fp8Recipe::delayed || r == Fp8Recipe::tensorwise ? 1.0 : 2.0;
    case Fp8Library::torchao:
      return r == Fp8Recipe::tensorwise ? 1.0 : 2.0;
  }
  return 2.0;
}

namespace {
/// The current-scaling casts of one layer whose amax is all-reduced over tp (precision_recipe.h
/// add_amax_reductions), forward and backward; none where the plan's recipe or parallelism has none.
struct TpAmaxCasts {
  double fwd = 0, bwd = 0;
};
TpAmaxCasts tp_amax_casts(const Context& ctx, const Sharding& sh) {
  const Plan& p = ctx.plan;
  const ModelDesc& m = ctx.model;
  const Framework& fw = ctx.framework;
  if (p.precision != Dtype::fp8 || p.tp <= 1 || effective_fp8_recipe(p, fw) != Fp8Recipe::tensorwise) return {};
  switch (fw.fp8_library) {
    case Fp8Library::transformer_engine: {
      if (!p.sequence_parallel) return {};
      // QKV and MLP-up inputs (column-parallel), output-projection and MLP-down gradients (row-parallel). A MoE
      // layer's routed experts get their tokens from the dispatcher, not from a sequence-parallel gather
      // (Megatron-Core's grouped expert linears run without TE's tensor-parallel mode); its shared experts are
      // column- and row-parallel linears like a dense MLP's.
      const double moe = !m.moe                    ? 0.0
                         : sh.moe_layer_share >= 0 ? sh.moe_layer_share
                                                   : fraction_of_layers(m, is_moe_layer);
      const double mlp = (1.0 - moe) + (m.moe && m.moe->shared_experts > 0 ? moe : 0.0);
      return {1.0 + mlp, 1.0 + mlp};
    }
    case Fp8Library::torchao: {
      // Two module inputs; the output gradients of wq, wk, wv, wo, the MLP-up linears (w1 and w3 when gated) and w2.
      const double up = m.gated_mlp ? 2.0 : 1.0;
      return {2, 3.0 + 1.0 + up + 1.0};
    }
    case Fp8Library::transformer_engine_v1:
      return {};  // no current scaling in 1.x
  }
  return {};
}
}  // namespace

void add_amax_reductions(const Context& ctx, const Sharding& sh, CommPlan* comm) {
  const TpAmaxCasts tp_casts = tp_amax_casts(ctx, sh);
  constexpr double kAmaxBytes = 4.0;  // fp32
  const int tp = ctx.plan.tp;
  if (tp_casts.fwd > 0)
    comm->layer_forward.push_back(
        {CommKind::tp, Collective::all_reduce, Bytes(kAmaxBytes), tp, 1, tp_casts.fwd, Window::exposed});
  if (tp_casts.bwd > 0)
    comm->layer_backward.push_back(
        {CommKind::tp, Collective::all_reduce, Bytes(kAmaxBytes), tp, 1, tp_casts.bwd, Window::exposed});
  const Plan& p = ctx.plan;
  const Framework& fw = ctx.framework;
  if (p.precision != Dtype::fp8 || fw.fp8_library != Fp8Library::transformer_engine_v1 ||
      effective_fp8_recipe(p, fw) != Fp8Recipe::delayed)
    return;
  const int group = p.tp * p.dp * p.cp;
  if (group <= 1) return;
  constexpr double kGemmsPerLayer = 4.0;  // QKV, output projection, MLP up and down: one TE module each
  const double chunks = std::max(1, sh.chunks), gemms = kGemmsPerLayer * sh.layers / chunks;
  // Megatron order puts tp innermost, then cp and dp: the group is the stage's consecutive ranks.
  comm->microbatch.push_back(
      {CommKind::dp, Collective::all_reduce, Bytes(3.0 * gemms * kAmaxBytes), group, 1, chunks, Window::exposed});
  comm->microbatch.push_back(
      {CommKind::dp, Collective::all_reduce, Bytes(2.0 * gemms * kAmaxBytes), group, 1, chunks, Window::exposed});
}

double param_gather_bytes(const Plan& p, const Framework& fw) {
  if (!quantized_gemms(p) || !p.fp8_param_gather.value_or(fw.fp8_param_gather)) return 2.0;
  // Megatron's fp8 parameters (--fp8-param-gather, distributed optimizer all-gather of the quantized shards) and
  // torchao's fp8 FSDP all-gather move the 1-byte data; block-scaled recipes add their scales.
  switch (effective_fp8_recipe(p, fw)) {
    case Fp8Recipe::blockwise:
      return 1.0 + 4.0 / (128.0 * 128.0);
    case Fp8Recipe::mxfp8:
      return 1.0 + 1.0 / 32.0;
    case Fp8Recipe::nvfp4:
      return 0.5 + 1.0 / 16.0;
    default:
      return 1.0;
  }
}

}  // namespace shardplan
