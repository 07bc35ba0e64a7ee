// Every option name the launcher emitters write, per format, with the source that defines it. Tests check each
// emitted name against this list, so a misspelled flag fails a test rather than a user's job.
#pragma once

#include <string>
#include <vector>

namespace shardplan::io {

struct LauncherOption {
  const char* format;  // "megatron", "torchtitan", "deepspeed", "nemo"
  const char* name;    // Megatron: the flag ("--micro-batch-size"); others: dotted key ("parallelism.tensor_parallel_degree")
  const char* source;  // where the name is defined
};

const std::vector<LauncherOption>& launcher_options();
bool is_launcher_option(const std::string& format, const std::string& name);

}  // namespace shardplan::io
