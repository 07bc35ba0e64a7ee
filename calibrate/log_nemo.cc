// NeMo and Megatron-Bridge logs. The settings come from one of:
//  * Megatron-Bridge's configuration summary (src/megatron/bridge/training/config.py log_non_default_values at
//    067f987): "[model] Non-default values (vs Mcore TransformerConfig):" then "  KEY: REPR  (Mcore default: D)"
//    lines, the same for [optimizer] and [ddp], then "[train]:" etc. with every key. Only non-default values of
//    the Megatron-Core configs are listed, so an absent parallel size is Megatron-Core's default (1, False, None);
//  * the Hydra/OmegaConf YAML dump NeMo's training scripts log (examples/nlp/language_modeling/
//    megatron_gpt_pretraining.py: logging.info of OmegaConf.to_yaml(cfg), NeMo 8cfedd7): trainer.devices,
//    trainer.num_nodes, trainer.precision and the model.* keys (tensor_model_parallel_size, micro_batch_size,
//    encoder_seq_length, activations_checkpoint_granularity, optim.name, ...).
// The steps come from Megatron-Bridge's Megatron-style iteration lines (src/megatron/bridge/training/utils/
// train_utils.py: "iteration N/ M | ... | elapsed time per iteration (ms): X | ...", read by log_megatron.cc) or
// NeMo's "train_step_timing in s" metric: the ProgressPrinter line "Training epoch E, iteration N/M | ... |
// global_step: N | reduced_train_loss: L | train_step_timing in s: X" (nemo/lightning/pytorch/callbacks/
// progress_printer.py), the progress bar's "train_step_timing in s=X, ... global_step=N.000" and the timing
// callback's "Step N: train_step_timing in s=X" (nemo/utils/exp_manager.py). Real excerpts: NVIDIA-BioNeMo/
// bionemo-recipes pull request #740, NVIDIA-NeMo/NeMo pull request #10128.
#include <set>

#include "calibrate/log_megatron.h"

namespace shardplan::calibrate::detail {

namespace {

using logtext::at;

/// Sections whose keys describe the run (others, e.g. [logger] or model.tokenizer, are ignored).
const std::set<std::string> kSections = {
    "model",           "train",   "ddp",     "optimizer",   "dist",       "comm_overlap",
    "mixed_precision", "dataset", "trainer", "model.optim", "model.data", ""};

/// The keys read (a key not in this list is never compared, so unrelated settings cannot conflict).
const std::set<std::string> kKeys = {"num_layers",
                                     "hidden_size",
                                     "ffn_hidden_size",
                                     "num_attention_heads",
                                     "num_query_groups",
                                     "kv_channels",
                                     "vocab_size",
                                     "padded_vocab_size",
                                     "seq_length",
                                     "encoder_seq_length",
                                     "sequence_length",
                                     "gated_linear_unit",
                                     "activation",
                                     "share_embeddings_and_output_weights",
                                     "num_moe_experts",
                                     "moe_router_topk",
                                     "moe_ffn_hidden_size",
                                     "tensor_model_parallel_size",
                                     "pipeline_model_parallel_size",
                                     "virtual_pipeline_model_parallel_size",
                                     "context_parallel_size",
                                     "expert_model_parallel_size",
                                     "expert_tensor_parallel_size",
                                     "micro_batch_size",
                                     "global_batch_size",
                                     "devices",
                                     "num_nodes",
                                     "sequence_parallel",
                                     "tp_comm_overlap",
                                     "use_distributed_optimizer",
                                     "name",
                                     "use_torch_fsdp2",
                                     "fsdp",
                                     "use_megatron_fsdp",
                                     "data_parallel_sharding_strategy",
                                     "recompute_granularity",
                                     "activations_checkpoint_granularity",
                                     "recompute_method",
                                     "activations_checkpoint_method",
                                     "recompute_num_layers",
                                     "activations_checkpoint_num_layers",
                                     "precision",
                                     "bf16",
                                     "fp16",
                                     "fp8",
                                     "fp8_recipe",
                                     "fp4"};

std::optional<double> step_of(const std::string& l) {
  if (const auto g = logtext::number_after(l, "global_step:")) return g;
  if (const auto g = logtext::number_after(l, "global_step=")) return g;
  if (const size_t it = l.find(", iteration "); it != std::string::npos)
    return logtext::number_after(l.substr(it), "iteration");
  if (const size_t st = l.find("Step "); st != std::string::npos) return logtext::number_after(l.substr(st), "Step");
  return std::nullopt;
}

}  // namespace

ParsedLog parse_nemo_log(const std::vector<std::string>& lines, const std::string& file) {
  ParsedLog log;
  log.file = file;
  log.framework = "nemo";
  LogSettings& s = log.settings;
  int bridge_line = 0;
  for (size_t i = 0; i < lines.size() && bridge_line == 0; ++i)
    if (lines[i].find("Configuration Summary (Non-Default Values vs Megatron Core)") != std::string::npos)
      bridge_line = static_cast<int>(i + 1);
  std::map<std::string, Stated<std::string>> kv;  // leaf key -> value (conflicts checked)
  for (const logtext::KeyLine& k : logtext::key_lines(lines)) {
    if (!kSections.count(k.section) || !kKeys.count(k.key)) continue;
    // "name" is read only as the optimizer's; it names other things elsewhere.
    if (k.key == "name" && k.section != "model.optim" && k.section != "optimizer") continue;
    const std::string value = logtext::unquote(k.value);
    auto [it, inserted] = kv.emplace(k.key, Stated<std::string>{value, k.line});
    if (!inserted && it->second.value != value)
      throw ConfigError(at(file, k.line) + k.key + " is '" + value + "' here but '" + it->second.value + "' at line " +
                        std::to_string(it->second.line));
  }
  const auto find = [&](std::initializer_list<const char*> keys) -> const Stated<std::string>* {
    for (const char* key : keys)
      if (const auto it = kv.find(key); it != kv.end() && !logtext::is_none(it->second.value)) return &it->second;
    return nullptr;
  };
  const auto get_int = [&](std::optional<Stated<int>>& slot, std::initializer_list<const char*> keys) {
    if (const auto* v = find(keys))
      state(slot, logtext::to_int(v->value, file, v->line, *keys.begin()), v->line, *keys.begin(), file);
  };
  const auto get_bool = [&](std::initializer_list<const char*> keys) -> std::optional<Stated<bool>> {
    if (const auto* v = find(keys))
      return Stated<bool>{logtext::to_bool(v->value, file, v->line, *keys.begin()), v->line};
    return std::nullopt;
  };
  if (!find({"tensor_model_parallel_size", "global_batch_size", "micro_batch_size"}) && bridge_line == 0)
    throw ConfigError(file +
                      ": no NeMo config dump (the OmegaConf YAML of the training script) and no "
                      "Megatron-Bridge configuration summary; the plan cannot be read without one");
  const int base = bridge_line > 0 ? bridge_line : 1;
  const auto defaulted = [&](std::optional<Stated<int>>& slot, const char* key, int def) {
    get_int(slot, {key});
    if (!slot && bridge_line > 0) slot = Stated<int>{def, bridge_line};  // absent from the summary: Mcore default
  };
  get_int(s.layers, {"num_layers"});
  get_int(s.hidden, {"hidden_size"});
  get_int(s.ffn_hidden, {"ffn_hidden_size"});
  get_int(s.heads, {"num_attention_heads"});
  get_int(s.kv_heads, {"num_query_groups"});
  get_int(s.head_dim, {"kv_channels"});
  get_int(s.vocab, {"vocab_size", "padded_vocab_size"});
  get_int(s.seq_len, {"seq_length", "encoder_seq_length", "sequence_length"});
  if (const auto g = get_bool({"gated_linear_unit"})) state(s.gated_mlp, g->value, g->line, "gated_linear_unit", file);
  if (const auto* a = find({"activation"}))
    state(s.gated_mlp, a->value.find("glu") != std::string::npos, a->line, "activation", file);
  if (const auto t = get_bool({"share_embeddings_and_output_weights"}))
    state(s.tied_embeddings, t->value, t->line, "share_embeddings_and_output_weights", file);
  get_int(s.experts, {"num_moe_experts"});
  get_int(s.top_k, {"moe_router_topk"});
  get_int(s.expert_ffn_hidden, {"moe_ffn_hidden_size"});

  defaulted(s.tp, "tensor_model_parallel_size", 1);
  defaulted(s.pp, "pipeline_model_parallel_size", 1);
  defaulted(s.vpp, "virtual_pipeline_model_parallel_size", 1);
  defaulted(s.cp, "context_parallel_size", 1);
  if (s.experts) {
    defaulted(s.ep, "expert_model_parallel_size", 1);
    get_int(s.etp, {"expert_tensor_parallel_size"});
  }
  get_int(s.micro_batch, {"micro_batch_size"});
  get_int(s.global_batch, {"global_batch_size"});
  const auto* devices = find({"devices"});
  const auto* nodes = find({"num_nodes"});
  if (devices && logtext::to_int(devices->value, file, devices->line, "devices") > 0)
    state(s.gpus,
          logtext::to_int(devices->value, file, devices->line, "trainer.devices") *
              (nodes ? logtext::to_int(nodes->value, file, nodes->line, "trainer.num_nodes") : 1),
          devices->line, "trainer.devices x num_nodes", file);
  if (const auto sp = get_bool({"sequence_parallel"}))
    state(s.sequence_parallel, sp->value, sp->line, "sequence_parallel", file);
  else if (bridge_line > 0)
    state(s.sequence_parallel, false, bridge_line, "sequence_parallel", file);
  if (const auto o = get_bool({"tp_comm_overlap"}))
    state(s.tp_comm_overlap, o->value, o->line, "tp_comm_overlap", file);

  // ZeRO: distributed optimizer (ZeRO-1; NeMo 1 names it optim.name distributed_fused_adam); torch FSDP2 or NeMo
  // 1's fsdp (ZeRO-3); Megatron-FSDP by its sharding strategy.
  int zero = 0, zero_line = base;
  if (const auto d = get_bool({"use_distributed_optimizer"}); d && d->value) zero = 1, zero_line = d->line;
  if (const auto* n = find({"name"}); n && n->value == "distributed_fused_adam") zero = 1, zero_line = n->line;
  if (const auto f = get_bool({"use_torch_fsdp2", "fsdp"}); f && f->value) zero = 3, zero_line = f->line;
  if (const auto f = get_bool({"use_megatron_fsdp"}); f && f->value) {
    const auto* how = find({"data_parallel_sharding_strategy"});
    const std::string strategy = how ? how->value : "optim_grads_params";
    zero = strategy == "optim_grads_params" ? 3 : strategy == "optim_grads" ? 2 : strategy == "optim" ? 1 : 0;
    zero_line = f->line;
  }
  state(s.zero, zero, zero_line, "ZeRO stage", file);

  const auto* g = find({"recompute_granularity", "activations_checkpoint_granularity"});
  // A dump that prints the granularity as null states "no recompute" (as an absent one in Bridge's summary does).
  const bool stated_null = !g && (kv.count("recompute_granularity") || kv.count("activations_checkpoint_granularity"));
  if (g || bridge_line > 0 || stated_null) {
    const std::string granularity = g ? g->value : "none";
    if (granularity != "selective" && granularity != "full" && granularity != "none")
      throw ConfigError(at(file, g->line) + "recompute granularity: expected full or selective, got '" + g->value +
                        "'");
    const int null_line = stated_null
                              ? (kv.count("recompute_granularity") ? kv["recompute_granularity"].line
                                                                   : kv["activations_checkpoint_granularity"].line)
                              : base;
    state(s.recompute, granularity, g ? g->line : null_line, "recompute", file);
    if (granularity == "full") {
      const auto* method = find({"recompute_method", "activations_checkpoint_method"});
      const auto* n = find({"recompute_num_layers", "activations_checkpoint_num_layers"});
      const bool block = method && method->value == "block";
      const int layers = n ? logtext::to_int(n->value, file, n->line, "recompute_num_layers") : 1;
      state(s.recompute_num_layers, block ? layers : 0, n ? n->line : g->line, "recompute_num_layers", file);
    }
  }

  // Precision: Megatron-Bridge applies its mixed-precision config to the model config (fp4, fp8 with
  // fp8_recipe, bf16, fp16); NeMo 1/2 state trainer.precision (bf16, bf16-mixed, 16, 16-mixed, 32) and model.fp8.
  std::optional<Stated<std::string>> precision;
  if (const auto* t = find({"precision"})) {
    const std::string p = t->value;
    const std::string name = p.rfind("bf16", 0) == 0                  ? "bf16"
                             : (p.rfind("16", 0) == 0 || p == "fp16") ? "fp16"
                             : (p.rfind("32", 0) == 0)                ? "fp32"
                                                                      : "";
    if (name.empty()) throw ConfigError(at(file, t->line) + "trainer.precision '" + p + "' is not bf16, 16 or 32");
    precision = Stated<std::string>{name, t->line};
  }
  if (const auto b = get_bool({"bf16"}); b && b->value) precision = Stated<std::string>{"bf16", b->line};
  if (const auto h = get_bool({"fp16"}); h && h->value) precision = Stated<std::string>{"fp16", h->line};
  if (const auto* f8 = find({"fp8"}); f8 && f8->value != "False" && f8->value != "false") {
    const auto* recipe = find({"fp8_recipe"});
    const std::string r = recipe ? recipe->value : "delayed";
    precision = Stated<std::string>{r == "mxfp8" ? "mxfp8" : "fp8", f8->line};
    if (r != "mxfp8") state(s.fp8_recipe, r, recipe ? recipe->line : f8->line, "fp8_recipe", file);
  }
  if (const auto* f4 = find({"fp4"})) precision = Stated<std::string>{"nvfp4", f4->line};
  if (!precision && bridge_line > 0) precision = Stated<std::string>{"fp32", bridge_line};
  if (precision) state(s.precision, precision->value, precision->line, "precision", file);

  megatron::read_training_lines(lines, &log);  // Megatron-Bridge's iteration lines and memory reports
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string& l = lines[i];
    // NeMo pads the tokenizer's vocabulary as Megatron does and says so (nemo/lightning/base.py,
    // megatron_base_model.py): "Padded vocab_size: W, original vocab_size: V, dummy tokens: K."
    if (const auto padded = logtext::number_after(l, "Padded vocab_size:")) {
      state(s.vocab, logtext::to_count(*padded, file, static_cast<int>(i + 1), "padded vocab_size"),
            static_cast<int>(i + 1), "padded vocab_size", file);
      continue;
    }
    if (l.find("train_step_timing in s") == std::string::npos) continue;
    const auto t = logtext::number_after(l, "train_step_timing in s:")
                       ? logtext::number_after(l, "train_step_timing in s:")
                       : logtext::number_after(l, "train_step_timing in s=");
    const auto step = step_of(l);
    if (!t || !step || *t <= 0)
      throw ConfigError(at(file, static_cast<int>(i + 1)) +
                        "a train_step_timing line without a readable step and time");
    StepRecord r;
    r.line = static_cast<int>(i + 1);
    r.step = logtext::to_count(*step, file, r.line, "step");
    r.step_time_s = *t;
    if (const auto gb = logtext::number_after(l, "global_batch_size:"))
      r.global_batch = logtext::to_count(*gb, file, r.line, "global_batch_size");
    log.steps.push_back(r);
  }
  return log;
}

}  // namespace shardplan::calibrate::detail
