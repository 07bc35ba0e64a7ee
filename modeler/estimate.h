// Estimate: the result of evaluating one plan. Memory per GPU on the busiest pipeline stage, the step-time
// breakdown whose parts add up to the step, and throughput. Reporters (table, JSON) only read this.
#pragma once

#include <array>

#include "modeler/plan.h"
#include "modeler/problems.h"
#include "modeler/units.h"
#include "modeler/workload.h"

namespace shardplan {

struct MemoryBreakdown {
  Bytes weights;      // parameters as the forward pass reads them (plus fp8 weight copies)
  Bytes gradients;    // gradient buffer
  Bytes optimizer;    // master weights and Adam moments
  Bytes activations;  // saved activations of all in-flight micro-batches (+ recompute working set)
  Bytes logits;       // LM-head logits and loss buffers on the last stage
  Bytes buffers;      // communication and gather buffers (ZeRO-3 gathered layers, pipeline sends)
  Bytes fragmentation;  // reserved by the caching allocator but not allocated
  Bytes context;        // CUDA context, library workspaces, NCCL buffers: outside the allocator
  Bytes capacity;       // HBM capacity of one GPU
  Bytes other() const { return logits + buffers + fragmentation + context; }
  /// What PyTorch's torch.cuda.max_memory_reserved() reports: everything but the context.
  Bytes allocator_reserved() const { return total() - context; }
  Bytes total() const { return weights + gradients + optimizer + activations + other(); }
  bool fits() const { return total() <= capacity; }
};

/// The shape of the simulated step, for timelines: one micro-batch on the busiest stage, repeated.
struct StepShape {
  int microbatches = 1;      // per pipeline per step
  int stages = 1;            // pipeline stages
  int chunks = 1;            // model chunks per stage (interleaving)
  Seconds forward;           // one micro-batch's forward on the busiest stage, exposed communication included
  Seconds backward;          // same for backward (recompute included)
  Seconds microbatch_comm;   // exposed per-micro-batch communication (pipeline sends, ZeRO-2/3 traffic)
  Seconds microbatch_contention;  // per micro-batch: compute slowed by the per-micro-batch traffic it hides
  std::array<Seconds, kNumCommKinds> layer_comm{};  // exposed per-layer communication per micro-batch (all layers)
  Seconds step_comm;         // exposed once-per-step communication (gradient sync, parameter gather)
  Seconds step_contention;   // once per step: compute slowed by the gradient sync and parameter gather it hides
};

struct TimeBreakdown {
  Seconds compute;    // GEMMs, attention and memory-bound kernels of all micro-batches (recompute included)
  Seconds recompute;  // the part of compute spent re-running forward passes
  Seconds moe;        // the part of compute spent in MoE layers' MLPs (router, permutations, experts)
  std::array<Seconds, kNumCommKinds> exposed_comm{};  // communication not hidden behind compute, per strategy
  Seconds bubble;     // pipeline fill and drain
  Seconds optimizer;  // optimizer step
  /// Per-layer host-link copies of offloaded parameters and activations not hidden behind the layers' compute
  /// (modeler/param_offload.h); 0 without parameter or activation offload.
  Seconds host_transfer;
  /// Host time per layer pass the GPU waits for (System::host_layer_pass), over all layers, micro-batches and
  /// passes; 0 unless a fitted profile states it.
  Seconds host_layer;
  StepShape shape;
  Seconds exposed_comm_total() const {
    Seconds s;
    for (Seconds c : exposed_comm) s += c;
    return s;
  }
  Seconds step() const { return compute + exposed_comm_total() + bubble + optimizer + host_transfer + host_layer; }
};

/// Optimizer offload to host memory (modeler/offload.h); all zero when the plan offloads nothing.
struct OffloadEstimate {
  Bytes host;             // host memory per GPU: offloaded master weights, optimizer states and gradient copies
  Bytes device_to_host;   // per step per GPU: gradients of the offloaded parameters
  Bytes host_to_device;   // per step per GPU: the updated 16-bit parameters
  Seconds cpu_step;       // CPU optimizer step over the offloaded parameters
  Seconds transfer;       // the longer of the two copies over the host link (they run in opposite directions)
  Seconds exposed;        // what the step waits for (part of TimeBreakdown::optimizer)
  double link_gbps = 0;   // host-link bandwidth the copies use, averaged over the step, GB/s
  // Parameter and activation offload, NVMe (modeler/param_offload.h).
  Bytes nvme;             // NVMe per GPU: states ZeRO-Infinity keeps there (offload device nvme)
  Bytes layer_transfer;   // per step per GPU: per-layer parameter fetches, gradient and activation copies
  Seconds layer_exposed;  // their exposed part (TimeBreakdown::host_transfer)
  Bytes nvme_traffic;     // per step per GPU: bytes read from and written to NVMe
  double nvme_gbps = 0;   // NVMe bandwidth used, averaged over the step, GB/s
  bool any() const { return host.v > 0 || nvme.v > 0 || layer_transfer.v > 0; }
};

struct Estimate {
  Plan plan;
  Problems problems;  // empty when the plan is valid and fits
  MemoryBreakdown memory;
  TimeBreakdown time;
  double tokens_per_s = 0;
  double tokens_per_s_per_gpu = 0;
  double mfu = 0;  // model FLOPs / (GPUs x dense 16-bit peak x step time)
  double hfu = 0;  // hardware FLOPs (with recompute) / same
  double model_flops_per_token = 0;
  OffloadEstimate offload;
  bool feasible() const { return problems.empty(); }
};

}  // namespace shardplan
