// Emitting a plan for launchers: a versioned shardplan plan JSON (degrees, batch, recompute, rank order and where
// each parallel group lands on the topology) and each framework's own format, spelled as the framework spells it
// (every name is in launcher_options.cc with its source). JSON through nlohmann, YAML through yaml-cpp; the
// torchtitan TOML and Megatron argument list are line formats written here.
#pragma once

#include <string>

#include "modeler/estimate.h"
#include "modeler/io/plan_json.h"
#include "modeler/system.h"

namespace shardplan::io {

enum class EmitFormat { json, megatron, torchtitan, deepspeed, nemo };

/// "json", "megatron", "torchtitan", "deepspeed" or "nemo"; ConfigError with a suggestion otherwise.
EmitFormat parse_emit_format(const std::string& name);
const char* to_string(EmitFormat f);

struct EmitInput {
  const Estimate& estimate;
  const System& system;
  std::string model;      // model name or file, for the header
  std::string framework;  // shardplan framework profile the plan was predicted with
  int layers = 0;         // transformer layers (for layers per virtual pipeline stage)
  bool moe = false;       // a mixture-of-experts model: write the expert-parallel settings
  const PlanInputs* inputs = nullptr;  // the flags the plan was searched with: --emit json records them (plan_json.h)
};

/// The plan in `format`; the text ends with a newline.
std::string emit_plan(EmitFormat format, const EmitInput& in);

}  // namespace shardplan::io
