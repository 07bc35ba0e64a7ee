// Megatron-Core's custom pipeline layout (--pipeline-model-parallel-layout, TransformerConfig
// pipeline_model_parallel_layout): which of the embedding, the transformer layers, the multi-token-prediction
// modules and the loss each virtual pipeline stage holds. Grammar and checks as Megatron-LM core_v0.14.0
// (23e00ed0) megatron/core/transformer/pipeline_parallel_layer_layout.py states them:
//   - stages are separated by '|' and listed in model order; stage i runs on pipeline rank i % pp as its virtual
//     chunk i / pp, so a layout of n stages has vpp = n / pp (arguments.py derives vpp from it);
//   - 'E' embedding, 't' transformer decoder layer, 'm' MTP module, 'L' loss (with the output layer);
//   - "(...)*N" repeats a parenthesised group (no nesting), "x*N" one character; ',' is cosmetic;
//   - validate_layer_layout: E first and L last in model order, once each; as many 't' as the model has layers
//     and 'm' as the run's mtp_num_layers; no 't' after the first 'm'; every 'm' in the final stage (the last
//     rank's last chunk, which holds L).
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace shardplan {

/// What one virtual stage (or, summed, one pipeline rank) holds.
struct LayoutStage {
  int decoders = 0;  // 't'
  int mtp = 0;       // 'm'
  bool embedding = false;
  bool loss = false;
};

struct PipelineLayout {
  std::vector<LayoutStage> stages;  // model order
  std::string elements;             // the unrolled element characters in model order, without '|'
};

/// Parses the layout string; nullopt with `*error` set when it breaks the grammar.
std::optional<PipelineLayout> parse_pipeline_layout(const std::string& text, std::string* error);
/// "" when the layout fits pp x vpp stages, `layers` transformer layers and `mtp_layers` MTP modules; otherwise
/// what is wrong, with the numbers.
std::string pipeline_layout_violation(const PipelineLayout& layout, int pp, int vpp, int layers, int mtp_layers);
/// What each of the pp ranks holds over its chunks (stage i on rank i % pp).
std::vector<LayoutStage> rank_loads(const PipelineLayout& layout, int pp);
/// The layout string of per-stage decoder counts in model order, with E on the first and `mtp` MTP modules and L
/// on the last (Megatron's spelling: "Et*4|t*4|tmL").
std::string pipeline_layout_string(const std::vector<int>& decoders_per_stage, int mtp = 0);

}  // namespace shardplan
