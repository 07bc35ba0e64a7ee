// The bash launch script the Megatron-LM and Megatron-DeepSpeed emitters write: torchrun over the nodes (one
// process per GPU), under Slurm or by hand, with the script's argument arrays.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "modeler/io/emit.h"

namespace shardplan::io::detail {

/// One bash array of command-line arguments, each flag with its values, quoted for bash.
class ScriptArgs {
 public:
  void add(const std::string& flag) { lines_.push_back({flag, {}}); }
  void add(const std::string& flag, const std::string& value) { lines_.push_back({flag, {value}}); }
  void add(const std::string& flag, const char* value) { add(flag, std::string(value)); }
  void add(const std::string& flag, int value) { add(flag, std::to_string(value)); }
  void add(const std::string& flag, const std::vector<std::string>& values) { lines_.push_back({flag, values}); }
  /// "NAME=(\n    --flag value\n    ...\n)\n"; values are double-quoted (a ${VAR:-x} default still expands).
  std::string bash(const std::string& name) const;

 private:
  std::vector<std::pair<std::string, std::vector<std::string>>> lines_;
};

/// "#!/usr/bin/env bash", the header, `set -euo pipefail`, the node layout (NNODES, GPUS_PER_NODE, NODE_RANK from
/// Slurm when set, MASTER_ADDR/PORT), `env`, the arrays, and `exec torchrun ... program "${ARRAY[@]}"...`.
std::string bash_script(const std::string& header, const System& system, const std::string& env,
                        const std::string& program, const std::vector<std::pair<std::string, ScriptArgs>>& arrays,
                        const std::string& preamble = "");

/// Megatron's model architecture flags (shared by Megatron-LM and Megatron-DeepSpeed where they agree).
void megatron_model_args(const ModelDesc& m, const Plan& p, EmitFormat f, ScriptArgs* a);

}  // namespace shardplan::io::detail
