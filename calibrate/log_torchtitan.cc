// torchtitan logs:
//  * the job config dump "Running with configs: {JSON}" (json.dumps(indent=2) of the config's to_dict, written
//    when --job.print_config / debug.print_config is set: torchtitan/config/job_config.py at v0.2.2, trainer.py
//    maybe_log at main b5bcd76). Sections and keys are the TOML/dataclass ones: parallelism.*, training.*,
//    activation_checkpoint.mode, model.{name,flavor,converters}, compile.*, quantize.linear.float8.recipe_name;
//  * the step line MetricsProcessor.log writes every metrics.log_freq steps and at step 1
//    (torchtitan/components/metrics.py): "step: N  loss: L  grad_norm: G  memory: X GiB(P%)  tps: T  tflops: F
//    mfu: M%", colour codes around each field; memory is the peak reserved since the last log, tps the tokens
//    per second per GPU (ntokens / (time x non-data-parallel size)), no step time (it follows from tps).
// A real excerpt: pytorch/torchtitan pull request #2389.
#include <climits>

#include <nlohmann/json.hpp>

#include "calibrate/log_import.h"

namespace shardplan::calibrate::detail {

namespace {

using logtext::at;
using nlohmann::json;

/// The dump's JSON text from the line holding "Running with configs:" to the brace that closes it.
std::string dump_text(const std::vector<std::string>& lines, size_t open, const std::string& file, size_t* last) {
  std::string text = lines[open].substr(lines[open].find("Running with configs:") + 21);
  int depth = 0;
  bool in_string = false, escaped = false, started = false;
  for (size_t i = open; i < lines.size(); ++i) {
    const std::string& l = i == open ? text : lines[i];
    if (i != open) text += "\n" + l;
    for (char c : l) {
      if (in_string) {
        if (escaped)
          escaped = false;
        else if (c == '\\')
          escaped = true;
        else if (c == '"')
          in_string = false;
        continue;
      }
      if (c == '"') in_string = true;
      if (c == '{') ++depth, started = true;
      if (c == '}') --depth;
    }
    if (started && depth == 0) {
      *last = i;
      return text;
    }
  }
  throw ConfigError(at(file, static_cast<int>(open + 1)) +
                    "the config dump opened here does not close: the log is "
                    "truncated");
}

/// The line of `"key":` inside the dump, for messages; the dump's first line if not found.
int line_of(const std::vector<std::string>& lines, size_t open, size_t last, const std::string& key) {
  const std::string needle = "\"" + key + "\":";
  for (size_t i = open; i <= last; ++i)
    if (lines[i].find(needle) != std::string::npos) return static_cast<int>(i + 1);
  return static_cast<int>(open + 1);
}

/// The models/ name of a torchtitan flavour (torchtitan/models/*/__init__.py at v0.2.2).
std::string model_name(const std::string& name, const std::string& flavor) {
  if (name == "llama3" && flavor == "8B") return "llama-3-8b";
  if (name == "llama3" && flavor == "70B") return "llama-3-70b";
  if (name == "llama3" && flavor == "405B") return "llama-3.1-405b";
  if (name == "deepseek_v3" && flavor == "671B") return "deepseek-v3";
  return "";
}

}  // namespace

ParsedLog parse_torchtitan_log(const std::vector<std::string>& lines, const std::string& file) {
  ParsedLog log;
  log.file = file;
  log.framework = "torchtitan";
  log.memory_kind = "peak reserved memory (the step line's memory: field)";
  LogSettings& s = log.settings;
  bool have_config = false;
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string& l = lines[i];
    if (l.find("Running with configs:") != std::string::npos) {
      size_t last = i;
      const std::string text = dump_text(lines, i, file, &last);
      json j;
      try {
        j = json::parse(text);
      } catch (const json::exception& e) {
        throw ConfigError(at(file, static_cast<int>(i + 1)) + "the config dump is not JSON: " + e.what());
      }
      if (!j.is_object()) throw ConfigError(at(file, static_cast<int>(i + 1)) + "the config dump is not an object");
      have_config = true;
      const auto get = [&](const char* section, const char* key) -> const json* {
        const json* p = &j;
        for (std::string part : {std::string(section), std::string(key)}) {
          size_t dot;
          while ((dot = part.find('.')) != std::string::npos) {
            if (!p->is_object() || !p->contains(part.substr(0, dot))) return nullptr;
            p = &(*p)[part.substr(0, dot)];
            part = part.substr(dot + 1);
          }
          if (!p->is_object() || !p->contains(part)) return nullptr;
          p = &(*p)[part];
        }
        return p->is_null() ? nullptr : p;
      };
      const auto integer = [&](const char* section, const char* key) -> std::optional<Stated<int>> {
        const json* v = get(section, key);
        if (!v) return std::nullopt;
        const int line = line_of(lines, i, last, key);
        if (!v->is_number_integer() || (v->is_number_unsigned() && v->get<unsigned long long>() > INT_MAX) ||
            (!v->is_number_unsigned() && (v->get<long long>() < INT_MIN || v->get<long long>() > INT_MAX)))
          throw ConfigError(at(file, line) + section + "." + key + ": expected an integer that fits 32 bits, got " +
                            v->dump());
        return Stated<int>{v->get<int>(), line};
      };
      const auto text_of = [&](const char* section, const char* key) -> std::optional<Stated<std::string>> {
        const json* v = get(section, key);
        if (!v || !v->is_string()) return std::nullopt;
        return Stated<std::string>{v->get<std::string>(), line_of(lines, i, last, key)};
      };
      const auto boolean = [&](const char* section, const char* key) -> std::optional<Stated<bool>> {
        const json* v = get(section, key);
        if (!v) return std::nullopt;
        const int line = line_of(lines, i, last, key);
        if (!v->is_boolean())
          throw ConfigError(at(file, line) + section + "." + key + ": expected true or false, got " + v->dump());
        return Stated<bool>{v->get<bool>(), line};
      };
      const auto put = [&](std::optional<Stated<int>>& slot, const std::optional<Stated<int>>& v, const char* k) {
        if (v) state(slot, v->value, v->line, k, file);
      };
      const int open_line = static_cast<int>(i + 1);
      const auto tp = integer("parallelism", "tensor_parallel_degree");
      const auto pp = integer("parallelism", "pipeline_parallel_degree");
      const auto cp = integer("parallelism", "context_parallel_degree");
      put(s.tp, tp, "tensor_parallel_degree");
      put(s.pp, pp, "pipeline_parallel_degree");
      put(s.cp, cp, "context_parallel_degree");
      put(s.ep, integer("parallelism", "expert_parallel_degree"), "expert_parallel_degree");
      const auto replicate = integer("parallelism", "data_parallel_replicate_degree");
      const auto shard = integer("parallelism", "data_parallel_shard_degree");
      const int rep = replicate ? replicate->value : 1, sh = shard ? shard->value : -1;
      // FSDP2 shards over dp_shard (-1: every rank the other degrees leave); dp_replicate alone is DDP. Reshard
      // after forward: "always" keeps parameters sharded (ZeRO-3), "never" keeps them gathered (ZeRO-2),
      // "default" reshards except with pipelining (torchtitan/distributed/... fully_shard policy).
      if (sh > 0) {
        if (rep < 1 || 1LL * rep * sh > (1 << 24))
          throw ConfigError(at(file, shard->line) + "data-parallel degrees " + std::to_string(rep) + " x " +
                            std::to_string(sh) + " out of range");
        state(s.dp, rep * sh, shard->line, "data-parallel size", file);
      }
      const int pp_degree = pp ? pp->value : 1;
      if (sh != 1) {
        const auto reshard = text_of("parallelism", "fsdp_reshard_after_forward");
        const std::string policy = reshard ? reshard->value : "default";
        const bool full = policy == "always" || (policy == "default" && pp_degree == 1);
        state(s.zero, full ? 3 : 2, reshard ? reshard->line : open_line, "fsdp_reshard_after_forward", file);
      } else {
        state(s.zero, 0, shard->line, "data_parallel_shard_degree", file);
      }
      // Virtual stages: module parts per pipeline rank (explicit parts, or layers per stage), 1 for 1F1B/GPipe.
      if (pp_degree > 1) {
        const auto schedule = text_of("parallelism", "pipeline_parallel_schedule");
        int vpp = 1;
        if (const json* parts = get("parallelism", "module_fqns_per_model_part"); parts && parts->is_array())
          vpp = static_cast<int>(parts->size()) / pp_degree;
        else if (schedule && (schedule->value == "Interleaved1F1B" || schedule->value == "InterleavedZeroBubble" ||
                              schedule->value == "ZBVZeroBubble" || schedule->value == "DualPipeV"))
          vpp = 2;  // torchtitan's looped schedules default to two stages per rank
        state(s.vpp, std::max(1, vpp), schedule ? schedule->line : open_line, "pipeline stages per rank", file);
        put(s.micro_batch, integer("parallelism", "pipeline_parallel_microbatch_size"), "microbatch size");
      }
      // Batch: v0.2.2 counts sequences (local_batch_size per data-parallel rank, global_batch_size, -1: local x
      // dp); main counts tokens (num_tokens_per_microbatch_per_dp_rank, num_tokens_per_train_step).
      const auto seq =
          integer("training", "seq_len") ? integer("training", "seq_len") : integer("training", "max_context_length");
      put(s.seq_len, seq, "seq_len");
      if (const auto local = integer("training", "local_batch_size")) {
        if (pp_degree == 1) state(s.micro_batch, local->value, local->line, "local_batch_size", file);
        const auto global = integer("training", "global_batch_size");
        if (global && global->value > 0)
          state(s.global_batch, global->value, global->line, "global_batch_size", file);
        else
          state(s.local_batch, local->value, local->line, "local_batch_size", file);
      }
      if (seq && seq->value > 0) {
        if (const auto step_tokens = integer("training", "num_tokens_per_train_step");
            step_tokens && step_tokens->value > 0)
          state(s.global_batch, static_cast<int>(step_tokens->value / seq->value), step_tokens->line,
                "num_tokens_per_train_step / seq", file);
        if (const auto mb = integer("training", "num_tokens_per_microbatch_per_dp_rank"))
          state(s.micro_batch, static_cast<int>(mb->value / seq->value), mb->line, "tokens per microbatch / seq", file);
      }
      const int tp_degree = tp ? tp->value : 1;
      if (const auto sp = boolean("parallelism", "enable_sequence_parallel"))
        state(s.sequence_parallel, sp->value && tp_degree > 1, sp->line, "enable_sequence_parallel", file);
      else  // v0.2.2's TP plans shard the norms over the sequence (SequenceParallel) whenever TP is on
        state(s.sequence_parallel, tp_degree > 1, open_line, "sequence parallel", file);
      auto async_tp = boolean("parallelism", "enable_async_tensor_parallel");
      if (!async_tp) async_tp = boolean("compile", "enable_async_tensor_parallel");
      if (async_tp) state(s.tp_comm_overlap, async_tp->value, async_tp->line, "async tensor parallel", file);
      const auto mode = text_of("activation_checkpoint", "mode");
      // main writes the activation-checkpoint config object, or null when there is none (no recompute).
      if (!mode && j.contains("activation_checkpoint") && j["activation_checkpoint"].is_null())
        state(s.recompute, std::string("none"), line_of(lines, i, last, "activation_checkpoint"),
              "activation_checkpoint", file);
      else if (!mode && j.contains("activation_checkpoint"))
        log.notes.push_back(
            "activation_checkpoint has no mode (torchtitan main's config object): recompute left "
            "unstated");
      if (mode) {
        if (mode->value != "none" && mode->value != "selective" && mode->value != "full")
          throw ConfigError(at(file, mode->line) + "activation_checkpoint.mode '" + mode->value +
                            "' has no schema equivalent (none, selective, full)");
        state(s.recompute, mode->value, mode->line, "activation_checkpoint.mode", file);
        // Full activation checkpointing wraps every transformer block (torchtitan/distributed/
        // activation_checkpoint.py): the schema's recompute_num_layers 0.
        if (mode->value == "full") state(s.recompute_num_layers, 0, mode->line, "activation_checkpoint.mode", file);
      }
      // Precision: bf16 mixed precision unless mixed_precision_param is float32; a float8 or MX converter makes
      // the linears fp8 (tensorwise scaling; rowwise has no schema recipe and is left unstated).
      std::string precision = "bf16";
      int precision_line = open_line;
      if (const auto param = text_of("training", "mixed_precision_param"); param && param->value == "float32")
        precision = "fp32", precision_line = param->line;
      if (const json* conv = get("model", "converters"); conv && conv->is_array()) {
        for (const json& c : *conv) {
          const std::string name = c.is_string() ? c.get<std::string>() : "";
          const int line = line_of(lines, i, last, "converters");
          if (name.find("float8") != std::string::npos) {
            precision = "fp8", precision_line = line;
            const auto recipe = text_of("quantize.linear.float8", "recipe_name");
            if (!recipe || recipe->value == "tensorwise")
              state(s.fp8_recipe, std::string("tensorwise"), recipe ? recipe->line : line, "float8 recipe", file);
            else
              log.notes.push_back("float8 recipe '" + recipe->value + "' has no schema name; fp8_recipe left null");
          } else if (name.find(".mx") != std::string::npos || name == "mx") {
            precision = "mxfp8", precision_line = line;
          }
        }
      }
      state(s.precision, precision, precision_line, "precision", file);
      // v0.2.2: model.name / model.flavor; main: model_spec.name / model_spec.flavor.
      const auto name = text_of("model", "name") ? text_of("model", "name") : text_of("model_spec", "name");
      const auto flavor = text_of("model", "flavor") ? text_of("model", "flavor") : text_of("model_spec", "flavor");
      if (name && flavor) {
        const std::string known = model_name(name->value, flavor->value);
        if (!known.empty()) state(s.model_hint, known, flavor->line, "model flavor", file);
      }
      i = last;
      continue;
    }
    // The step line: "step:" and "tps:" on one line (validation lines carry no tps).
    if (l.find("step:") != std::string::npos && l.find("tps:") != std::string::npos) {
      const auto step = logtext::number_after(l, "step:");
      const auto tps = logtext::number_after(l, "tps:");
      if (!step || !tps || *tps <= 0)
        throw ConfigError(at(file, static_cast<int>(i + 1)) + "a step line without a readable step and tps");
      StepRecord r;
      r.line = static_cast<int>(i + 1);
      r.step = logtext::to_count(*step, file, r.line, "step");
      r.tokens_per_s_per_gpu = *tps;
      r.tflops_per_gpu = logtext::number_after(l, "tflops:");
      r.memory_gib = logtext::number_after(l, "memory:");
      log.steps.push_back(r);
    }
  }
  if (!have_config)
    throw ConfigError(file +
                      ": no torchtitan config dump ('Running with configs: {...}', printed with "
                      "--job.print_config / debug.print_config); the plan cannot be read without it");
  return log;
}

}  // namespace shardplan::calibrate::detail
