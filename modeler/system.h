// System: what the job runs on. A GPU, and the cluster as tiers of interconnect (NVLink/xGMI domain, then the
// scale-out network), with the efficiency tables that turn peaks into achieved rates.
#pragma once

#include <array>
#include <string>
#include <vector>

#include "modeler/collectives_factors.h"
#include "modeler/curve.h"
#include "modeler/units.h"

namespace shardplan {

/// Numeric formats whose dense peak a GPU profile states.
enum class Dtype { fp32, tf32, bf16, fp16, fp8, fp4 };
constexpr int kNumDtypes = 6;
inline constexpr std::array<const char*, kNumDtypes> kDtypeNames = {"fp32", "tf32", "bf16", "fp16", "fp8", "fp4"};

/// Fused attention kernel generations. flash2: FlashAttention-2 (Dao 2023) and kernels of its design (PyTorch
/// SDPA's flash backend). flash3: Hopper-generation kernels using wgmma/TMA (FlashAttention-3, Shah et al. 2024;
/// cuDNN fused attention as Transformer Engine uses it). flash1: the first-generation algorithm (Dao et al. 2022)
/// and its Triton port (flash_attn_triton), as 2023 PyTorch stacks ran it.
enum class AttentionKernel { flash2, flash3, flash1 };
constexpr int kNumAttentionKernels = 3;
/// Names as profiles spell them (hwprofiles/README.md), indexed by AttentionKernel.
inline constexpr std::array<const char*, kNumAttentionKernels> kAttentionKernelNames = {"flash2", "flash3", "flash1"};

/// Achieved efficiencies of one GPU (fractions of the dense peak or of HBM bandwidth). Defaults in
/// hwprofiles/ come from published measurements; calibration replaces them with the cluster's own.
struct ComputeEfficiency {
  /// GEMM: achieved fraction of the dense peak vs FLOPs of one GEMM (2mnk), per dtype. Empty: use bf16's.
  std::array<Curve, kNumDtypes> gemm;
  /// GEMM: achieved fraction of the dense peak on a measured (m, n, k) grid, per dtype (hwprofiles/tables/, written
  /// by `calibrate fit --gpu-tables`). Where present it is the whole GEMM table of that dtype: it already holds the
  /// shape's tile and wave quantisation and its reduction-depth effect as measured, so `gemm`, `gemm_k` and the
  /// wave model are not applied on top (gemm_model.h).
  std::array<Grid3, kNumDtypes> gemm_grid;
  /// GEMM of fp8 operands with block scales (128x128 weight blocks, 1x128 activation/gradient groups: DeepSeek-V3's
  /// and Transformer Engine's Float8BlockScaling) on a measured grid, as `gemm_grid` for the other dtypes. The fp8
  /// entry above holds per-tensor scaled GEMMs. Empty: block-scaled GEMMs use the fp8 tables (gemm_model.h).
  Grid3 gemm_grid_fp8_block;
  /// GEMM: factor on that efficiency vs the reduction depth k, at equal FLOPs: a short k amortises each output
  /// tile's prologue and epilogue over fewer main-loop steps. Empty: 1 (no shape dependence beyond FLOPs).
  Curve gemm_k;
  /// Fused attention forward and backward per kernel generation: achieved fraction of the dense 16-bit peak vs
  /// FLOPs of one attention call. Empty for a kernel the GPU cannot run (then flash2 is used).
  std::array<Curve, kNumAttentionKernels> attention_fwd;
  std::array<Curve, kNumAttentionKernels> attention_bwd;
  /// Streaming memory-bound kernels: achieved fraction of HBM bandwidth vs bytes moved by one kernel.
  Curve memory;
  /// Fixed GPU-side cost of one kernel (launch + ramp), added to every kernel's time.
  Seconds kernel_overhead = us(0);
};

struct Gpu {
  std::string name;
  std::array<FlopsPerSec, kNumDtypes> peak{};  // dense (no 2:4 sparsity); 0 = not supported
  Bytes hbm_capacity;                          // usable by the application as the datasheet states it
  BytesPerSec hbm_bw;
  Bytes l2;
  int sm_count = 0;                             // SMs (NVIDIA) or CUs (AMD): for wave quantization
  BytesPerSec host_link_bw;                     // PCIe/C2C to host memory, one direction
  /// The GPU shares the host's DRAM (Apple silicon): hbm_* describe that DRAM as the GPU sees it, there is no
  /// host link (host_link_bw 0), and offloading to host memory moves nothing, so the offload models refuse it.
  bool unified_memory = false;
  double tdp_w = 0;                             // board power the efficiency tables were measured at (0: unknown)
  /// CUDA compute capability, major.minor as a number (7.5 for Turing); 0: not stated or not an NVIDIA part.
  /// Engines gate kernels and features on it (llama.cpp's CUDA graphs: offload.h, cuda_graphs_off_with_splits).
  double compute_capability = 0;
  /// Sustained tensor-core clock relative to the one the efficiency tables were measured at: below 1 under a
  /// power limit (set_power_limit). Scales compute-bound kernel time, not HBM or network rates.
  double clock_scale = 1.0;
  ComputeEfficiency eff;
  std::vector<std::string> sources;

  FlopsPerSec peak_for(Dtype d) const { return peak[static_cast<int>(d)]; }
  /// The 16-bit format attention, the LM head of fp8 recipes and the MFU denominator use: bf16 where the GPU has
  /// it, else fp16 (V100, and any fp16-only profile). Its peak is 0 only for a GPU with neither.
  Dtype sixteen_bit() const { return peak_for(Dtype::bf16).v > 0 ? Dtype::bf16 : Dtype::fp16; }
  /// The datasheet peak at the sustained clock: what compute-bound kernel times divide by.
  FlopsPerSec sustained_peak(Dtype d) const { return peak_for(d) * clock_scale; }
};

/// Caps the GPU's board power at `watts` (<= tdp_w). A GPU running dense tensor-core work at its TDP is
/// power-bound, and CMOS dynamic power P = C V^2 f with V scaled along with f by DVFS gives P ~ f^3, so the
/// sustained clock falls as (watts / tdp)^(1/3) (Weste & Harris, CMOS VLSI Design, Sec. 5.2; a first-order
/// model that ignores static power). Throws ConfigError when the limit exceeds the TDP or the TDP is unknown.
void set_power_limit(Gpu* gpu, double watts);

/// One level of the interconnect. Tiers are ordered innermost first; a group of ranks uses the innermost tier
/// that contains all of its members. The last tier spans the whole cluster.
struct Tier {
  std::string name;              // "nvlink", "xgmi", "pcie", "infiniband", ...
  int domain_gpus = 0;           // GPUs sharing this tier (8 for a DGX NVLink domain, 72 for NVL72); 0 = unbounded
  BytesPerSec bw_per_gpu;        // one-direction bandwidth available to each GPU on this tier
  Seconds latency;               // per-step latency of a collective on this tier (alpha of an alpha-beta model)
  double oversubscription = 1.0; // >1 divides bandwidth for traffic that leaves a leaf switch (1 = full bisection)
  /// Achieved nccl-tests bus bandwidth as a fraction of bw_per_gpu vs message bytes per rank.
  Curve busbw_eff;
  /// Fraction reached by a single-GPU pair (send/recv) vs message bytes. Empty: use busbw_eff.
  Curve p2p_eff;
  /// Per-collective busbw fraction vs message bytes, indexed by Collective (collectives_factors.h): NVLink
  /// SHARP all-reduce and the ring all-gather of the same switch reach different fractions of the line rate.
  /// Empty entries use busbw_eff.
  std::array<Curve, kNumCollectives> busbw_eff_by;
  std::vector<std::string> sources;
};

/// A cluster: identical GPUs in nodes, tiers of interconnect, host memory.
struct System {
  std::string name;
  Gpu gpu;
  int gpus = 0;
  int gpus_per_node = 0;
  std::vector<Tier> tiers;  // innermost first
  Bytes host_memory_per_gpu;
  /// Host DRAM bandwidth per GPU (the node's CPU memory bandwidth over its GPUs): bounds a CPU optimizer step.
  /// 0: not stated by the profile.
  BytesPerSec host_memory_bw_per_gpu;
  /// Local NVMe per GPU (the node's drives over its GPUs): capacity and sequential read / write bandwidth, the
  /// third tier DeepSpeed ZeRO-Infinity offloads to (modeler/param_offload.h). 0: not stated by the profile.
  Bytes nvme_per_gpu;
  BytesPerSec nvme_read_bw_per_gpu;
  BytesPerSec nvme_write_bw_per_gpu;
  std::string provenance;   // "datasheet defaults" or the calibration run that produced the tables
  /// Fraction of a compute window's time that hides the communication assigned to it (time_model.cc): 1 hides up
  /// to the window's whole length. `calibrate fit-runs` fits it from measured steps (docs/fit-runs.md).
  double overlap_efficiency = 1.0;
  /// Host time the GPU waits for once per layer, micro-batch and pass (forward, backward, the re-run forward of
  /// full recompute), serial with the layer's kernels: a host stall the GPU cannot run ahead of (what stalls is
  /// open: docs/h100-gap.md rules out asynchronous dispatch; modeler/fit_parameters.h, time_model.cc). 0 in every
  /// shipped profile; `calibrate fit-runs` fits it (fitted.host_layer_pass_ms).
  Seconds host_layer_pass;
  /// Allocator memory beyond the model's own accounting (framework caches, allocator behaviour), added to the
  /// predicted peak; fitted by `calibrate fit-runs` from measured peaks, 0 otherwise. May be negative: the
  /// model's 5% fragmentation allowance then held less (the sum stays >= 0).
  Bytes memory_reserve;
  /// Signed leave-one-out throughput errors of the fit that produced this profile, (predicted - measured) /
  /// measured in percent, one per fitted run; empty when the profile was not fitted to measured steps.
  std::vector<double> fit_loo_errors_pct;

  /// Index of the innermost tier whose domain holds a group of `size` ranks placed with stride `stride`.
  int tier_for_group(int size, int stride) const;
};

/// Calibration scales on a profile's efficiency tables (calibrate fit-runs, docs/fit-runs.md): multiply the GEMM
/// efficiency of `dtype` (its FLOPs curve and its measured grid, for fp8 the block-scaled grid too; a dtype that
/// falls back to bf16's tables gets a copy of them first, so the scale stays its own), the attention curves of
/// every kernel generation, the HBM streaming curve, or a tier's bus-bandwidth curves (busbw, p2p and
/// per-collective). `k` > 0.
void scale_gemm_efficiency(Gpu* gpu, Dtype dtype, double k);
void scale_attention_efficiency(Gpu* gpu, double k);
void scale_memory_efficiency(Gpu* gpu, double k);  // the streaming-kernel HBM curve
void scale_busbw(Tier* tier, double k);
/// Scales the tier's all-to-all curve alone (calibrate fit-runs' alltoall_scale), first taking a copy of the
/// busbw curve it falls back to when the tier has none of its own.
void scale_alltoall_busbw(Tier* tier, double k);

}  // namespace shardplan
