// Time of one GEMM on one GPU: the formula the cost model predicts with and calibration inverts, in one place so
// that a profile fitted from measured GEMMs reproduces those measurements when predicted.
//
//   t = kernel_overhead + max(flops / (peak * eff(m, n, k)), bytes / (hbm_bw * eff_memory(bytes)))
//   eff(m, n, k) = grid(m, n, k)                                   where the profile has a measured GEMM grid
//                = min(eff_gemm(flops) * f_k(k), top) * wave_eff(m, n)   otherwise
//
// flops = 2mnk; bytes = A (m x k) + B (k x n) in the input dtype plus C (m x n) in the output dtype (at least
// 16-bit: fp8/fp4 GEMMs write bf16; a weight gradient accumulated into fp32 main_grad reads and writes 4 bytes,
// GemmOutput). f_k is the GPU's reduction-depth factor (1 when the profile has none), top
// the largest value of the eff_gemm table. The grid (hwprofiles/tables/, fitted from measured GEMMs of every shape
// on its axes) holds tile and wave quantisation and the depth effect as measured, so nothing is applied on top.
//
// Backward GEMMs use the same table: for y[m,n] = x[m,k] W^T the data gradient dx = dy W is an m x k GEMM of depth
// n and the weight gradient dW = dy^T x an n x k GEMM of depth m (layer_cost.cc passes those dimensions). The
// measured tables are forward (inference) GEMMs, y = x W^T with W stored [n, k]; a backward GEMM is looked up by its
// own (m, n, k) after transposition, i.e. as if cuBLAS ran it in the forward layout. The layouts differ (NN/TN
// instead of TN), which the data cannot show; cuBLAS picks kernels per layout, so this is an assumption. wave_eff
// models tile quantization: the output is cut into tiles, tiles are scheduled in waves of one tile per SM, and a
// partial last wave leaves SMs idle.
#pragma once

#include "modeler/system.h"
#include "modeler/units.h"

namespace shardplan {

/// Output tile of the GEMM kernels cuBLAS picks for large problems: 128x128 on Ampere and older,
/// 128x256 on Hopper and later (wgmma tiles in CUTLASS 3 / cuBLAS sm90 kernels).
struct GemmTile {
  int m = 128;
  int n = 128;
};
GemmTile gemm_tile(const Gpu& gpu);

/// Fraction of SM-slots doing useful work: tiles / (waves * sm_count). 1 when sm_count is unknown (0).
double wave_efficiency(const Gpu& gpu, double m, double n);

/// Where a GEMM's C goes. Default: written once in the input dtype, at least 16-bit. A weight gradient that
/// accumulates into an fp32 main_grad (Megatron's gradient_accumulation_fusion, Framework::wgrad_into_fp32_main_grad)
/// writes 4 bytes per element and first reads them (cuBLAS beta = 1) on `c_reads` of its calls (a fraction: the
/// share of micro-batches that accumulate rather than overwrite).
struct GemmOutput {
  double bytes_per_elem = 0;  // 0: the default above
  double c_reads = 0;         // times C is read before it is written, averaged over calls
};

/// Bytes one GEMM moves to and from HBM at least once (A, B read; C written, and read when it accumulates).
Bytes gemm_bytes(Dtype dtype, double m, double n, double k, GemmOutput out = {});

/// How an fp8 GEMM's operands carry their scales, which selects its table. per_tensor: one scale per tensor
/// (delayed and current scaling; per-row or per-channel scales applied in the epilogue count here too). block: a
/// scale per block of the reduction dimension, applied inside the main loop: 1x128 / 128x128 blocks with FP32
/// scales promoted on CUDA cores on Hopper (emulated in software there, Transformer Engine's
/// fp8_blockwise_scaling.rst), the tensor cores' block-scaled MMA on Blackwell (tcgen05 kind::mxf8f6f4 with UE8M0
/// scales, which DeepGEMM's sm100_fp8_gemm_1d1d.cuh runs for 1x128 and for MXFP8's 1x32 granularity alike).
/// Other dtypes ignore it.
enum class Fp8Scaling { per_tensor, block };

/// Predicted time of one m x n x k GEMM. Throws ConfigError when the GPU states no peak for `dtype`.
Seconds gemm_time(const Gpu& gpu, Dtype dtype, double m, double n, double k,
                  Fp8Scaling scaling = Fp8Scaling::per_tensor, GemmOutput out = {});

/// The measured GEMM grid for `dtype`: its own, else (for a dtype with no FLOPs table of its own either) bf16's;
/// nullptr when the profile has none, and the FLOPs table applies. A block-scaled fp8 GEMM uses the GPU's fp8_block
/// grid; a GPU without one (no measurement of block-scaled GEMMs: A100 has no fp8 at all; H800, L40S, MI300X and
/// user profiles have no fp8_block table) runs it on its per-tensor fp8 tables, the stated rule (docs/measured-
/// tables.md): optimistic by the block scaling's cost, 1.05-1.13x on the GPUs measured with both.
const Grid3* gemm_grid(const Gpu& gpu, Dtype dtype, Fp8Scaling scaling = Fp8Scaling::per_tensor);
/// Whether block-scaled fp8 GEMMs on `gpu` have a measured table of their own (else the rule above applies).
bool has_fp8_block_table(const Gpu& gpu);
/// Efficiency of one m x n x k GEMM as gemm_time divides by it: the grid's value, or the FLOPs table times the
/// depth factor times the wave model.
double gemm_shape_efficiency(const Gpu& gpu, Dtype dtype, double m, double n, double k,
                             Fp8Scaling scaling = Fp8Scaling::per_tensor);

/// Efficiency lookups with the documented fallbacks: a dtype without its own GEMM curve uses bf16's; a missing
/// curve means 1 (the peak), so an uncalibrated GPU is at worst optimistic, never silently zero.
double gemm_efficiency(const Gpu& gpu, Dtype dtype, double flops);
/// Efficiency of a GEMM of `flops` with reduction depth k, before wave quantisation: the FLOPs curve times the
/// depth factor, at most the curve's top (the best rate any shape reached, the MAMF on the measured tables).
double gemm_efficiency(const Gpu& gpu, Dtype dtype, double flops, double k);
double memory_efficiency(const Gpu& gpu, double bytes);

/// Element size in bytes (fp4 is half a byte).
double dtype_bytes(Dtype dtype);

}  // namespace shardplan
