// Launch and host costs of one MoE layer that its GEMMs and memory passes do not carry (issue 13, item 3): the
// small kernels the router, the token dropping, the permutation and the dispatcher launch, the per-expert
// quantizations of Transformer Engine's GroupedLinear (its per-expert GEMMs are timed in layer_cost), and the
// device-to-host wait for the per-expert token counts before the grouped GEMM, after which the GPU idles while
// the host launches the kernels up to the next long one. The kernel counts are read from Megatron-Core
// core_v0.14.0 (23e00ed, the 25.09 NeMo container's) and Transformer Engine v2.7; docs/moe.md has the table.
#pragma once

#include "modeler/framework.h"
#include "modeler/moe_dispatch.h"
#include "modeler/plan.h"
#include "modeler/system.h"
#include "modeler/units.h"

namespace shardplan {

/// Fixed costs of one kernel on a GPU and of one eager PyTorch operator on its host.
struct LaunchCosts {
  /// GPU-side time of a kernel too small to matter by its work: launch, ramp and tail. Measured: the bf16
  /// 1x128x128 cuBLAS GEMM of ../shared/data/measured_kernels gemm.csv (AIConfigurator 095f58a5, CUDA-graph
  /// replay, so no host launch in it), median over framework versions.
  Seconds gpu_kernel;
  /// Host time of one eager operator (Python, PyTorch dispatcher, cudaLaunchKernel). Measured: half the
  /// difference between the eager and the CUDA-graph custom all-reduce of <= 1 KiB in nccl.csv (SGLang and vLLM
  /// time 5 calls of clone + all-reduce eagerly and in a graph), median over both frameworks and 2-8 GPUs. The
  /// host CPU dominates it: Grace hosts (GB200, GB300) measure 2-3x the x86 hosts of H100/B200.
  Seconds eager_op;
  bool measured = false;  // false: the GPU profile's kernel_overhead and kEagerOpHostSeconds stand in
};
/// The measured costs for the GPU profiles that have AIConfigurator rows (by profile name), else the profile's
/// kernel_overhead and kEagerOpHostSeconds.
LaunchCosts launch_costs(const Gpu& gpu);

/// Host time of one eager PyTorch op where no measurement covers the GPU: the order of 10 us (Horace He, "Making
/// Deep Learning Go Brrrr From First Principles", 2022; PyTorch CUDA Graphs blog, 2021: "a few to tens of
/// microseconds per kernel"); the measured H100 figure (launch_costs) is 8.9 us. [S]
inline constexpr double kEagerOpHostSeconds = 10e-6;
/// Kernels launched after the token-count wait before the grouped GEMM gives the host time to run ahead again
/// (moe_utils.permute's row-id map and permute, sort_chunks_by_idxs, the expert inputs' quantisation): their
/// launches are on the critical path. Counted in Megatron-Core token_dispatcher.py dispatch_postprocess.
inline constexpr int kKernelsAfterTokenSync = 3;

/// What decides the kernel count of one MoE layer.
struct MoeKernelSetup {
  MoeDispatcher dispatcher = MoeDispatcher::alltoall;
  bool fused_router = false;       // moe_router_fusion
  bool fused_permutation = false;  // moe_permute_fusion
  bool token_drop = false;         // a capacity factor: apply_router_token_dropping runs
  bool padded = false;             // moe_pad_expert_input_to_capacity (static shapes, no token-count wait)
  bool aux_loss = true;            // a load-balancing loss is computed (every shipped MoE recipe has one)
  int local_experts = 1;
  bool gemm_per_expert = false;  // the grouped linear runs one GEMM per expert (Framework::moe_gemm_per_expert)
  int quant_kernels = 0;         // quantization kernels per expert input under an fp8 recipe (0: 16-bit GEMMs)
  int quant_ops_per_split = -1;  // GPU operations per expert split (-1: quant_kernels); layer_cost times
                                 // quant_kernels of them once per linear
  bool wgrad = true;             // weight gradients are computed (not a frozen base)
  bool fp8_row_padding = false;  // fp8_pads_expert_rows: the experts' rows are padded and unpadded
};

/// Kernels one MoE layer launches per micro-batch beyond those layer_cost already times (the router GEMM, the
/// softmax/top-k pass, the permute and un-permute passes, the local-expert sort, the activation, every per-expert
/// GEMM, one quantization per linear): forward, and backward (autograd re-runs some, not all).
struct MoeKernelCount {
  int router = 0, drop = 0, dispatch = 0, expert_quant = 0, padding = 0;  // forward, by source
  int bwd = 0;
  int fwd() const { return router + drop + dispatch + expert_quant + padding; }
};
MoeKernelCount moe_layer_kernels(const MoeKernelSetup& s);

/// Whether the dispatcher copies per-expert token counts to the host and waits for them before the grouped GEMM
/// (token_dispatcher.py: tokens_per_expert .cpu() / _maybe_dtoh_and_synchronize; DeepEP returns the receive
/// counts as a host list). Token-drop routing padded to capacity (moe_pad_expert_input_to_capacity) knows its
/// shapes in advance and does not wait; it is also what lets Megatron-Core capture an MoE layer in a CUDA graph
/// (core_v0.14.0 moe/README.md, "CUDA Graph Support").
bool syncs_token_counts(MoeDispatcher d, bool padded_to_capacity);

/// Row alignment of Transformer Engine v2.7's Fp8Padding (module/fp8_padding.py: 32 under MXFP8, else 16; NVFP4
/// taken as MXFP8's, its GEMMs' 32-row blocks).
int fp8_row_alignment(Fp8Recipe r);
/// Whether the experts' rows are copied to and from the fp8 row alignment on this plan: Megatron-Core
/// core_v0.14.0 TEGroupedMLP.forward (experts.py) under config.fp8 wraps TE GroupedLinear in Fp8Padding /
/// Fp8Unpadding, so the frameworks whose experts run TE GroupedLinear (Framework::moe_gemm_per_expert, the
/// Megatron profiles) pad under quantized GEMMs. TE returns the input untouched when every expert's split is
/// already a multiple of the alignment (fp8_padding.py: m_splits == padded_m_splits), which a token-drop plan
/// padded to capacity can tell from its fixed rows per expert; dropless splits vary with the routing, so they
/// are copied.
bool fp8_pads_expert_rows(const Plan& p, const Framework& f, double rows_per_expert);

/// Seconds one MoE layer adds per micro-batch: its extra kernels at the GPU's per-kernel cost, forward and
/// backward, and the wait for the token counts (forward only: the backward reuses the forward's split sizes).
struct MoeHostCost {
  Seconds kernels_fwd, kernels_bwd;
  Seconds sync;
};
MoeHostCost moe_host_cost(const Plan& p, const Framework& f, const Gpu& gpu, int local_experts,
                          double rows_per_expert = 0);

}  // namespace shardplan
