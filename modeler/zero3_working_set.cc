#include "modeler/zero3_working_set.h"

#include <algorithm>

#include "modeler/finetune.h"
#include "modeler/model_desc.h"

namespace shardplan {

namespace {

constexpr double kModelDtype = 2.0;  // bf16/fp16: the dtype DeepSpeed gathers 16-bit parameters and gradients in

struct Step {
  int module;
  bool backward;
};

/// Walks `trace` as the coordinator does and returns the peak. Each forward (recomputed) step keeps its module's
/// parameters when their next use in the trace lies within max_reuse elements; every backward step releases them.
Zero3Peak walk(const std::vector<Zero3Module>& mods, const std::vector<Step>& trace, const DeepSpeedZero3Config& c) {
  std::vector<bool> live(mods.size(), false);
  Zero3Peak peak;
  double peak_total = -1;
  for (size_t i = 0; i < trace.size(); ++i) {
    const Zero3Module& m = mods[trace[i].module];
    live[trace[i].module] = true;
    double live_bytes = 0, live_numel = 0;
    for (size_t k = 0; k < mods.size(); ++k)
      if (live[k]) live_bytes += mods[k].bytes, live_numel += mods[k].numel;
    const double grad = trace[i].backward ? m.grad_bytes : 0.0;
    // Prefetch: whole parameters of the following steps not yet available, until the bucket (or the live cap) is
    // reached; the parameter that crosses the bucket is fetched whole.
    const double budget = std::min(c.prefetch_bucket, c.max_live - live_numel);
    double pre_numel = 0, pre_bytes = 0;
    std::vector<bool> counted = live;
    for (size_t j = i + 1; j < trace.size() && budget > 0 && pre_numel < budget; ++j) {
      const int k = trace[j].module;
      if (counted[k]) continue;
      counted[k] = true;
      pre_numel += mods[k].numel;
      pre_bytes += mods[k].bytes;
    }
    // Of equal totals the one with more gathered (less merely prefetched) is reported.
    const double total = live_bytes + grad + pre_bytes;
    if (total > peak_total || (total == peak_total && live_bytes + grad > peak.gathered)) {
      peak_total = total;
      peak = {live_bytes + grad, pre_bytes};
    }
    // Release after the module ran.
    bool keep = false;
    if (!trace[i].backward) {
      double distance = 0;
      for (size_t j = i + 1; j < trace.size() && distance < c.max_reuse; ++j) {
        if (trace[j].module == trace[i].module) {
          keep = true;
          break;
        }
        distance += mods[trace[j].module].numel;
      }
    }
    if (!keep) live[trace[i].module] = false;
  }
  return peak;
}

std::vector<Step> layer_backward_trace(int n, bool recompute, int offset) {
  std::vector<Step> t;
  if (recompute)
    for (int i = 0; i < n; ++i) t.push_back({offset + i, false});
  for (int i = n - 1; i >= 0; --i) t.push_back({offset + i, true});
  return t;
}

}  // namespace

Zero3Peak zero3_layer_peak(const std::vector<Zero3Module>& modules, bool recompute, const DeepSpeedZero3Config& c) {
  return walk(modules, layer_backward_trace(static_cast<int>(modules.size()), recompute, 0), c);
}

std::vector<Zero3Module> zero3_layer_modules(const Context& ctx, const Sharding& sh) {
  const ModelDesc& m = ctx.model;
  const Plan& p = ctx.plan;
  const double gathered = gathered_param_bytes(p);  // 2, or the packed NF4 codes under QLoRA
  const double grad = base_frozen(p) ? 0.0 : kModelDtype;
  auto module = [&](double weights) { return Zero3Module{weights * gathered / kModelDtype, weights * gathered,
                                                         weights * grad}; };
  std::vector<Zero3Module> out;
  if (m.moe || m.mla) {
    out.push_back(module(params_per_layer(m) / sh.weight_shard));
    return out;
  }
  auto local = [&](LoraTarget t) {
    const LinearShape s = target_shape(m, t);
    return s.in * s.out / sh.weight_shard;
  };
  const bool gated = m.gated_mlp;
  if (ctx.framework.fused_projections) {
    out.push_back(module(local(kLoraQ) + local(kLoraK) + local(kLoraV)));
    out.push_back(module(local(kLoraO)));
    out.push_back(module(local(kLoraUp) + (gated ? local(kLoraGate) : 0.0)));
    out.push_back(module(local(kLoraDown)));
  } else {
    for (LoraTarget t : {kLoraQ, kLoraK, kLoraV, kLoraO, kLoraGate, kLoraUp, kLoraDown})
      if (t != kLoraGate || gated) out.push_back(module(local(t)));
  }
  return out;
}

Zero3WorkingSet deepspeed_zero3_working_set(const Context& ctx, const Sharding& sh, const DeepSpeedZero3Config& c) {
  std::vector<Zero3Module> mods = zero3_layer_modules(ctx, sh);
  const int n = static_cast<int>(mods.size());
  const bool recompute = ctx.plan.recompute == Recompute::full;
  // The last stage's backward starts with the LM head (16-bit: the head is never quantised), gathered with its
  // gradient when trained, then the last layer: the loss's peak and the head's gathered weight coincide.
  const double head = sh.vocab * ctx.model.hidden;
  std::vector<Step> trace;
  if (head > 0 && sh.vocab > 0) {
    mods.push_back({head, head * kModelDtype, base_frozen(ctx.plan) ? 0.0 : head * kModelDtype});
    trace.push_back({n, true});
  }
  for (const Step& s : layer_backward_trace(n, recompute, 0)) trace.push_back(s);
  const Zero3Peak peak = walk(mods, trace, c);
  Zero3WorkingSet ws;
  ws.gathered = Bytes(peak.gathered);
  ws.prefetch = Bytes(peak.prefetch);
  ws.ipg_bucket = Bytes(c.reduce_bucket * kModelDtype);
  return ws;
}

}  // namespace shardplan
