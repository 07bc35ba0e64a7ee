#include "modeler/stage_params.h"

#include <algorithm>

#include "modeler/finetune.h"

namespace shardplan {

namespace {
// Routed-expert parameters per transformer layer, averaged over the layers like params_per_layer.
double experts_per_layer(const ModelDesc& m) { return m.layers > 0 ? routed_expert_params(m) / m.layers : 0.0; }
double moe_layer_count(const ModelDesc& m) { return m.moe ? std::max(0, m.layers - m.moe->dense_layers) : 0.0; }

void set_layers(const Context& ctx, const Sharding& sh, StageParams* p) {
  const ModelDesc& m = ctx.model;
  const double experts = experts_per_layer(m);
  if (experts > 0 && sh.moe_layer_share >= 0.0) {
    // The rank's own layers (a custom layout): its MoE layers hold attention, norms, router, shared experts and
    // all routed experts, its dense layers (the first ones in model order) the dense MLP (model_desc.cc).
    const double moe = sh.layers * stage_moe_share(m, sh), dense = sh.layers - moe;
    const double routed = routed_expert_params(m) / moe_layer_count(m);  // one MoE layer's routed experts
    const double moe_rest = layer_params(m, m.layers - 1) - routed;
    const double dense_layer = m.moe->dense_layers > 0 ? layer_params(m, 0) : 0.0;
    p->layers = (moe * moe_rest + dense * dense_layer) / sh.weight_shard;
    p->experts = moe * routed / sh.expert_weight_shard;
  } else if (experts > 0) {
    p->layers = sh.layers * (params_per_layer(m) - experts) / sh.weight_shard;
    p->experts = sh.layers * experts / sh.expert_weight_shard;
  } else {
    p->layers = sh.layers * params_per_layer(m) / sh.weight_shard;
  }
}
double vocab_share(const Sharding& sh, double params) { return params / sh.embedding_shard; }
// The final norm before the LM head, replicated on every rank of the last stage.
double final_norm_params(const ModelDesc& m) { return non_embedding_params(m) - m.layers * params_per_layer(m); }
}  // namespace

double stage_moe_share(const ModelDesc& m, const Sharding& sh) {
  if (!m.moe || m.layers <= 0) return 0.0;
  const double mean = moe_layer_count(m) / m.layers;
  if (sh.moe_layer_share < 0.0 || sh.layers <= 0) return mean;
  const double mtp = sh.ends ? std::min<double>(sh.ends->mtp, sh.layers) : 0.0;
  const double last = is_moe_layer(m, m.layers - 1) ? 1.0 : 0.0;
  return (sh.moe_layer_share * (sh.layers - mtp) + last * mtp) / sh.layers;
}

StageParams first_stage_params(const Context& ctx, const Sharding& sh) {
  StageParams p;
  set_layers(ctx, sh, &p);
  p.embedding = vocab_share(sh, embedding_params(ctx.model));
  if (ctx.plan.pp == 1) {
    p.head = vocab_share(sh, lm_head_params(ctx.model));
    p.final_norm = final_norm_params(ctx.model);
  }
  return p;
}

StageParams last_stage_params(const Context& ctx, const Sharding& sh) {
  if (ctx.plan.pp == 1) return first_stage_params(ctx, sh);
  StageParams p;
  set_layers(ctx, sh, &p);
  const double head = ctx.model.tied_embeddings ? 1.0 * ctx.model.vocab * ctx.model.hidden : lm_head_params(ctx.model);
  p.head = vocab_share(sh, head);
  p.final_norm = final_norm_params(ctx.model);
  return p;
}

StageParams busiest_stage_params(const Context& ctx, const Sharding& sh) {
  if (sh.ends) {
    const Sharding::StageEnds& e = *sh.ends;
    const ModelDesc& m = ctx.model;
    StageParams p;
    set_layers(ctx, sh, &p);
    if (e.embedding) p.embedding = vocab_share(sh, embedding_params(m));
    if (e.loss) {
      const double head = m.tied_embeddings && !e.embedding ? 1.0 * m.vocab * m.hidden : lm_head_params(m);
      p.head = vocab_share(sh, head);
      p.final_norm = final_norm_params(m);
    }
    if (e.mtp > 0) {
      const double eh_proj = 2.0 * m.hidden * m.hidden / sh.weight_shard, norms = 3.0 * m.hidden;
      p.mtp = e.mtp * (eh_proj + norms) + (e.embedding ? 0.0 : vocab_share(sh, 1.0 * m.vocab * m.hidden));
    }
    return p;
  }
  const StageParams first = first_stage_params(ctx, sh), last = last_stage_params(ctx, sh);
  return first.total() >= last.total() ? first : last;
}

double owned_state_params(const Context& ctx, const Sharding& sh, bool gradients) {
  const StageParams p = busiest_stage_params(ctx, sh);
  const double dense = sh.grad_fraction == 1.0 ? p.dense() : p.layers * sh.grad_fraction + p.embedding + p.head;
  const double dp_div = gradients ? sh.dp_shard_gradients : sh.dp_shard_optimizer;
  const double edp_div = gradients ? sh.edp_shard_gradients : sh.edp_shard_optimizer;
  // Frozen base weights (fine-tuning) have neither: only the trainable share does (finetune.h).
  return (dense / dp_div + p.experts * sh.grad_fraction / edp_div) * trainable_share(ctx.model, ctx.plan);
}

}  // namespace shardplan
