// DeepSpeed logs, alone or under Megatron-DeepSpeed:
//  * DeepSpeedConfig.print (deepspeed/runtime/config.py at edaa722): "DeepSpeedEngine configuration:" then one
//    logger line per attribute "  NAME ..... VALUE" (dots pad NAME to 29 columns), among them world_size (the
//    data-parallel world: config.py sets it from mpu's data-parallel group), train_batch_size,
//    train_micro_batch_size_per_gpu, gradient_accumulation_steps, zero_optimization_stage; then print_user_config
//    "  json = {...}", the user's config as json.dumps(indent=4, sort_keys=True);
//  * the throughput timer's line every steps_per_print steps (deepspeed/utils/timer.py ThroughputTimer.stop):
//    "epoch=E/micro_step=M/global_step=N, RunningAvgSamplesPerSec=R, CurrSamplesPerSec=C, MemAllocated=AGB,
//    MaxMemAllocated=BGB" (older releases: "E/N, RunningAvgSamplesPerSec=..."); C is the last step's
//    train_batch_size / seconds, GB are GiB (bytes / 1024**3), MaxMemAllocated the peak since start;
//  * under Megatron-DeepSpeed (4efb479) also Megatron's arguments block and iteration lines (log_megatron.h),
//    whose "elapsed time per iteration (ms)" is used when present.
// Real excerpts: deepspeedai/DeepSpeed issues #2629 (timer lines) and #4158 (the configuration print).
#include <climits>

#include <nlohmann/json.hpp>

#include "calibrate/log_megatron.h"

namespace shardplan::calibrate::detail {

namespace {

using logtext::at;
using nlohmann::json;

/// The message of a DeepSpeed logger line ("[DATE] [INFO] [config.py:N:print] MESSAGE"), or the line itself.
std::string message_of(const std::string& l, const char* func) {
  const std::string tag = std::string(":") + func + "] ";
  const size_t p = l.find(tag);
  return p == std::string::npos ? l : l.substr(p + tag.size());
}

}  // namespace

ParsedLog parse_deepspeed_log(const std::vector<std::string>& lines, const std::string& file) {
  ParsedLog log;
  log.file = file;
  LogSettings& s = log.settings;
  const megatron::Arguments args = megatron::read_arguments(lines, file);
  log.framework = args.start_line > 0 ? "megatron-deepspeed" : "other";
  if (args.start_line > 0) {
    megatron::settings_from_arguments(args, file, &s, &log.notes);
    // DeepSpeed, not Megatron's optimizer flags, decides the ZeRO stage and precision; they are read below (the
    // fork's own --zero-stage argument is checked against the DeepSpeed config).
    s.zero.reset();
    s.precision.reset();
    s.fp8_recipe.reset();
    if (const auto it = args.values.find("zero_stage"); it != args.values.end() && !logtext::is_none(it->second.value))
      state(s.zero, logtext::to_int(it->second.value, file, it->second.line, "zero_stage"), it->second.line,
            "zero_stage", file);
  }
  int config_line = 0;
  std::optional<Stated<int>> train_batch, world;
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string& l = lines[i];
    const int line = static_cast<int>(i + 1);
    if (l.find("DeepSpeedEngine configuration:") != std::string::npos) {
      if (config_line == 0) config_line = line;
      continue;
    }
    if (const std::string m = message_of(l, "print"); config_line > 0 && m.rfind("  ", 0) == 0) {
      const size_t name_end = m.find(' ', 2);
      const std::string name = m.substr(2, name_end == std::string::npos ? std::string::npos : name_end - 2);
      const size_t dots = name_end == std::string::npos ? std::string::npos : m.find_first_not_of('.', name_end + 1);
      const size_t start = dots == std::string::npos ? std::string::npos : m.find_first_not_of(' ', dots);
      const std::string value = start == std::string::npos ? "" : logtext::unquote(m.substr(start));
      if (name == "world_size") state(world, logtext::to_int(value, file, line, name), line, name, file);
      continue;
    }
    if (l.find("json = {") != std::string::npos) {
      // The user config: JSON from the "{" to the line holding its closing "}".
      std::string text = l.substr(l.find("json = {") + 7);
      size_t j = i;
      int depth = 0;
      for (char c : text) depth += c == '{' ? 1 : c == '}' ? -1 : 0;
      while (depth > 0 && ++j < lines.size()) {
        text += "\n" + lines[j];
        for (char c : lines[j]) depth += c == '{' ? 1 : c == '}' ? -1 : 0;
      }
      if (depth > 0)
        throw ConfigError(at(file, line) +
                          "the DeepSpeed config JSON opened here does not close: the "
                          "log is truncated");
      json cfg;
      try {
        cfg = json::parse(text);
      } catch (const json::exception& e) {
        throw ConfigError(at(file, line) + "the DeepSpeed config is not JSON: " + e.what());
      }
      const auto integer = [&](const json& v, const char* key) -> std::optional<int> {
        if (!v.contains(key) || v[key].is_null()) return std::nullopt;
        const json& x = v[key];
        if (!x.is_number_integer() || (x.is_number_unsigned() && x.get<unsigned long long>() > INT_MAX) ||
            (!x.is_number_unsigned() && (x.get<long long>() < INT_MIN || x.get<long long>() > INT_MAX)))
          throw ConfigError(at(file, line) + key + ": expected an integer that fits 32 bits, got " + x.dump());
        return x.get<int>();
      };
      // DeepSpeed reads "enabled" as a boolean (pydantic); a printed config holds true or false, or omits it.
      const auto enabled = [&](const char* key) {
        if (!cfg.contains(key) || !cfg[key].is_object() || !cfg[key].contains("enabled")) return false;
        const json& e = cfg[key]["enabled"];
        if (!e.is_boolean())
          throw ConfigError(at(file, line) + key + ".enabled: expected true or false, got " + e.dump());
        return e.get<bool>();
      };
      if (const auto b = integer(cfg, "train_batch_size")) state(train_batch, *b, line, "train_batch_size", file);
      if (const auto m = integer(cfg, "train_micro_batch_size_per_gpu"))
        state(s.micro_batch, *m, line, "train_micro_batch_size_per_gpu", file);
      int zero = 0;
      if (cfg.contains("zero_optimization") && cfg["zero_optimization"].is_object())
        zero = integer(cfg["zero_optimization"], "stage").value_or(0);
      state(s.zero, zero, line, "zero_optimization.stage", file);
      state(s.precision,
            std::string(enabled("bf16")   ? "bf16"
                        : enabled("fp16") ? "fp16"
                                          : "fp32"),
            line, "precision (bf16/fp16 enabled)", file);
      i = j;
      continue;
    }
  }
  if (config_line == 0 && !train_batch)
    throw ConfigError(file +
                      ": no DeepSpeed configuration print ('DeepSpeedEngine configuration:' and its "
                      "'json = {...}'); the batch and ZeRO stage cannot be read without it");
  if (train_batch) state(s.global_batch, train_batch->value, train_batch->line, "train_batch_size", file);
  if (world) state(s.dp, world->value, world->line, "world_size (data-parallel)", file);

  megatron::read_training_lines(lines, &log);
  if (!log.steps.empty()) return log;  // Megatron-DeepSpeed's iteration lines
  log.memory_kind = "MaxMemAllocated (torch.cuda.max_memory_allocated)";
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string& l = lines[i];
    if (l.find("CurrSamplesPerSec=") == std::string::npos) continue;
    const int line = static_cast<int>(i + 1);
    std::optional<double> step = logtext::number_after(l, "global_step=");
    if (!step) {  // older "E/N, RunningAvgSamplesPerSec=...": N before the comma
      const size_t comma = l.rfind(',', l.find("RunningAvgSamplesPerSec="));
      const size_t slash = comma == std::string::npos ? std::string::npos : l.rfind('/', comma);
      if (slash != std::string::npos) step = logtext::number_after(l.substr(slash, comma - slash), "/");
    }
    const auto rate = logtext::number_after(l, "CurrSamplesPerSec=");
    if (!step || !rate || *rate <= 0)
      throw ConfigError(at(file, line) + "a throughput-timer line without a readable step and CurrSamplesPerSec");
    if (!s.global_batch)
      throw ConfigError(at(file, line) + "a throughput-timer line before the DeepSpeed config states train_batch_size");
    StepRecord r;
    r.line = line;
    r.step = logtext::to_count(*step, file, line, "global step");
    r.step_time_s = s.global_batch->value / *rate;
    r.memory_gib = logtext::number_after(l, "MaxMemAllocated=");
    log.steps.push_back(r);
  }
  return log;
}

}  // namespace shardplan::calibrate::detail
