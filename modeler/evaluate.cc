#include "modeler/evaluate.h"

#include <cmath>
#include <string>

#include "modeler/finetune.h"
#include "modeler/framework_rules.h"
#include "modeler/hsdp.h"
#include "modeler/layer_cost.h"
#include "modeler/memory_model.h"
#include "modeler/offload.h"
#include "modeler/param_offload.h"
#include "modeler/precision_recipe.h"
#include "modeler/strategies/strategy.h"
#include "modeler/time_model.h"
#include "modeler/zeropp.h"

namespace shardplan {

namespace {

/// Megatron's selective-recompute modules: only with selective recompute, where the framework offers them, and
/// for parts the model has.
void validate_recompute_modules(const Context& ctx, Problems* problems) {
  const Plan& p = ctx.plan;
  const ModelDesc& m = ctx.model;
  const unsigned mods = p.recompute_modules;
  if (mods == kRecomputeCoreAttn) return;
  const std::string named = "recompute modules (" + recompute_modules_string(mods) + ")";
  if (mods == 0) {
    problems->push_back({"recompute_modules_empty", "selective recompute needs at least one module"});
    return;
  }
  if (p.recompute != Recompute::selective)
    problems->push_back({"recompute_modules_need_selective",
                         named + " apply to selective recompute; the plan recomputes " + to_string(p.recompute)});
  if (!ctx.framework.offers_recompute_modules)
    problems->push_back({"recompute_modules_unsupported",
                         ctx.framework.name + " does not choose modules to recompute (--recompute-modules)"});
  const bool shared = m.moe && m.moe->shared_experts > 0;
  if (!m.moe && (mods & (kRecomputeMoe | kRecomputeMoeAct | kRecomputeSharedExperts)))
    problems->push_back({"recompute_modules_need_moe", named + ": moe, moe_act and shared_experts need an MoE model"});
  else if (m.moe && !shared && (mods & kRecomputeSharedExperts))
    problems->push_back({"recompute_modules_need_moe", named + ": the model has no shared experts"});
  if (!m.mla && (mods & kRecomputeMlaUpProj))
    problems->push_back({"recompute_modules_need_mla", named + ": mla_up_proj needs multi-head latent attention"});
}

void validate_basics(const Context& ctx, Problems* problems) {
  const Plan& p = ctx.plan;
  const System& s = ctx.system;
  if (p.seq_len < 1)
    problems->push_back({"seq_range", "seq_len (" + std::to_string(p.seq_len) + ") must be at least 1"});
  if (p.tp >= 1 && p.tsp >= 1 && p.pp >= 1 && p.cp >= 1 && p.dp >= 1 && p.gpus() != s.gpus) {
    const std::string tsp = p.tsp > 1 ? " x tsp" : "", tsp_v = p.tsp > 1 ? " x " + std::to_string(p.tsp) : "";
    problems->push_back({"gpus_product", "tp" + tsp + " x pp x cp x dp (" + std::to_string(p.tp) + tsp_v + " x " +
                                             std::to_string(p.pp) + " x " + std::to_string(p.cp) + " x " +
                                             std::to_string(p.dp) + " = " + std::to_string(p.gpus()) +
                                             ") does not equal the GPU count (" + std::to_string(s.gpus) + ")"});
  }
  if (p.recompute_layers < 0) {
    problems->push_back({"recompute_layers_range", "recompute layers (" + std::to_string(p.recompute_layers) +
                                                       ") must be at least 1, or 0 for all"});
  } else if (p.recompute_layers > 0) {
    const long chunks = 1L * std::max(1, p.pp) * std::max(1, p.vpp);
    const long per_chunk = (ctx.model.layers + chunks - 1) / chunks;
    if (p.recompute != Recompute::full)
      problems->push_back({"recompute_layers_need_full", "recompute layers (" + std::to_string(p.recompute_layers) +
                                                             ") applies to full recompute; the plan recomputes " +
                                                             to_string(p.recompute)});
    else if (p.recompute_layers > per_chunk)
      problems->push_back({"recompute_layers_exceed_chunk", "recompute layers (" + std::to_string(p.recompute_layers) +
                                                                ") exceeds the layers of a pipeline chunk (" +
                                                                std::to_string(per_chunk) + ")"});
    if (!ctx.framework.offers_block_recompute)
      problems->push_back({"recompute_layers_unsupported", ctx.framework.name +
                                                             " does not recompute a block of N layers per chunk "
                                                             "(--recompute-layers)"});
  }
  validate_recompute_modules(ctx, problems);
  // Attention, the LM head of narrow-precision recipes and the MFU denominator run at the 16-bit peak.
  if (s.gpu.peak_for(s.gpu.sixteen_bit()).v <= 0)
    problems->push_back({"precision_unsupported", s.gpu.name + " states neither a bf16 nor an fp16 peak; attention "
                                                               "and the LM head need a 16-bit peak"});
  if (s.gpu.peak_for(p.precision).v <= 0)
    problems->push_back({"precision_unsupported", std::string("precision ") + to_string(p.precision) +
                                                      " is not supported by " + s.gpu.name +
                                                      " (no dense peak in its profile)"});
}

/// Names the largest memory item, for the "does not fit" message and the search's rejection reasons.
Problem oom_problem(const MemoryBreakdown& mem) {
  const std::pair<const char*, Bytes> items[] = {{"weights", mem.weights},         {"gradients", mem.gradients},
                                                 {"optimizer", mem.optimizer},     {"activations", mem.activations},
                                                 {"logits", mem.logits},           {"buffers", mem.buffers}};
  const auto* top = &items[0];
  for (const auto& it : items)
    if (it.second > top->second) top = &it;
  return {std::string("oom_") + top->first,
          "out of memory: " + num(to_GiB(mem.total()), "%.1f") + " GiB needed of " +
              num(to_GiB(mem.capacity), "%.1f") + " GiB (largest item: " + top->first + " " +
              num(to_GiB(top->second), "%.1f") + " GiB)"};
}

/// Every strategy's shard(); under a custom pipeline layout, of its rank load `load` (Sharding::rank_load).
Sharding sharded(const Context& ctx, int load = 0) {
  Sharding sh = unsharded(ctx);
  sh.rank_load = load;
  for (const Strategy* s : all_strategies()) s->shard(ctx, &sh);
  apply_hsdp_sharding(ctx, &sh);
  return sh;
}

/// Model FLOPs per token the plan's step is asked to do: Megatron's count, except that a subnetwork-data-parallel
/// worker trains a subnetwork (it runs rho of the layers, or only the held parameters' backward GEMMs), so the
/// layers' share scales as the executed layer FLOPs do with and without the SDP sharding; MFU of an SDP plan is
/// then a fraction of its own work, never above 100% of the peak.
double required_flops_per_token(const Context& ctx, const Sharding& sh, const LayerCost& layer) {
  const ModelDesc& m = ctx.model;
  const double all = finetune_flops_per_token(m, ctx.plan, model_flops_per_token(m, ctx.plan.seq_len));
  if (!ctx.plan.changes_training_semantics()) return all;
  Plan whole = ctx.plan;
  whole.sdp_keep = 1.0;
  const Context full_ctx{m, ctx.system, whole, ctx.framework};
  const Sharding full_sh = sharded(full_ctx, sh.rank_load);
  const LayerCost full = layer_cost(full_ctx, full_sh);
  const double run = (layer.forward.flops + layer.backward.flops) * sh.layers;
  const double asked = (full.forward.flops + full.backward.flops) * full_sh.layers;
  const double head = 3.0 * 2.0 * m.hidden * m.vocab;
  return asked > 0 ? head + (all - head) * run / asked : all;
}

/// Time, memory and rates of the plan on the pipeline rank `sh` describes.
void estimate_stage(const Context& ctx, const Sharding& sh, Estimate* out) {
  Estimate& e = *out;
  const ModelDesc& model = ctx.model;
  const System& system = ctx.system;
  const Plan& plan = ctx.plan;
  Schedule sched;
  CommPlan comm;
  for (const Strategy* s : all_strategies()) s->schedule(ctx, sh, &sched);
  for (const Strategy* s : all_strategies()) s->add_comm(ctx, sh, &comm);
  apply_hsdp_comm(ctx, &comm);
  add_amax_reductions(ctx, sh, &comm);
  apply_zeropp_comm(ctx, &comm);

  const LayerCost layer = layer_cost(ctx, sh);
  const LayerCost head = head_cost(ctx, sh);
  e.time = step_time(ctx, sh, sched, comm, layer, head);
  e.time.compute += zeropp_kernel_time(ctx, sh, sched);
  e.memory = memory_breakdown(ctx, sh, sched);
  apply_zeropp_memory(ctx, sh, &e.memory);
  apply_offload(ctx, sh, &e.memory, &e.time, &e.offload);
  apply_param_offload(ctx, sh, sched, layer, &e.memory, &e.time, &e.offload);

  const double tokens_per_step = 1.0 * plan.global_batch * plan.seq_len;
  const Seconds step = e.time.step();
  e.tokens_per_s = tokens_per_step / step.v;
  e.tokens_per_s_per_gpu = e.tokens_per_s / system.gpus;
  e.model_flops_per_token = required_flops_per_token(ctx, sh, layer);
  // The dense 16-bit peak (bf16, or fp16 on a GPU without bf16), also for fp8 and fp4 plans.
  const double peak = system.gpu.peak_for(system.gpu.sixteen_bit()).v * system.gpus;
  e.mfu = e.model_flops_per_token * e.tokens_per_s / peak;
  // Recompute FLOPs per token: one rank's per-layer recompute FLOPs x all layers x the tp x cp ranks that share
  // a micro-batch (tp or tsp, x cp), over the micro-batch's tokens.
  const double recompute_per_token =
      layer.recompute.flops * model.layers * plan.inner() / (1.0 * plan.micro_batch * plan.seq_len);
  e.hfu = (e.model_flops_per_token + recompute_per_token) * e.tokens_per_s / peak;
}

}  // namespace

Sharding unsharded(const Context& ctx) {
  const ModelDesc& m = ctx.model;
  Sharding sh;
  sh.batch = ctx.plan.micro_batch;
  sh.seq_q = sh.seq_kv = ctx.plan.seq_len;
  sh.tokens = sh.norm_tokens = sh.batch * sh.seq_q;
  sh.heads = m.heads;
  sh.kv_heads = m.kv_heads;
  sh.ffn = m.ffn_hidden;
  sh.vocab = m.vocab;
  sh.layers = m.layers;
  return sh;
}

Problems validate_plan(const ModelDesc& model, const System& system, const Plan& plan, const Framework& framework) {
  const Context ctx{model, system, plan, framework};
  Problems problems;
  // Limits first: every later check multiplies degrees and batches, which must not overflow.
  if (const std::string limit = plan_limit_violation(plan); !limit.empty()) return {{"plan_limits", limit}};
  validate_basics(ctx, &problems);
  for (const Strategy* s : all_strategies()) s->validate(ctx, &problems);
  validate_offload(ctx, &problems);
  validate_hsdp(ctx, &problems);
  validate_zeropp(ctx, &problems);
  validate_param_offload(ctx, &problems);
  validate_finetune(ctx, &problems);
  check_framework_rules(model, system, plan, framework, &problems);  // what the framework's launcher refuses
  return problems;
}

Estimate evaluate(const ModelDesc& model, const System& system, const Plan& plan, const Framework& framework) {
  Estimate e;
  e.plan = plan;
  e.problems = validate_plan(model, system, plan, framework);
  if (!e.problems.empty()) return e;

  const Context ctx{model, system, plan, framework};
  const Sharding sh = sharded(ctx);
  estimate_stage(ctx, sh, &e);
  // A custom pipeline layout: every distinct rank load, sharded by every strategy as its own; the slowest sets the
  // step, the fullest the memory.
  for (size_t i = 1; i < sh.rank_loads.size(); ++i) {
    Estimate o;
    o.plan = e.plan;
    o.problems = e.problems;
    estimate_stage(ctx, sharded(ctx, static_cast<int>(i)), &o);
    const MemoryBreakdown fullest = o.memory.total() > e.memory.total() ? o.memory : e.memory;
    const auto fuller = o.memory.total() > e.memory.total() ? o.offload : e.offload;
    if (o.time.step() > e.time.step()) e = o;
    e.memory = fullest;
    e.offload = fuller;
  }
  if (!e.memory.fits()) e.problems.push_back(oom_problem(e.memory));
  if (e.offload.host > system.host_memory_per_gpu) {
    const bool more = e.plan.param_offload || e.plan.activation_offload_layers > 0;
    e.problems.push_back({"oom_host", std::string("out of host memory: ") + (more ? "offload" : "optimizer offload") +
                                          " needs " + num(to_GiB(e.offload.host), "%.1f") + " GiB per GPU of " +
                                          num(to_GiB(system.host_memory_per_gpu), "%.1f") + " GiB"});
  }
  if (e.offload.nvme > system.nvme_per_gpu)
    e.problems.push_back({"oom_nvme", "out of NVMe: offload needs " + num(to_GiB(e.offload.nvme), "%.1f") +
                                          " GiB per GPU of " + num(to_GiB(system.nvme_per_gpu), "%.1f") + " GiB"});
  check_invariants(e);
  return e;
}

void check_invariants(const Estimate& e) {
  const TimeBreakdown& t = e.time;
  SHARDPLAN_CHECK(t.compute.v > 0 && std::isfinite(t.compute.v));
  SHARDPLAN_CHECK(t.recompute.v >= 0 && t.recompute <= t.compute);
  SHARDPLAN_CHECK(t.bubble.v >= 0 && t.optimizer.v >= 0 && t.host_transfer.v >= 0);
  for (Seconds c : t.exposed_comm) SHARDPLAN_CHECK(c.v >= 0 && std::isfinite(c.v));
  if (e.plan.tp == 1) SHARDPLAN_CHECK(t.exposed_comm[static_cast<int>(CommKind::tp)].v == 0);
  if (e.plan.pp == 1) SHARDPLAN_CHECK(t.bubble.v == 0);
  // Parameter offload moves every weight off the GPU (only the gathered layers stay, as buffers).
  SHARDPLAN_CHECK((e.memory.weights.v > 0 || e.plan.param_offload) && e.memory.activations.v >= 0);
}

}  // namespace shardplan
