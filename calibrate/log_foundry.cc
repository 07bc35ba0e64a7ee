// llm-foundry (Composer) logs:
//  * the run config llm-foundry prints at start-up (llmfoundry/utils/config_utils.py log_config: print of
//    om.to_yaml(cfg), 8c8dd48), with the keys added at run time (n_gpus, device_train_batch_size,
//    device_train_grad_accum): model.{d_model, n_heads, n_layers, expansion_ratio, vocab_size, max_seq_len,
//    attn_config.kv_n_heads, ffn_config.ffn_type}, global_train_batch_size, device_train_microbatch_size,
//    precision (amp_bf16, amp_fp16, amp_fp8, fp32), fsdp_config.{sharding_strategy, activation_checkpointing};
//  * Composer's console logger (composer/loggers/console_logger.py log_to_console, 6405188): a progress header
//    "[batch=N/M]:" (or "[epoch=E][batch=N/M]:"), then one "\t Train METRIC: VALUE" line per metric, among them
//    time/batch, throughput/batches_per_sec and throughput/device/tokens_per_sec (composer/callbacks/
//    speed_monitor.py: averages over its window) and memory/peak_reserved_mem, memory/peak_allocated_mem
//    (composer/callbacks/memory_monitor.py, GB = 1e9 bytes).
// A real excerpt: mosaicml/composer issue #2357.
#include <map>

#include "calibrate/log_import.h"

namespace shardplan::calibrate::detail {

namespace {

using logtext::at;

constexpr double kBytesPerGB = 1e9, kBytesPerGiB = 1024.0 * 1024.0 * 1024.0;

}  // namespace

ParsedLog parse_foundry_log(const std::vector<std::string>& lines, const std::string& file) {
  ParsedLog log;
  log.file = file;
  log.framework = "llm-foundry";
  LogSettings& s = log.settings;
  // Config keys by "section.key" (top level: "key"); a key printed twice must agree.
  std::map<std::string, Stated<std::string>> kv;
  for (const logtext::KeyLine& k : logtext::key_lines(lines)) {
    const std::string path = k.section.empty() ? k.key : k.section + "." + k.key;
    const std::string value = logtext::unquote(k.value);
    auto [it, inserted] = kv.emplace(path, Stated<std::string>{value, k.line});
    if (!inserted && it->second.value != value)
      throw ConfigError(at(file, k.line) + path + " is '" + value + "' here but '" + it->second.value + "' at line " +
                        std::to_string(it->second.line));
  }
  const auto find = [&](const std::string& path) -> const Stated<std::string>* {
    const auto it = kv.find(path);
    return it == kv.end() || logtext::is_none(it->second.value) ? nullptr : &it->second;
  };
  const auto get_int = [&](std::optional<Stated<int>>& slot, const std::string& path) {
    if (const auto* v = find(path)) state(slot, logtext::to_int(v->value, file, v->line, path), v->line, path, file);
  };
  if (!find("global_train_batch_size"))
    throw ConfigError(file +
                      ": no llm-foundry run config (the YAML printed at start-up, with "
                      "global_train_batch_size); the plan cannot be read without it");
  get_int(s.layers, "model.n_layers");
  get_int(s.hidden, "model.d_model");
  get_int(s.heads, "model.n_heads");
  get_int(s.kv_heads, "model.attn_config.kv_n_heads");
  get_int(s.vocab, "model.vocab_size");
  get_int(s.seq_len, "max_seq_len");
  get_int(s.seq_len, "model.max_seq_len");
  get_int(s.ffn_hidden, "model.ffn_config.ffn_hidden_size");
  if (const auto* e = find("model.expansion_ratio"); e && s.hidden) {
    // MPT's FFN width: d_model x expansion_ratio unless ffn_hidden_size is given (llmfoundry/models/layers/ffn.py
    // resolve_ffn_hidden_size).
    const double ratio = logtext::to_number(e->value, file, e->line, "model.expansion_ratio");
    state(s.ffn_hidden, static_cast<int>(ratio * s.hidden->value), e->line, "d_model x expansion_ratio", file);
  }
  if (s.layers) {
    const auto* ffn = find("model.ffn_config.ffn_type");
    state(s.gated_mlp, ffn && ffn->value.find("glu") != std::string::npos, ffn ? ffn->line : s.layers->line, "ffn_type",
          file);
    // MPT ties the output to the input embedding unless tie_word_embeddings is false (configuration_mpt.py).
    const auto* tie = find("model.tie_word_embeddings");
    state(s.tied_embeddings, tie ? logtext::to_bool(tie->value, file, tie->line, "tie_word_embeddings") : true,
          tie ? tie->line : s.layers->line, "tie_word_embeddings", file);
  }
  get_int(s.global_batch, "global_train_batch_size");
  if (const auto* m = find("device_train_microbatch_size"); m && m->value != "auto")
    get_int(s.micro_batch, "device_train_microbatch_size");
  get_int(s.gpus, "n_gpus");
  // FSDP sharding strategy -> ZeRO stage (FULL_SHARD and HYBRID_SHARD shard parameters, SHARD_GRAD_OP gradients and
  // optimizer states, NO_SHARD none); no fsdp_config: DDP.
  const auto* strategy = find("fsdp_config.sharding_strategy");
  const int batch_line = find("global_train_batch_size")->line;
  int zero = 0;
  if (strategy) {
    const std::string& v = strategy->value;
    if (v == "FULL_SHARD" || v == "HYBRID_SHARD")
      zero = 3;
    else if (v == "SHARD_GRAD_OP" || v == "_HYBRID_SHARD_ZERO2")
      zero = 2;
    else if (v != "NO_SHARD")
      throw ConfigError(at(file, strategy->line) + "fsdp_config.sharding_strategy '" + v +
                        "' is not FULL_SHARD, "
                        "SHARD_GRAD_OP, HYBRID_SHARD or NO_SHARD");
  }
  state(s.zero, zero, strategy ? strategy->line : batch_line, "fsdp_config.sharding_strategy", file);
  const auto* ac = find("fsdp_config.activation_checkpointing");
  const bool full = ac && logtext::to_bool(ac->value, file, ac->line, "activation_checkpointing");
  state(s.recompute, std::string(full ? "full" : "none"), ac ? ac->line : batch_line, "activation_checkpointing", file);
  if (full) state(s.recompute_num_layers, 0, ac->line, "activation_checkpointing", file);
  const auto* precision = find("precision");
  if (precision) {
    const std::string& v = precision->value;
    const std::string name = v == "amp_bf16"   ? "bf16"
                             : v == "amp_fp16" ? "fp16"
                             : v == "amp_fp8"  ? "fp8"
                             : v == "fp32"     ? "fp32"
                                               : "";
    if (name.empty())
      throw ConfigError(at(file, precision->line) + "precision '" + v +
                        "' is not amp_bf16, amp_fp16, "
                        "amp_fp8 or fp32");
    state(s.precision, name, precision->line, "precision", file);
  }

  // Composer's console blocks: a "[batch=N/M]:" header and its "Train ..." metric lines.
  log.memory_kind = "peak reserved memory (Composer memory/peak_reserved_mem)";
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string& h = lines[i];
    const size_t b = h.find("[batch=");
    if (b == std::string::npos || h.empty() || h.back() != ':' || h.find("Eval") != std::string::npos) continue;
    const auto batch = logtext::number_after(h.substr(b), "[batch=");
    std::optional<double> step, rate, tps, reserved, allocated;
    size_t j = i + 1;
    for (; j < lines.size() && lines[j].find(" Train ") != std::string::npos &&
           lines[j].find("[batch=") == std::string::npos;
         ++j) {
      const std::string& l = lines[j];
      if (!step) step = logtext::number_after(l, "Train time/batch:");
      if (!rate) rate = logtext::number_after(l, "Train throughput/batches_per_sec:");
      if (!tps) tps = logtext::number_after(l, "Train throughput/device/tokens_per_sec:");
      if (!reserved) reserved = logtext::number_after(l, "Train memory/peak_reserved_mem:");
      if (!allocated) allocated = logtext::number_after(l, "Train memory/peak_allocated_mem:");
    }
    i = j - 1;
    if (!rate && !tps) continue;  // the speed monitor logs once its window is full
    if (!step) step = batch;
    if (!step) throw ConfigError(at(file, static_cast<int>(i + 1)) + "a Composer block without a batch number");
    StepRecord r;
    r.line = static_cast<int>(i + 1);
    r.step = logtext::to_count(*step, file, r.line, "batch");
    if (rate && *rate > 0)
      r.step_time_s = 1 / *rate;
    else if (tps && *tps > 0)
      r.tokens_per_s_per_gpu = *tps;
    else
      throw ConfigError(at(file, r.line) + "a Composer throughput of zero");
    const auto mem = reserved ? reserved : allocated;
    if (mem) r.memory_gib = *mem * kBytesPerGB / kBytesPerGiB;
    if (!reserved && allocated) log.memory_kind = "peak allocated memory (Composer memory/peak_allocated_mem)";
    log.steps.push_back(r);
  }
  return log;
}

}  // namespace shardplan::calibrate::detail
