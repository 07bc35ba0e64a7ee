#include "modeler/param_offload.h"

#include <algorithm>
#include <string>

#include "modeler/memory_model.h"
#include "modeler/optimizer.h"
#include "modeler/stage_params.h"
#include "modeler/time_model.h"

namespace shardplan {

namespace {

Seconds excess(Seconds copy, Seconds compute) { return Seconds(std::max(0.0, copy.v - compute.v)); }

bool on_nvme(const Plan& p) { return p.offload_device == OffloadDevice::nvme; }

}  // namespace

void validate_param_offload(const Context& ctx, Problems* problems) {
  const Plan& p = ctx.plan;
  const Framework& fw = ctx.framework;
  const System& sys = ctx.system;
  // A unified-memory GPU (system.h) already works in the host's DRAM: there is no host link to copy over.
  if (sys.gpu.unified_memory && (p.param_offload || p.activation_offload_layers != 0))
    problems->push_back({"offload_unified_memory", sys.gpu.name + " shares the host's DRAM (unified memory): "
                                                   "offloading parameters or activations frees nothing"});
  if (p.param_offload) {
    if (fw.param_offload == ParamOffloadKind::none)
      problems->push_back({"param_offload_unsupported", fw.name + " does not offload parameters to the host"});
    if (fw.param_offload == ParamOffloadKind::zero_infinity) {
      if (p.zero != 3)
        problems->push_back({"param_offload_needs_zero", "DeepSpeed offloads parameters at ZeRO-3 only (--zero 3)"});
      if (p.optimizer_offload != 1.0)
        problems->push_back(
            {"param_offload_needs_optimizer_offload",
             "parameter offload is modelled with DeepSpeed's optimizer offload (--optimizer-offload 1), "
             "as DeepSpeed's estimator and ZeRO-Infinity pair them"});
    }
    if (fw.param_offload == ParamOffloadKind::fsdp_cpu) {
      if (p.zero < 2)
        problems->push_back({"param_offload_needs_zero", "FSDP CPU offload needs sharded parameters (--zero 2 or 3)"});
      if (sys.host_memory_bw_per_gpu.v <= 0)
        problems->push_back({"offload_host_unknown",
                             "FSDP CPU offload steps the optimizer on the host: the profile "
                             "of " +
                                 sys.name + " has no host_memory_bw_gbps_per_gpu"});
    }
  }
  if (on_nvme(p)) {
    if (!fw.offers_nvme_offload) problems->push_back({"nvme_unsupported", fw.name + " does not offload to NVMe"});
    if (p.optimizer_offload <= 0 && !p.param_offload)
      problems->push_back({"nvme_nothing_offloaded", "--offload-device nvme needs optimizer or parameter offload"});
    if (sys.nvme_per_gpu.v <= 0 || sys.nvme_read_bw_per_gpu.v <= 0 || sys.nvme_write_bw_per_gpu.v <= 0)
      problems->push_back({"nvme_unknown",
                           "NVMe offload needs the profile's nvme_gib_per_gpu, nvme_read_gbps_per_gpu "
                           "and nvme_write_gbps_per_gpu; " +
                               sys.name + " does not state them"});
  }
  const int n = p.activation_offload_layers;
  if (n != 0) {
    const std::string named = "activation offload of " + std::to_string(n) + " layers";
    if (n < 0) {
      problems->push_back({"activation_offload_range", named + ": the layer count must be at least 1, or 0 for none"});
      return;
    }
    if (!fw.offers_activation_offload)
      problems->push_back({"activation_offload_unsupported", fw.name + " does not offload activations to the host"});
    // megatron/core/transformer/transformer_config.py __post_init__: fewer layers than the model's, no pipeline
    // parallelism, no activation recomputation.
    if (n >= ctx.model.layers)
      problems->push_back({"activation_offload_range",
                           named + ": must be fewer than the model's " + std::to_string(ctx.model.layers) + " layers"});
    if (p.pp > 1)
      problems->push_back({"activation_offload_needs_no_pp", named + ": Megatron-Core refuses CPU offloading with "
                                                                     "pipeline parallelism"});
    if (p.recompute != Recompute::none)
      problems->push_back({"activation_offload_needs_no_recompute",
                           named + ": Megatron-Core refuses CPU offloading with activation recompute"});
    if (sys.gpu.host_link_bw.v <= 0)
      problems->push_back({"offload_host_unknown", sys.gpu.name + " states no host-link bandwidth"});
  }
}

void apply_param_offload(const Context& ctx, const Sharding& sh, const Schedule& sched, const LayerCost& layer,
                         MemoryBreakdown* mem, TimeBreakdown* t, OffloadEstimate* out) {
  const Plan& p = ctx.plan;
  const Framework& fw = ctx.framework;
  const System& sys = ctx.system;
  const bool nvme = on_nvme(p);
  if (!p.param_offload && !nvme && p.activation_offload_layers <= 0) return;
  const double m = sched.microbatches, L = sh.layers;
  const BytesPerSec link = sys.gpu.host_link_bw;
  const Seconds compute_f = layer.forward.time, compute_b = layer.backward.time + layer.recompute.time;
  const double recompute_share = full_recompute_share(p, sh);
  const Bytes allocated_before = mem->total() - mem->fragmentation - mem->context;
  Seconds exposed_f, exposed_b;  // per micro-batch, all layers
  Bytes per_step;                // bytes over the host link per step, all layers and micro-batches
  Bytes nvme_traffic;

  if (p.param_offload) {
    const double unit = L > 0 ? busiest_stage_params(ctx, sh).layers / L : 0.0;  // one layer's params on this rank
    // Gathers per layer: forward, again in backward when resharded, and again for a fully recomputed forward.
    const double back = (fw.reshard_after_forward && p.zero == 3 ? 1.0 : 0.0) + recompute_share;
    if (fw.param_offload == ParamOffloadKind::zero_infinity) {
      // The 16-bit partition leaves HBM (DeepSpeed's estimator: 4 x largest layer on the GPU, 18 B per parameter on
      // the host with the optimizer's 16); each layer's partition is copied in before its all-gather
      // (partition_parameters.py: ds_tensor moved to the device), from NVMe through a pinned buffer when there.
      const Bytes moved = mem->weights;
      mem->weights = Bytes(0);
      (nvme ? out->nvme : out->host) += moved;
      const Bytes shard(unit / sh.dp_shard_weights * fw.state.weights);
      const BytesPerSec fetch_bw = nvme ? BytesPerSec(std::min(link.v, sys.nvme_read_bw_per_gpu.v)) : link;
      exposed_f += excess(shard / fetch_bw, compute_f) * L;
      exposed_b += excess(shard * back / fetch_bw, compute_b) * L;
      per_step += shard * ((1.0 + back) * L * m);
      if (nvme) nvme_traffic += shard * ((1.0 + back) * L * m) + moved;  // reads, and the updated partition written
      // The CPU optimizer updates the host copy in place: no 16-bit parameters return to the GPU after the step.
      const Seconds h2d = out->host_to_device / link;
      t->optimizer -= std::min(t->optimizer, h2d);
      out->exposed -= std::min(out->exposed, h2d);
      out->host_to_device = Bytes(0);
    } else if (fw.param_offload == ParamOffloadKind::fsdp_cpu) {
      // The sharded fp32 parameters, their gradients and the optimizer states live on the host; FSDP copies each
      // unit's shard in before its all-gather and its reduced gradient shard out after the reduce-scatter, and
      // the optimizer steps on the CPU (torch.optim on host tensors), bounded here by host DRAM bandwidth as the
      // CPU Adam of offload.h: an optimistic bound for PyTorch's CPU AdamW.
      const double owned = owned_state_params(ctx, sh, true);
      out->host += Bytes(owned * (fw.state.weights + fw.state.gradients + optimizer_bytes_per_param(ctx)));
      mem->weights -= std::min(mem->weights, Bytes(owned * fw.state.weights));
      mem->gradients = Bytes(0);
      mem->optimizer = Bytes(0);
      const Bytes shard_w(unit / sh.dp_shard_weights * fw.state.weights);
      const Bytes shard_g(unit / sh.dp_shard_gradients * fw.state.gradients);
      exposed_f += excess(shard_w / link, compute_f) * L;
      exposed_b += excess(Seconds(std::max((shard_w * back / link).v, (shard_g / link).v)), compute_b) * L;
      per_step += (shard_w * (1.0 + back) + shard_g) * (L * m);
      out->cpu_step = Bytes(owned * kAdamBytesPerParam) / sys.host_memory_bw_per_gpu;
      out->exposed += out->cpu_step;
      t->optimizer = out->cpu_step;
    }
  }

  if (nvme && p.optimizer_offload > 0) {
    // ZeRO-Infinity swaps the fp32 master weights and Adam states in from NVMe and out again around the CPU step;
    // offload_optimizer.pipeline_read / pipeline_write default to False (runtime/zero/offload_config.py), so the
    // swaps and the step run one after the other. The fp32 gradients stay in pinned host memory.
    const Bytes states(owned_state_params(ctx, sh, false) * p.optimizer_offload * optimizer_bytes_per_param(ctx));
    out->host -= std::min(out->host, states);
    out->nvme += states;
    const Seconds swap = states / sys.nvme_read_bw_per_gpu + states / sys.nvme_write_bw_per_gpu;
    out->cpu_step += swap;
    out->exposed += swap;
    t->optimizer += swap;
    nvme_traffic += states * 2.0;
  }

  if (p.activation_offload_layers > 0 && L > 0) {
    // Transformer Engine's CPU offload (megatron/core/transformer/transformer_block.py get_cpu_offload_context):
    // the saved tensors of the first N layers are copied out during forward behind the next layer and fetched back
    // behind the previous layer's backward. With pp = 1 and no recompute every layer saves the same bytes.
    const double n = std::min<double>(p.activation_offload_layers, L);
    const Bytes per_layer = mem->activations / (L * std::max(1.0, sched.in_flight));
    mem->activations -= per_layer * n;
    out->host += per_layer * n;
    exposed_f += excess(per_layer / link, compute_f) * n;
    exposed_b += excess(per_layer / link, compute_b) * n;
    per_step += per_layer * (2.0 * n * m);
  }

  const Bytes allocated_after = mem->total() - mem->fragmentation - mem->context;
  if (allocated_before.v > 0) mem->fragmentation = mem->fragmentation * (allocated_after / allocated_before);
  out->layer_transfer = per_step;
  out->layer_exposed = (exposed_f + exposed_b) * m;
  t->host_transfer += out->layer_exposed;
  out->nvme_traffic = nvme_traffic;
  const double step = t->step().v;
  if (step > 0) {
    out->link_gbps = (out->device_to_host.v + out->host_to_device.v + per_step.v) / step / 1e9;
    out->nvme_gbps = nvme_traffic.v / step / 1e9;
  }
}

}  // namespace shardplan
