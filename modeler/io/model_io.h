// Reading model descriptions: the shardplan YAML schema (models/README.md) and Hugging Face config.json files.
// Every malformed, missing, misspelled or inconsistent value is a ConfigError naming file, line and key.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "modeler/model_desc.h"

namespace shardplan::io {

/// Upper bounds that catch unit or digit slips (hidden 40960000) long before any real model reaches them; the
/// YAML and config.json readers share them.
namespace model_limits {
inline constexpr int kMaxLayers = 10000;
inline constexpr int kMaxWidth = 1 << 20;  // hidden, ffn_hidden
inline constexpr int kMaxHeads = 1 << 16;  // heads, kv_heads, head_dim
inline constexpr int kMaxVocab = 1 << 24;
inline constexpr int kMaxPosition = 1 << 30;
}  // namespace model_limits

/// A model file: the architecture plus the provenance the tests check it against.
struct ModelFile {
  ModelDesc model;
  std::string source;                       // where the numbers come from (model card, config.json, paper table)
  std::optional<double> published_params;   // total parameters as the source states them
  std::optional<double> published_activated_params;  // MoE: parameters per token as the source states them
};

/// Parses a models/*.yaml description strictly (unknown keys rejected with a suggestion, all cross-field
/// problems reported together).
ModelFile parse_model_file(std::string_view text, const std::string& filename);
ModelDesc parse_model_yaml(std::string_view text, const std::string& filename);

/// Parses a Hugging Face config.json (hf_config.cc): dense Llama, Mistral, Qwen2, Qwen3; with allow_moe also
/// DeepseekV3, Qwen3Moe, Mixtral and GptOss; a quantization_config of block-scaled fp8 sets checkpoint_fp8_block. Without allow_moe an MoE config is a ConfigError (the CLI refuses MoE until the
/// MoE time model exists).
ModelDesc parse_hf_config(std::string_view json_text, const std::string& filename, bool allow_moe = false);

/// A name from models/ (models/<name>.yaml or .json), a path to a YAML file, or a path to a config.json. MoE
/// models, YAML or JSON, are refused unless allow_moe.
ModelDesc load_model(const std::string& name_or_path, bool allow_moe = false);

}  // namespace shardplan::io
