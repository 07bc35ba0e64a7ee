// Host-side and launch costs of one MoE layer that its GEMMs and memory passes do not carry (issue 13, item 3):
// the small kernels the router, the permutation and the dispatcher launch, and the device-to-host wait for the
// per-expert token counts before the grouped GEMM, after which the GPU idles while the host launches the
// kernels up to the next long one (docs/moe.md).
#pragma once

#include "modeler/framework.h"
#include "modeler/plan.h"
#include "modeler/system.h"
#include "modeler/units.h"

namespace shardplan {

/// Host time to launch one eager PyTorch operator with its kernel: the order of 10 us (PyTorch's dispatcher and
/// Python frame plus cudaLaunchKernel; Horace He, "Making Deep Learning Go Brrrr From First Principles", 2022,
/// overhead section; PyTorch CUDA Graphs blog, 2021: "CPU launch overheads of a few to tens of microseconds per
/// kernel"). [S]
inline constexpr double kEagerOpHostSeconds = 10e-6;
/// Kernels launched after the token-count wait before the grouped GEMM gives the host time to run ahead again
/// (moe_utils.permute's row-id map and permute, sort_chunks_by_idxs, the expert inputs' quantisation): their
/// launches are on the critical path. Counted in Megatron-Core token_dispatcher.py dispatch_postprocess.
inline constexpr int kKernelsAfterTokenSync = 3;

/// Seconds one MoE layer adds per micro-batch to its forward pass: the small kernels' launch overhead (the
/// backward runs them again through autograd, counted with the layer's other memory-bound kernels) and the wait
/// for the token counts (forward only: the backward reuses the forward's split sizes).
struct MoeHostCost {
  Seconds kernels;
  Seconds sync;
};
MoeHostCost moe_host_cost(const Plan& p, const Framework& f, const Gpu& gpu);

}  // namespace shardplan
