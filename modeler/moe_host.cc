#include "modeler/moe_host.h"

#include <algorithm>
#include <cmath>
#include <string_view>

#include "modeler/finetune.h"
#include "modeler/moe_overlap.h"
#include "modeler/precision_recipe.h"

namespace shardplan {

namespace {

/// Per GPU profile: the measured small-kernel time and eager-op host time in microseconds (launch_costs in
/// moe_host.h says how each is measured; ../shared/data/measured_kernels, AIConfigurator 095f58a5: gemm.csv bf16
/// m=1 n=128 k=128 latency_us_median; nccl.csv custom_allreduce sglang/vllm *_eager rows of <= 1024 bytes, median
/// over 24-63 rows, halved). AIC's a100_sxm is the 80 GB part; its host is the same for the 40 GB one.
struct MeasuredLaunch {
  std::string_view profile;
  double gpu_kernel_us, eager_op_us;
};
constexpr MeasuredLaunch kMeasuredLaunch[] = {
    {"a100-sxm4-80gb", 2.628, 23.03}, {"a100-sxm4-40gb", 2.628, 23.03}, {"h100-sxm5-80gb", 2.782, 10.66},
    {"h200-sxm-141gb", 2.737, 10.63}, {"b200", 2.137, 10.73},           {"b300", 1.834, 10.82},
    {"gb200", 2.124, 26.69},          {"gb300", 2.062, 24.29},          {"l40s", 1.713, 35.59},
};

}  // namespace

LaunchCosts launch_costs(const Gpu& gpu) {
  for (const MeasuredLaunch& m : kMeasuredLaunch)
    if (gpu.name == m.profile) return {us(m.gpu_kernel_us), us(m.eager_op_us), true};
  return {gpu.eff.kernel_overhead, Seconds(kEagerOpHostSeconds), false};
}

MoeKernelCount moe_layer_kernels(const MoeKernelSetup& s) {
  MoeKernelCount n;
  // Router after its GEMM (router.py TopKRouter.routing, moe_utils.py). Fused (moe_router_fusion, TE fused
  // router kernels): the input's cast to the router dtype (router_gating_linear), then with an aux loss the fused
  // aux-loss scores, the routing map's per-expert sum, the fused aux loss, and MoEAuxLossAutoScaler's scaling and
  // the tracker's division (5); the top-k itself is the pass layer_cost times. Unfused: topk, zeros + scatter
  // into the routing map, the probabilities' gather and normalisation, and for the aux loss a second
  // softmax/top-k/scatter, the sum and the loss formula's four elementwise ops, the scaler and the tracker.
  n.router = 1 + (s.fused_router ? (s.aux_loss ? 5 : 0) : 5 + (s.aux_loss ? 11 : 0));
  const int router_bwd = 1 + (s.aux_loss ? 3 : 0) + (s.fused_router ? 0 : 2);
  // Token dropping (apply_router_token_dropping): top-k of each expert's column over the tokens, zeros + scatter
  // into the capacity mask and its bool cast, the probabilities' masking multiply; backward: the multiply.
  n.drop = s.token_drop ? 5 : 0;
  const int drop_bwd = s.token_drop ? 1 : 0;
  // Dispatcher (token_dispatcher.py), beyond the permute/sort/un-permute passes layer_cost times.
  int dispatch_bwd = 0;
  switch (s.dispatcher) {
    case MoeDispatcher::alltoall:
      // Fused permutation (TE moe_permute_with_probs): the row-id map's 3 kernels before the permute. Unfused:
      // argsort or masked_select of the transposed map and the probabilities' gather (3). The probabilities take
      // their own all-to-all in each direction (token_dispatch: a second all_to_all call), launched like a
      // kernel here (its latency is not modelled). Dropless adds the count path: the per-expert sum, the
      // per-rank sums and reshapes, the counts' all-gather over the EP group, the local slice and the
      // device-to-host copy (7); padded, one torch.full of the per-expert capacities.
      n.dispatch = 3 + 1 + (s.padded ? 1 : 7);
      dispatch_bwd = 1 + 1;  // the probabilities' gradient all-to-all; the row-id map's gradient scatter
      break;
    case MoeDispatcher::allgather:
      // The all-gather of the routing map and probabilities (2), the local expert mask and its gather (2).
      n.dispatch = 4;
      dispatch_bwd = 1;
      break;
    case MoeDispatcher::deepep:
    case MoeDispatcher::hybridep:
      // get_dispatch_layout and notify (2), the multihot conversion of DeepEP's top-k indices (3); the expert
      // ordering is inside the dispatch kernel.
      n.dispatch = 5;
      dispatch_bwd = 2;
      break;
  }
  // Transformer Engine v2.7 GroupedLinear: general_grouped_gemm runs one cuBLAS GEMM per expert
  // (cublaslt_gemm.cu nvte_multi_stream_cublas_gemm, over 4 compute streams), and split_quantize quantizes each
  // expert's split on its own except under delayed scaling (cast.cpp multi_tensor_quantize_impl). layer_cost
  // times every per-expert GEMM at its measured latency (grouped_gemm_time, kernel time included), and each
  // linear's quantization once: the other splits' quantizations are counted here, one per expert input forward
  // and per output gradient backward.
  const int extra_experts = s.gemm_per_expert ? std::max(0, s.local_experts - 1) : 0;
  // Quantization: every split runs quant_ops_per_split GPU operations, of which layer_cost times quant_kernels
  // once per linear; two tensors per pass (fc1's and fc2's inputs forward, their output gradients backward).
  const int ops = s.quant_ops_per_split < 0 ? s.quant_kernels : s.quant_ops_per_split;
  const int splits = extra_experts > 0 ? s.local_experts : 0;
  n.expert_quant = 2 * std::max(0, splits * ops - s.quant_kernels);
  const int expert_bwd = n.expert_quant;
  // The probabilities' cast before the scaled activation (experts.py), and its gradient's reduction.
  n.dispatch += 1;
  // fp8 row padding (TEGroupedMLP.forward): the hidden states' and the probabilities' Fp8Padding and the output's
  // Fp8Unpadding, one fused_multi_row_(un)padding kernel each; backward, each one's gradient is the other copy.
  n.padding = s.fp8_row_padding ? 3 : 0;
  n.bwd = router_bwd + drop_bwd + dispatch_bwd + 1 + expert_bwd + n.padding;
  return n;
}

bool syncs_token_counts(MoeDispatcher d, bool padded_to_capacity) {
  // All four wait for the counts before the grouped GEMM unless capacity padding fixes the shapes; the flex
  // dispatcher with DeepEP rejects moe_pad_expert_input_to_capacity (transformer_config.py), so it always waits.
  return d == MoeDispatcher::deepep || !padded_to_capacity;
}

int fp8_row_alignment(Fp8Recipe r) { return r == Fp8Recipe::mxfp8 || r == Fp8Recipe::nvfp4 ? 32 : 16; }

bool fp8_pads_expert_rows(const Plan& p, const Framework& f, double rows_per_expert) {
  if (!f.moe_gemm_per_expert || !quantized_gemms(p)) return false;
  if (p.capacity_factor <= 0) return true;  // dropless: the splits follow the routing
  const double align = fp8_row_alignment(effective_fp8_recipe(p, f));
  return std::fmod(std::round(rows_per_expert), align) != 0.0;
}

MoeHostCost moe_host_cost(const Plan& p, const Framework& f, const Gpu& gpu, int local_experts,
                          double rows_per_expert) {
  MoeKernelSetup s;
  s.dispatcher = moe_dispatcher_of(p, f);
  s.fused_router = f.fused_moe_router;
  s.fused_permutation = f.fused_moe_permutation;
  // Token-drop routing pads every expert to its capacity (Megatron-Bridge apply_moe_token_drop sets
  // moe_pad_expert_input_to_capacity): fixed shapes, no wait.
  s.token_drop = s.padded = p.capacity_factor > 0;
  s.local_experts = std::max(1, local_experts);
  s.gemm_per_expert = f.moe_gemm_per_expert;
  if (quantized_gemms(p)) {
    const RecipeKernels k = recipe_kernels(effective_fp8_recipe(p, f), f, gpu);
    // Delayed scaling quantizes all splits in one fused multi_cast_transpose (no per-expert launches).
    const Fp8Recipe recipe = effective_fp8_recipe(p, f);
    // Every split runs the recipe's GPU operations (Transformer Engine v2.7 current scaling: memset, amax, scale,
    // cast; precision_recipe.cc), all of which layer_cost times once per linear.
    s.quant_kernels = recipe == Fp8Recipe::delayed ? 0 : k.activation.kernels + k.activation.launch_only_ops;
  }
  s.wgrad = !base_frozen(p);
  s.fp8_row_padding = fp8_pads_expert_rows(p, f, rows_per_expert);
  const MoeKernelCount n = moe_layer_kernels(s);
  const LaunchCosts launch = launch_costs(gpu);
  MoeHostCost c;
  c.kernels_fwd = launch.gpu_kernel * static_cast<double>(n.fwd());
  c.kernels_bwd = launch.gpu_kernel * static_cast<double>(n.bwd);
  if (syncs_token_counts(s.dispatcher, s.padded))
    c.sync = launch.eager_op * static_cast<double>(kKernelsAfterTokenSync);
  return c;
}

}  // namespace shardplan
