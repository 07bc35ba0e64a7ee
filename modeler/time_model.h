// Step time from per-layer compute, windowed communication and the micro-batch schedule.
#pragma once

#include "modeler/estimate.h"
#include "modeler/layer_cost.h"
#include "modeler/strategies/strategy.h"

namespace shardplan {

/// Megatron-Core DDP gradient bucket: max(40M, 1M x dp) elements (distributed_data_parallel_config.py); the last
/// bucket's reduction cannot overlap any backward compute.
double gradient_bucket_params(int dp);

/// SMs a GPU's communication kernels occupy while they run: DeepSeek-V3 technical report (arXiv 2412.19437,
/// Sec. 3.2.2) dedicates 20 of an H800's 132 SMs to its all-to-all kernels; NCCL's collectives run one CTA per
/// channel, of the same order (NCCL_MAX_NCHANNELS docs).
constexpr double kCommunicationSms = 20.0;

/// Extra compute time per second of communication hidden behind it: compute overlapped with collectives runs on
/// sm_count - kCommunicationSms SMs, so it takes f / (1 - f) longer, f = kCommunicationSms / sm_count.
double contention_slowdown(const Gpu& gpu);
/// The same for a collective whose kernels hold `sms` SMs (0: copy-engine transfers, no SMs).
double sm_slowdown(const Gpu& gpu, double sms);

/// Bytes the optimizer step moves per locally owned parameter: mixed-precision Adam reads fp32 master, m, v and
/// the fp32 gradient (16), writes master, m, v (12) and the 16-bit model copy (2), plus the gradient-norm read (4).
constexpr double kAdamBytesPerParam = 34.0;

TimeBreakdown step_time(const Context& ctx, const Sharding& sh, const Schedule& sched, const CommPlan& comm,
                        const LayerCost& layer, const LayerCost& head);

}  // namespace shardplan
