#include "modeler/stage_params.h"

namespace shardplan {

namespace {
double layer_share(const Context& ctx, const Sharding& sh) { return sh.layers * params_per_layer(ctx.model) / sh.weight_shard; }
double tp_share(const Context& ctx, double params) { return params / ctx.plan.tp; }
}  // namespace

StageParams first_stage_params(const Context& ctx, const Sharding& sh) {
  StageParams p;
  p.layers = layer_share(ctx, sh);
  p.embedding = tp_share(ctx, embedding_params(ctx.model));
  if (ctx.plan.pp == 1) p.head = tp_share(ctx, lm_head_params(ctx.model));
  return p;
}

StageParams last_stage_params(const Context& ctx, const Sharding& sh) {
  if (ctx.plan.pp == 1) return first_stage_params(ctx, sh);
  StageParams p;
  p.layers = layer_share(ctx, sh);
  const double head = ctx.model.tied_embeddings ? 1.0 * ctx.model.vocab * ctx.model.hidden : lm_head_params(ctx.model);
  p.head = tp_share(ctx, head);
  return p;
}

StageParams busiest_stage_params(const Context& ctx, const Sharding& sh) {
  const StageParams first = first_stage_params(ctx, sh), last = last_stage_params(ctx, sh);
  return first.total() >= last.total() ? first : last;
}

}  // namespace shardplan
