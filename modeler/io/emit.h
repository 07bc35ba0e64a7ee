// Emitting a plan for launchers: a versioned shardplan plan JSON (degrees, batch, recompute, rank order and where
// each parallel group lands on the topology) and a complete launch unit per framework, spelled as that framework
// and release spell it (every name is in launcher_options_*.cc with its source): a bash script for Megatron-LM and
// Megatron-DeepSpeed (torchrun, nodes, GPUs per node, environment, model architecture and plan flags), torchtitan's
// current Python config or its v0.2.x TOML, and a Megatron-Bridge recipe override YAML. An emitter writes the whole
// plan or refuses with the setting it cannot express; a plan that breaks a framework rule (framework_rules.h) never
// reaches one. JSON through nlohmann, YAML through yaml-cpp; bash, TOML and Python are line formats written here.
#pragma once

#include <string>
#include <vector>

#include "modeler/estimate.h"
#include "modeler/framework.h"
#include "modeler/model_desc.h"
#include "modeler/io/plan_json.h"
#include "modeler/system.h"

namespace shardplan::io {

enum class EmitFormat { json, megatron, torchtitan, deepspeed, nemo, torchtitan_toml };

/// "json", "megatron", "torchtitan", "torchtitan-toml", "deepspeed" or "nemo"; ConfigError with a suggestion.
EmitFormat parse_emit_format(const std::string& name);
const char* to_string(EmitFormat f);
/// The framework profile whose plans and numbers a format writes ("megatron-lm", "torchtitan", "nemo",
/// "megatron-deepspeed"); nullptr for json, which writes any profile's plan.
const char* emit_profile(EmitFormat f);
/// What `--emit` without a format writes for plans of this profile: its launcher's format, else json.
EmitFormat default_emit_format(const Framework& f);
/// The context-parallel attention kinds a format can write, the one a search for it should prefer first;
/// emit_plan refuses a cp > 1 plan of another kind. Empty where the format writes no context parallelism
/// (Megatron-DeepSpeed: its framework rules refuse cp > 1 before the emitter sees a plan).
std::vector<CpKind> emit_cp_kinds(EmitFormat f);
/// Whether `f` can write a plan whose context parallelism is of kind `k`.
bool emit_writes_cp_kind(EmitFormat f, CpKind k);

struct EmitInput {
  const Estimate& estimate;
  const System& system;
  std::string model;      // model name or file, for the header
  std::string framework;  // shardplan framework profile the plan was predicted with
  int layers = 0;         // transformer layers
  bool moe = false;       // a mixture-of-experts model: write the expert-parallel settings
  /// The architecture, for the launch units' model flags (required by every format but json).
  const ModelDesc* desc = nullptr;
  const PlanInputs* inputs = nullptr;  // the flags the plan was searched with: --emit json records them (plan_json.h)
};

/// The plan in `format`; the text ends with a newline. ConfigError naming the setting a format cannot express.
std::string emit_plan(EmitFormat format, const EmitInput& in);

}  // namespace shardplan::io
