// Every option name the launcher emitters write, per format, with the source that defines it. Tests check each
// emitted name against this list, so a misspelled flag fails a test rather than a user's job. One file per
// framework (launcher_options_<framework>.cc).
#pragma once

#include <string>
#include <vector>

namespace shardplan::io {

struct LauncherOption {
  /// "megatron" (Megatron-LM flags), "megatron-deepspeed" (its flags), "deepspeed" (config JSON keys),
  /// "torchtitan" (main's Trainer.Config attribute paths), "torchtitan-toml" (v0.2.2 keys), "nemo" (Megatron-Bridge
  /// ConfigContainer paths).
  const char* format;
  const char* name;    // a flag ("--micro-batch-size") or a dotted key ("parallelism.tensor_parallel_degree")
  const char* source;  // where the name is defined
};

const std::vector<LauncherOption>& launcher_options();
bool is_launcher_option(const std::string& format, const std::string& name);

namespace detail {
void append_megatron_options(std::vector<LauncherOption>* out);
void append_deepspeed_options(std::vector<LauncherOption>* out);
void append_torchtitan_options(std::vector<LauncherOption>* out);
void append_nemo_options(std::vector<LauncherOption>* out);
}  // namespace detail

}  // namespace shardplan::io
