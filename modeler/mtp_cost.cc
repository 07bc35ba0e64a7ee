#include "modeler/mtp_cost.h"

#include "modeler/finetune.h"
#include "modeler/gemm_model.h"
#include "modeler/layer_parts.h"
#include "modeler/memory_model.h"

namespace shardplan {

namespace {

/// The model with every layer of its last layer's kind (MoE or dense MLP, sliding or full attention).
ModelDesc last_layer_kind(const ModelDesc& m) {
  ModelDesc k = m;
  const int last = m.layers - 1;
  if (k.moe) {
    if (is_moe_layer(m, last))
      k.moe->dense_layers = 0;
    else
      k.moe.reset();
  }
  if (k.sliding_window > 0) {
    if (is_sliding_layer(m, last))
      k.full_attention_every = 0;  // every layer slides
    else
      k.sliding_window = k.full_attention_every = 0;
  }
  return k;
}

}  // namespace

LayerCost mtp_module_cost(const Context& ctx, const Sharding& sh) {
  const ModelDesc& m = ctx.model;
  const Gpu& g = ctx.system.gpu;
  const double T = sh.tokens, Tn = sh.norm_tokens, h = m.hidden;
  const bool frozen = base_frozen(ctx.plan);
  LayerCost c;
  // Embedding lookup of the shifted ids (as head_cost's) and its scatter-add gradient.
  const Bytes embed(T * h * kActBytes * 2.0);
  // enorm, hnorm and final_layernorm (one read and one write each; backward about twice), the concatenation.
  const Seconds norms = memory_time(g, Bytes(2.0 * Tn * h * kActBytes)) * 3.0;
  const Seconds concat = memory_time(g, Bytes(2.0 * 2.0 * Tn * h * kActBytes));
  // eh_proj: [T, 2h] -> the rank's h / tp output columns.
  const Linear eh = sharded_linear(ctx, T, h * sh.heads / m.heads, 2.0 * h, sh.gemm_splits, true);
  // The last layer's kind against the mean layer the stage's layers count for the module.
  const ModelDesc kind = last_layer_kind(m);
  const Context kind_ctx{kind, ctx.system, ctx.plan, ctx.framework};
  // The module's own layer is of the last kind whatever the rank's other layers are: the kind model's share, not
  // the rank's (Sharding::moe_layer_share).
  Sharding kind_sh = sh;
  kind_sh.moe_layer_share = -1;
  const LayerCost last = layer_cost(kind_ctx, kind_sh), mean = layer_cost(ctx, sh);
  // The shared output layer and the cross-entropy (16-bit, as head_cost's).
  const Dtype d = sixteen_bit_gemm(ctx);
  const Seconds ce = memory_time(g, Bytes(T * sh.vocab * ctx.framework.loss_traffic_per_logit(ctx.plan.tp)));
  const Seconds head_fwd = gemm_time(g, d, T, sh.vocab, h) + ce / 2.0;
  const Seconds head_bwd =
      gemm_time(g, d, T, h, sh.vocab) + (frozen ? Seconds(0) : gemm_time(g, d, h, sh.vocab, T)) + ce / 2.0;
  const double head_flops = 2.0 * T * sh.vocab * h;

  c.forward.time = memory_time(g, embed) + norms + concat + eh.fwd + (last.forward.time - mean.forward.time) +
                   head_fwd;
  c.backward.time = (frozen ? Seconds(0) : memory_time(g, embed * 2.0)) + norms * 2.0 + eh.bwd +
                    (last.backward.time + last.recompute.time - mean.backward.time - mean.recompute.time) + head_bwd;
  c.forward.flops = eh.flops_fwd + (last.forward.flops - mean.forward.flops) + head_flops;
  c.backward.flops = (frozen ? 1.0 : 2.0) * (eh.flops_fwd + head_flops) + (last.backward.flops - mean.backward.flops);
  return c;
}

}  // namespace shardplan
