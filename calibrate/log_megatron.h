// Megatron-LM logs (and Megatron-DeepSpeed's, which keep the same shapes; log_deepspeed.cc reuses these):
//  * the arguments block _print_args writes at start-up (megatron/training/arguments.py _print_args at d98e8a6;
//    Megatron-DeepSpeed megatron/arguments.py at 4efb479): a line "---...--- arguments ---...---", then one line
//    per argument "  NAME ..... VALUE" (dots pad NAME to 48 columns, Python's str() of the value), sorted, then
//    "---- end of arguments ----". It is printed after validate_args, so derived values (world_size,
//    data_parallel_size, virtual_pipeline_model_parallel_size, ffn_hidden_size) are in it;
//  * the iteration line training_log prints every --log-interval iterations (training.py at d98e8a6:
//    " [DATE] iteration N/ TOTAL | consumed samples: ... | elapsed time per iteration (ms): X | throughput per
//    GPU (TFLOP/s/GPU): Y | ... | global batch size: B | ..."): X and Y are averages over the interval;
//  * the memory report (megatron/training/utils/common_utils.py report_memory): "[Rank R] (after N iterations)
//    memory (MB) | allocated: A | max allocated: B | reserved: C | max reserved: D", MB meaning MiB;
//  * the tokenizer's " > padded vocab (size: V) with K dummy tokens (new size: W)" (megatron/core/tokenizers/utils/
//    build_tokenizer.py), the vocabulary the model is built with.
// A real excerpt of the iteration line: NVIDIA/Megatron-LM issue #756.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "calibrate/log_import.h"

namespace shardplan::calibrate::megatron {

/// The arguments of every arguments block in the log by name (a name stated twice with different values is an
/// error naming both lines); `start_line` is the first block's opening line, 0 when the log has none.
struct Arguments {
  std::map<std::string, Stated<std::string>> values;
  int start_line = 0;
};
Arguments read_arguments(const std::vector<std::string>& lines, const std::string& file);

/// Maps the arguments onto the run's settings (architecture, plan, batch, precision).
void settings_from_arguments(const Arguments& args, const std::string& file, LogSettings* s,
                             std::vector<std::string>* notes);

/// Reads the iteration lines, memory reports and padded-vocabulary line into `log`.
void read_training_lines(const std::vector<std::string>& lines, ParsedLog* log);

}  // namespace shardplan::calibrate::megatron
