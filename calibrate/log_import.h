// Importing training runs from the logs the frameworks print (`shardplan calibrate import-log`, docs/import-log.md):
// each framework's parser (log_megatron.cc, log_nemo.cc, log_torchtitan.cc, log_deepspeed.cc, log_foundry.cc)
// reads what the log states about the run (architecture, plan, batch) with the line it came from, and the
// per-step records; this file turns one parsed log into a run of the published-runs schema (design.md contract):
// warm-up steps dropped, step time and memory the median of the steady-state steps.
//
// Rules every parser keeps (tests/calibrate/log_*_test.cc):
//  * a value stated twice with different values (two arguments blocks that disagree, a config key and its alias)
//    is an error naming both lines; a settings block that is opened but not closed (a truncated log) is an error
//    naming the line it opened at; a log with no step records, or none left after the warm-up, is an error;
//  * lines are read after removing ANSI colour codes (torchtitan colours its step line) and launcher prefixes
//    ("[rank0]:", "[default0]:" from torchrun --tee, "0: " from srun --label), and CRLF line ends;
//  * no std::regex (nccl_tests_log.h says why): the lines are scanned with find and from_chars (log_text.h).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "calibrate/log_text.h"
#include "modeler/model_desc.h"
#include "modeler/problems.h"

namespace shardplan::calibrate {

enum class LogFramework { megatron, nemo, torchtitan, deepspeed, llm_foundry };

/// "megatron", "nemo", "torchtitan", "deepspeed" or "llm-foundry"; ConfigError with a suggestion otherwise.
LogFramework parse_log_framework(const std::string& name);
const char* to_string(LogFramework f);

/// A value a log states, with its (1-based) line.
template <class T>
struct Stated {
  T value{};
  int line = 0;
};

/// The run's settings as the log states them; absent: the log does not say.
struct LogSettings {
  // Architecture.
  std::optional<Stated<int>> layers, hidden, ffn_hidden, heads, kv_heads, head_dim, vocab, seq_len;
  std::optional<Stated<bool>> gated_mlp, tied_embeddings;
  std::optional<Stated<int>> experts, top_k, expert_ffn_hidden, shared_experts, dense_layers;
  // Plan and batch.
  std::optional<Stated<int>> gpus, tp, pp, vpp, cp, ep, etp, dp, zero, micro_batch, global_batch, recompute_num_layers;
  /// Sequences per data-parallel rank per step, where the global batch follows from it (torchtitan's
  /// global_batch_size -1: local_batch_size x data-parallel size).
  std::optional<Stated<int>> local_batch;
  std::optional<Stated<bool>> sequence_parallel, tp_comm_overlap;
  std::optional<Stated<std::string>> recompute;   // none selective full
  std::optional<Stated<std::string>> precision;   // bf16 fp16 fp8 mxfp8 nvfp4 fp32 (the schema's names)
  std::optional<Stated<std::string>> fp8_recipe;  // delayed tensorwise blockwise mxfp8 nvfp4
  /// A models/ name the log's model identifies (torchtitan's flavour), used when --model is not given.
  std::optional<Stated<std::string>> model_hint;
};

/// One logged training step (or one log interval: frameworks that log every k steps average over them).
struct StepRecord {
  int line = 0;
  long step = 0;                               // the iteration number the line names
  double step_time_s = 0;                      // seconds per iteration; 0 when the line gives throughput only
  std::optional<double> tokens_per_s_per_gpu;  // torchtitan's tps, from which the step time follows
  std::optional<double> tflops_per_gpu;
  std::optional<double> memory_gib;  // the peak the line reports (GiB = 2^30 bytes)
  std::optional<int> global_batch;   // the batch the line names (a batch-size ramp makes it differ)
};

struct ParsedLog {
  std::string file;
  std::string framework;  // the published-runs framework name (megatron-lm, nemo, torchtitan, ...)
  LogSettings settings;
  std::vector<StepRecord> steps;
  std::vector<Stated<double>> memory_gib;  // peak-memory reports outside the step lines (Megatron's report)
  std::string memory_kind;                 // what the peak is: "max reserved", "max allocated", ...
  std::vector<std::string> notes;          // what the parser assumed, for the run's notes
};

/// Records `v` in `slot`; a second statement with another value is a ConfigError naming both lines.
template <class T>
void state(std::optional<Stated<T>>& slot, const T& v, int line, const std::string& key, const std::string& file) {
  if (slot && !(slot->value == v))
    throw ConfigError(logtext::at(file, line) + key + " " + logtext::show(v) + " contradicts " +
                      logtext::show(slot->value) + " stated at line " + std::to_string(slot->line));
  if (!slot) slot = Stated<T>{v, line};
}

/// Parses one log of framework `f`.
ParsedLog parse_log(LogFramework f, std::string_view text, const std::string& file);

namespace detail {
// One parser per framework (calibrate/log_<framework>.cc); parse_log dispatches to them.
ParsedLog parse_megatron_log(const std::vector<std::string>& lines, const std::string& file);
ParsedLog parse_nemo_log(const std::vector<std::string>& lines, const std::string& file);
ParsedLog parse_torchtitan_log(const std::vector<std::string>& lines, const std::string& file);
ParsedLog parse_deepspeed_log(const std::vector<std::string>& lines, const std::string& file);
ParsedLog parse_foundry_log(const std::vector<std::string>& lines, const std::string& file);
}  // namespace detail

/// What the command line adds to a log.
struct ImportOptions {
  const ModelDesc* model = nullptr;  // --model (checked against the log's architecture); null: the log's
  std::string model_name;
  std::string gpu;  // GPU profile name (system.gpu)
  int gpus = 0;     // --gpus, or the cluster's; the log's world size wins when it states one
  int gpus_per_node = 0, nvlink_domain = 0;
  int seq_len = 0;  // --seq, for logs that do not state it (plain DeepSpeed); checked otherwise
  int warmup_steps = 10;
  std::string id;  // run id ("" : the file name's stem)
};

/// The steps after warm-up: the first logged step is always warm-up (it carries start-up: compilation, NCCL
/// set-up, the allocator's first growth), and so is every step up to `warmup_steps` iterations after it. Steps
/// whose global batch differs from the run's (a batch-size ramp) are dropped too.
struct SteadyState {
  std::vector<StepRecord> kept;
  int warmup_dropped = 0, ramp_dropped = 0;
};
SteadyState steady_state(const ParsedLog& log, int warmup_steps, std::optional<int> global_batch);

/// One imported run, ready to write (a published-runs entry).
struct ImportedRun {
  std::string id, source, framework, precision, fp8_recipe, recompute, notes, derived_from;
  ModelDesc model;
  std::string gpu;
  int gpus = 0, gpus_per_node = 0, nvlink_domain = 0;
  int tp = 1, pp = 1, vpp = 1, dp = 1, cp = 1, ep = 1, zero = 0, global_batch = 0, seq_len = 0;
  std::optional<int> etp, micro_batch, recompute_num_layers;
  std::optional<bool> sequence_parallel, tp_comm_overlap;
  double step_time_s = 0, tokens_per_s_per_gpu = 0;
  std::optional<double> model_tflops_per_gpu, peak_memory_gib;
  int steps_kept = 0, warmup_dropped = 0;
};

/// Completes a parsed log with the options into a run; ConfigError naming file and line for what is missing or
/// contradicts --model.
ImportedRun build_run(const ParsedLog& log, const ImportOptions& opts);

}  // namespace shardplan::calibrate
