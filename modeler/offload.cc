#include "modeler/offload.h"

#include <algorithm>
#include <string>

#include "modeler/finetune.h"
#include "modeler/optimizer.h"
#include "modeler/stage_params.h"
#include "modeler/time_model.h"

namespace shardplan {

void validate_offload(const Context& ctx, Problems* problems) {
  const double f = ctx.plan.optimizer_offload;
  if (f == 0) return;
  if (!(f > 0 && f <= 1)) {
    problems->push_back({"offload_range", "optimizer offload fraction (" + num(f, "%g") + ") must be in [0, 1]"});
    return;
  }
  if (ctx.system.gpu.unified_memory)
    problems->push_back({"offload_unified_memory", ctx.system.gpu.name + " shares the host's DRAM (unified "
                                                                        "memory): optimizer offload frees nothing"});
  if (ctx.framework.optimizer_offload == OptimizerOffloadKind::none)
    problems->push_back({"offload_unsupported", ctx.framework.name + " does not offload the optimizer to the host"});
  // Megatron-Core's CPU offload runs inside the distributed optimizer; ZeRO-Offload offloads the ZeRO partition.
  if (ctx.plan.zero < 1)
    problems->push_back({"offload_needs_zero", "optimizer offload needs a sharded optimizer (--zero 1 or more)"});
  if (ctx.system.host_memory_bw_per_gpu.v <= 0)
    problems->push_back({"offload_host_unknown", "optimizer offload needs the host's memory bandwidth: the profile "
                                                 "of " + ctx.system.name + " has no host_memory_bw_gbps_per_gpu"});
}

void apply_offload(const Context& ctx, const Sharding& sh, MemoryBreakdown* mem, TimeBreakdown* t,
                   OffloadEstimate* out) {
  const double f = ctx.plan.optimizer_offload;
  if (f <= 0) return;
  const Framework& fw = ctx.framework;
  const System& sys = ctx.system;
  const double owned = owned_state_params(ctx, sh, false) * f;  // parameters the CPU optimizer steps

  const Bytes allocated_before = mem->total() - mem->fragmentation - mem->context;
  // Host side: the fp32 master and the plan's optimizer states (what memory_model.cc put on the GPU) and an fp32
  // gradient for each offloaded parameter (DeepSpeed's fp32 gradient partition; Megatron's CPU param.grad copies).
  out->host = Bytes(owned * (optimizer_bytes_per_param(ctx) + 4.0));
  mem->optimizer = mem->optimizer * (1.0 - f);
  // ZeRO-Offload at stage 2+ reduces gradients straight into the host partition; only communication buckets stay
  // (not counted, as DeepSpeed's estimate_zero2_model_states_mem_needs does not). Megatron keeps its main-grad
  // buffer on the GPU.
  if (fw.optimizer_offload == OptimizerOffloadKind::zero_offload && ctx.plan.zero >= 2) mem->gradients = Bytes(0);
  const Bytes allocated_after = mem->total() - mem->fragmentation - mem->context;
  // The allocator's fragmentation is proportional to what is allocated (memory_model.cc).
  if (allocated_before.v > 0) mem->fragmentation = mem->fragmentation * (allocated_after / allocated_before);

  out->device_to_host = Bytes(owned * fw.state.gradients);
  out->host_to_device = Bytes(owned * fw.state.weights);
  out->cpu_step =
      Bytes(owned * step_bytes_per_param(ctx.plan.finetune.optimizer, trainable_groups(ctx.model, ctx.plan))) /
      sys.host_memory_bw_per_gpu;
  const Seconds d2h = out->device_to_host / sys.gpu.host_link_bw;
  const Seconds h2d = out->host_to_device / sys.gpu.host_link_bw;
  out->transfer = Seconds(std::max(d2h.v, h2d.v));
  if (fw.optimizer_offload == OptimizerOffloadKind::megatron_hybrid) {
    // --overlap-cpu-optimizer-d2h-h2d pipelines the copies of one parameter group with the step of another: the
    // step takes the longest of the three.
    out->exposed = Seconds(std::max({out->cpu_step.v, d2h.v, h2d.v}));
  } else {
    // ZeRO-Offload copies each gradient bucket as backward produces it (hidden behind the last micro-batch's
    // backward), then steps on the CPU and copies the parameters back before the next forward.
    out->exposed = Seconds(std::max(0.0, d2h.v - t->shape.backward.v)) + out->cpu_step + h2d;
  }
  t->optimizer = t->optimizer * (1.0 - f) + out->exposed;
  const double step = t->step().v;
  out->link_gbps = step > 0 ? (out->device_to_host.v + out->host_to_device.v) / step / 1e9 : 0;
}

}  // namespace shardplan
