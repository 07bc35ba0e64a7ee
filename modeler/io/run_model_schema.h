// The inline model architecture that the published-runs and serving-runs files share (design.md: `name, layers,
// hidden, ffn_hidden, heads, kv_heads, head_dim, vocab, gated_mlp, tied_embeddings, moe, mla`): one strict reader
// for the keys both schemas read the same way, so their checks and messages cannot drift apart.
#pragma once

#include "modeler/io/yaml_reader.h"
#include "modeler/model_desc.h"

namespace shardplan::io {

/// name, layers, hidden, heads, kv_heads (default heads), head_dim (default hidden / heads; an error when that
/// leaves none), vocab, gated_mlp, tied_embeddings, qk_norm (none | per_head | full; default none). Not
/// ffn_hidden, moe or mla: the schemas differ on those.
void read_run_model_shape(MapReader& r, ModelDesc* m);
/// model.moe: experts, top_k, expert_ffn_hidden, shared_experts (0), dense_layers (0); finishes the reader.
MoeDesc read_run_model_moe(MapReader& r, const ModelDesc& m);
/// model.mla: DeepSeek-V2/V3 latent attention dimensions (q_lora_rank 0: queries projected directly).
MlaDesc read_run_model_mla(MapReader& r);
/// Grouped-query attention needs heads divisible by kv_heads; qk_norm needs q/k/v heads (not MLA).
void check_run_model_heads(const MapReader& r, const ModelDesc& m);

}  // namespace shardplan::io
