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
  // Embedding lookup of the shifted ids and its scatter-add gradient; the shared output layer and the
  // cross-entropy once more (16-bit): the same parts as the decoder's ends.
  const OutputParts o = output_parts(ctx, sh);
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

  c.forward.time = o.embed_fwd + norms + concat + eh.fwd + (last.forward.time - mean.forward.time) + o.head_fwd;
  c.backward.time = o.embed_bwd + norms * 2.0 + eh.bwd +
                    (last.backward.time + last.recompute.time - mean.backward.time - mean.recompute.time) + o.head_bwd;
  c.forward.flops = eh.flops_fwd + (last.forward.flops - mean.forward.flops) + o.head_flops;
  c.backward.flops =
      (frozen ? 1.0 : 2.0) * (eh.flops_fwd + o.head_flops) + (last.backward.flops - mean.backward.flops);
  return c;
}

}  // namespace shardplan
