#include "calibrate/log_megatron.h"

#include <algorithm>
#include <cmath>

namespace shardplan::calibrate {

namespace megatron {

namespace {

using logtext::at;

bool starts_with(const std::string& s, const std::string& p) { return s.compare(0, p.size(), p) == 0; }

/// "---- arguments ----" and "---- end of arguments ----" (any run of dashes around the title).
bool is_rule(const std::string& line, const std::string& title) {
  const size_t b = line.find_first_not_of(' ');
  if (b == std::string::npos || line.compare(b, 3, "---") != 0) return false;
  const size_t t = line.find(" " + title + " ");
  if (t == std::string::npos) return false;
  return line.find_first_not_of("- ", b) == t + 1 &&
         line.find_first_not_of("- ", t + title.size() + 1) == std::string::npos;
}

}  // namespace

Arguments read_arguments(const std::vector<std::string>& lines, const std::string& file) {
  Arguments a;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (!is_rule(lines[i], "arguments")) continue;
    const int open = static_cast<int>(i + 1);
    if (a.start_line == 0) a.start_line = open;
    bool closed = false;
    for (++i; i < lines.size(); ++i) {
      const std::string& l = lines[i];
      if (is_rule(l, "end of arguments")) {
        closed = true;
        break;
      }
      // "  NAME ..... VALUE": NAME, then spaces and dots (none when NAME has 48 characters or more), then VALUE.
      if (!starts_with(l, "  ") || l.size() < 3 || l[2] == ' ') {
        throw ConfigError(at(file, static_cast<int>(i + 1)) +
                          "not an argument line inside the arguments block opened "
                          "at line " +
                          std::to_string(open) + " (is the log truncated or interleaved?)");
      }
      const size_t name_end = l.find(' ', 2);
      const std::string name = l.substr(2, name_end == std::string::npos ? std::string::npos : name_end - 2);
      std::string value;
      if (name_end != std::string::npos) {
        size_t p = name_end + 1;
        const size_t dots = l.find_first_not_of('.', p);
        if (dots != std::string::npos && dots > p)
          p = dots + 1;  // past the dots and the space after them
        else if (l.size() > p && l[p] == ' ')
          ++p;  // a 48-character name: two spaces
        value = p < l.size() ? l.substr(p) : "";
      }
      auto [it, inserted] = a.values.emplace(name, Stated<std::string>{value, static_cast<int>(i + 1)});
      if (!inserted && it->second.value != value)
        throw ConfigError(at(file, static_cast<int>(i + 1)) + "argument " + name + " is '" + value + "' here but '" +
                          it->second.value + "' at line " + std::to_string(it->second.line) +
                          " (two runs in one log?)");
    }
    if (!closed)
      throw ConfigError(at(file, open) +
                        "the arguments block opened here has no '-- end of arguments --' line: "
                        "the log is truncated");
  }
  return a;
}

void settings_from_arguments(const Arguments& args, const std::string& file, LogSettings* s,
                             std::vector<std::string>* notes) {
  const auto find = [&](const std::string& k) -> const Stated<std::string>* {
    const auto it = args.values.find(k);
    return it == args.values.end() || logtext::is_none(it->second.value) ? nullptr : &it->second;
  };
  const auto get_int = [&](const std::string& k, std::optional<Stated<int>>& slot) {
    if (const auto* v = find(k)) state(slot, logtext::to_int(v->value, file, v->line, k), v->line, k, file);
  };
  const auto flag = [&](const std::string& k) -> std::optional<Stated<bool>> {
    if (const auto* v = find(k)) return Stated<bool>{logtext::to_bool(v->value, file, v->line, k), v->line};
    return std::nullopt;
  };
  const auto set_bool = [&](std::optional<Stated<bool>>& slot, const std::optional<Stated<bool>>& v,
                            const std::string& k) {
    if (v) state(slot, v->value, v->line, k, file);
  };
  get_int("num_layers", s->layers);
  get_int("hidden_size", s->hidden);
  get_int("ffn_hidden_size", s->ffn_hidden);
  get_int("num_attention_heads", s->heads);
  get_int("kv_channels", s->head_dim);
  get_int("seq_length", s->seq_len);
  const auto gqa = flag("group_query_attention");
  if (gqa && gqa->value) get_int("num_query_groups", s->kv_heads);
  get_int("num_key_value_heads", s->kv_heads);  // Megatron-DeepSpeed's name for the KV heads
  if (const auto swiglu = flag("swiglu")) set_bool(s->gated_mlp, swiglu, "swiglu");
  if (const auto untie = flag("untie_embeddings_and_output_weights"))
    state(s->tied_embeddings, !untie->value, untie->line, "untie_embeddings_and_output_weights", file);
  // The vocabulary the model is built with: padded_vocab_size when printed, else vocab_size padded to a multiple
  // of make_vocab_size_divisible_by x tp as the tokenizer builder pads it (build_tokenizer.py
  // vocab_size_with_padding); the " > padded vocab" line, read with the training lines, states it too.
  if (const auto* v = find("padded_vocab_size")) {
    state(s->vocab, logtext::to_int(v->value, file, v->line, "padded_vocab_size"), v->line, "vocabulary", file);
  } else if (const auto* v2 = find("vocab_size")) {
    long vocab = logtext::to_int(v2->value, file, v2->line, "vocab_size");
    const auto* div = find("make_vocab_size_divisible_by");
    const auto* tp = find("tensor_model_parallel_size");
    if (div && tp) {
      const long multiple = 1L * logtext::to_int(div->value, file, div->line, "make_vocab_size_divisible_by") *
                            logtext::to_int(tp->value, file, tp->line, "tensor_model_parallel_size");
      if (multiple > 0) vocab = (vocab + multiple - 1) / multiple * multiple;
    }
    state(s->vocab, static_cast<int>(vocab), v2->line, "vocabulary", file);
  }
  if (const auto* v = find("num_experts")) {
    get_int("num_experts", s->experts);
    get_int("moe_router_topk", s->top_k);
    get_int("moe_ffn_hidden_size", s->expert_ffn_hidden);
    if (const auto* sh = find("moe_shared_expert_intermediate_size")) {
      const int width = logtext::to_int(sh->value, file, sh->line, "moe_shared_expert_intermediate_size");
      const int expert = s->expert_ffn_hidden ? s->expert_ffn_hidden->value : 0;
      if (expert > 0 && width % expert == 0) state(s->shared_experts, width / expert, sh->line, "shared experts", file);
    }
    // moe_layer_freq is printed as the list moe_freq_type evaluated ("[0, 0, 1, 1]") or an int (every k-th
    // layer is MoE); the schema counts leading dense layers.
    if (const auto* f = find("moe_layer_freq")) {
      const std::string& t = f->value;
      if (!t.empty() && t[0] == '[') {
        int dense = 0;
        for (size_t p = 1; p < t.size() && (t[p] == '0' || t[p] == ',' || t[p] == ' '); ++p)
          if (t[p] == '0') ++dense;
        state(s->dense_layers, dense, f->line, "moe_layer_freq", file);
      }
    }
    (void)v;
  }

  get_int("tensor_model_parallel_size", s->tp);
  get_int("pipeline_model_parallel_size", s->pp);
  get_int("context_parallel_size", s->cp);
  get_int("expert_model_parallel_size", s->ep);
  if (s->experts) get_int("expert_tensor_parallel_size", s->etp);
  get_int("world_size", s->gpus);
  get_int("data_parallel_size", s->dp);
  get_int("micro_batch_size", s->micro_batch);
  get_int("global_batch_size", s->global_batch);
  // Virtual stages: validate_args derives virtual_pipeline_model_parallel_size from
  // --num-layers-per-virtual-pipeline-stage (or the layout); older releases print only the latter.
  if (find("virtual_pipeline_model_parallel_size")) {
    get_int("virtual_pipeline_model_parallel_size", s->vpp);
  } else if (const auto* per = find("num_layers_per_virtual_pipeline_stage")) {
    const int n = logtext::to_int(per->value, file, per->line, "num_layers_per_virtual_pipeline_stage");
    const int pp = s->pp ? s->pp->value : 1;
    if (n > 0 && s->layers && s->layers->value % (n * pp) == 0)
      state(s->vpp, s->layers->value / (n * pp), per->line, "virtual pipeline size", file);
  } else if (const auto* layout = find("pipeline_model_parallel_layout")) {
    const int stages = static_cast<int>(std::count(layout->value.begin(), layout->value.end(), '|')) + 1;
    const int pp = s->pp ? s->pp->value : 1;
    if (stages % pp == 0) state(s->vpp, stages / pp, layout->line, "pipeline layout", file);
  }
  if (const auto sp = flag("sequence_parallel")) set_bool(s->sequence_parallel, sp, "sequence_parallel");
  if (const auto o = flag("tp_comm_overlap")) set_bool(s->tp_comm_overlap, o, "tp_comm_overlap");

  // ZeRO: the distributed optimizer shards optimizer states (ZeRO-1); torch FSDP2 and Megatron-FSDP with
  // optim_grads_params shard everything (ZeRO-3).
  int zero = 0;
  int zero_line = args.start_line;
  if (const auto d = flag("use_distributed_optimizer"); d && d->value) zero = 1, zero_line = d->line;
  if (const auto f = flag("use_torch_fsdp2"); f && f->value) zero = 3, zero_line = f->line;
  if (const auto f = flag("use_megatron_fsdp"); f && f->value) {
    const auto* how = find("data_parallel_sharding_strategy");
    const std::string strategy = how ? logtext::unquote(how->value) : "optim_grads_params";
    zero = strategy == "optim_grads_params" ? 3 : strategy == "optim_grads" ? 2 : strategy == "optim" ? 1 : 0;
    zero_line = f->line;
  }
  if (args.start_line > 0) state(s->zero, zero, zero_line, "ZeRO stage", file);

  // Recompute.
  if (args.start_line > 0) {
    const auto* g = find("recompute_granularity");
    const std::string granularity = g ? logtext::unquote(g->value) : "none";
    if (granularity != "none" && granularity != "selective" && granularity != "full")
      throw ConfigError(at(file, g->line) + "recompute_granularity: expected full or selective, got '" + g->value +
                        "'");
    state(s->recompute, granularity, g ? g->line : args.start_line, "recompute", file);
    if (granularity == "full") {
      const auto* method = find("recompute_method");
      const auto* n = find("recompute_num_layers");
      // uniform with 1 layer per group recomputes every layer (the schema's 0); block recomputes the first N.
      const bool block = method && logtext::unquote(method->value) == "block";
      const int layers = n ? logtext::to_int(n->value, file, n->line, "recompute_num_layers") : 1;
      state(s->recompute_num_layers, block ? layers : 0, n ? n->line : g->line, "recompute_num_layers", file);
      if (!block && layers != 1)
        notes->push_back("recompute_method uniform with recompute_num_layers " + std::to_string(layers) +
                         " read as every layer recomputed");
    }
  }

  // Precision: fp4 (NVFP4), else fp8 (the recipe names the scaling; mxfp8 is its own precision name in the
  // schema), else fp16, else bf16, else fp32. --fp8-format and --fp4-format store into fp8 and fp4
  // (megatron/core/transformer/transformer_config.py argparse_meta arg_names).
  if (args.start_line > 0) {
    std::string precision = "fp32";
    int line = args.start_line;
    if (const auto b = flag("bf16"); b && b->value) precision = "bf16", line = b->line;
    if (const auto h = flag("fp16"); h && h->value) precision = "fp16", line = h->line;
    if (const auto* f8 = find("fp8")) {
      const auto* recipe = find("fp8_recipe");
      const std::string r = recipe ? logtext::unquote(recipe->value) : "delayed";
      precision = r == "mxfp8" ? "mxfp8" : "fp8";
      line = f8->line;
      if (r != "mxfp8") state(s->fp8_recipe, r, recipe ? recipe->line : f8->line, "fp8_recipe", file);
    }
    if (const auto* f4 = find("fp4")) precision = "nvfp4", line = f4->line;
    state(s->precision, precision, line, "precision", file);
  }
}

void read_training_lines(const std::vector<std::string>& lines, ParsedLog* log) {
  const std::string& file = log->file;
  std::optional<Stated<int>> padded;
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string& l = lines[i];
    const int line = static_cast<int>(i + 1);
    if (l.find("elapsed time per iteration (ms):") != std::string::npos) {
      const size_t it = l.find(" iteration ");
      const auto step = it == std::string::npos ? std::nullopt : logtext::number_after(l.substr(it), "iteration");
      const auto ms = logtext::number_after(l, "elapsed time per iteration (ms):");
      if (!step || !ms || *ms <= 0)
        throw ConfigError(at(file, line) + "an iteration line without a readable iteration number and time");
      StepRecord r;
      r.line = line;
      r.step = logtext::to_count(*step, file, line, "iteration");
      r.step_time_s = *ms / 1000;
      r.tflops_per_gpu = logtext::number_after(l, "throughput per GPU (TFLOP/s/GPU):");
      if (!r.tflops_per_gpu) r.tflops_per_gpu = logtext::number_after(l, "TFLOPs:");  // Megatron-DeepSpeed
      if (const auto gb = logtext::number_after(l, "global batch size:"))
        r.global_batch = logtext::to_count(*gb, file, line, "global batch size");
      log->steps.push_back(r);
      continue;
    }
    if (l.find(" memory (MB) |") != std::string::npos) {
      // Peak reserved memory bounds what the run needs from the device; max allocated excludes the caching
      // allocator's slack. Both are printed; the reserved one is recorded (torchtitan reports reserved too).
      const auto reserved = logtext::number_after(l, "| max reserved:");
      const auto allocated = logtext::number_after(l, "| max allocated:");
      const auto mib = reserved ? reserved : allocated;
      if (!mib) throw ConfigError(at(file, line) + "a memory report without 'max reserved' or 'max allocated'");
      log->memory_gib.push_back({*mib / 1024, line});
      log->memory_kind = reserved ? "max reserved (torch.cuda.max_memory_reserved)"
                                  : "max allocated (torch.cuda.max_memory_allocated)";
      continue;
    }
    if (l.find(" > padded vocab (size:") != std::string::npos) {
      if (const auto v = logtext::number_after(l, "(new size:"))
        state(padded, logtext::to_count(*v, file, line, "padded vocab"), line, "padded vocabulary", file);
    }
  }
  // The tokenizer's padded size is what the model was built with; it wins over the arguments' vocab_size (the
  // tokenizer's own vocabulary, not --vocab-size, is what gets padded).
  if (padded) log->settings.vocab = padded;
}

}  // namespace megatron

namespace detail {

ParsedLog parse_megatron_log(const std::vector<std::string>& lines, const std::string& file) {
  ParsedLog log;
  log.file = file;
  log.framework = "megatron-lm";
  const megatron::Arguments args = megatron::read_arguments(lines, file);
  if (args.start_line == 0)
    throw ConfigError(file +
                      ": no Megatron-LM arguments block ('---- arguments ----', printed by rank 0 at "
                      "start-up); was the log captured from the start, on rank 0?");
  megatron::settings_from_arguments(args, file, &log.settings, &log.notes);
  megatron::read_training_lines(lines, &log);
  return log;
}

}  // namespace detail

}  // namespace shardplan::calibrate
