#include "calibrate/log_import.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <stdexcept>

#include "modeler/io/yaml_reader.h"

namespace shardplan::calibrate {

namespace {

constexpr const char* kFrameworkNames[] = {"megatron", "nemo", "torchtitan", "deepspeed", "llm-foundry"};

template <class T>
T median(std::vector<T> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

}  // namespace

LogFramework parse_log_framework(const std::string& name) {
  for (int i = 0; i < 5; ++i)
    if (name == kFrameworkNames[i]) return static_cast<LogFramework>(i);
  const std::string near = io::closest_match(name, {std::begin(kFrameworkNames), std::end(kFrameworkNames)});
  throw ConfigError("--framework: unknown framework '" + name +
                    "' (megatron, nemo, torchtitan, deepspeed, llm-foundry)" +
                    (near.empty() ? "" : ", did you mean '" + near + "'?"));
}

const char* to_string(LogFramework f) { return kFrameworkNames[static_cast<int>(f)]; }

ParsedLog parse_log(LogFramework f, std::string_view text, const std::string& file) {
  const std::vector<std::string> lines = logtext::clean_lines(text);
  switch (f) {
    case LogFramework::megatron:
      return detail::parse_megatron_log(lines, file);
    case LogFramework::nemo:
      return detail::parse_nemo_log(lines, file);
    case LogFramework::torchtitan:
      return detail::parse_torchtitan_log(lines, file);
    case LogFramework::deepspeed:
      return detail::parse_deepspeed_log(lines, file);
    case LogFramework::llm_foundry:
      return detail::parse_foundry_log(lines, file);
  }
  throw std::logic_error("parse_log: unknown framework");
}

SteadyState steady_state(const ParsedLog& log, int warmup_steps, std::optional<int> global_batch) {
  // Several ranks may print the same step (torchtitan logs on every rank unless told otherwise): merge them, the
  // slowest rank's time and the largest peak being the step's.
  std::vector<StepRecord> steps;
  for (const StepRecord& s : log.steps) {
    if (!steps.empty() && steps.back().step == s.step) {
      StepRecord& m = steps.back();
      m.step_time_s = std::max(m.step_time_s, s.step_time_s);
      if (s.memory_gib) m.memory_gib = std::max(m.memory_gib.value_or(0), *s.memory_gib);
      if (s.tokens_per_s_per_gpu && m.tokens_per_s_per_gpu)
        m.tokens_per_s_per_gpu = std::min(*m.tokens_per_s_per_gpu, *s.tokens_per_s_per_gpu);
      continue;
    }
    steps.push_back(s);
  }
  SteadyState out;
  long first = 0;
  for (size_t i = 0; i < steps.size(); ++i) {
    const StepRecord& s = steps[i];
    // A step number that does not increase starts a new segment (a restart appended to the same log): its start
    // is warm-up again.
    if (i == 0 || s.step <= steps[i - 1].step) {
      first = s.step;
      ++out.warmup_dropped;
      continue;
    }
    if (s.step <= first + warmup_steps) {
      ++out.warmup_dropped;
      continue;
    }
    if (global_batch && s.global_batch && *s.global_batch != *global_batch) {
      ++out.ramp_dropped;
      continue;
    }
    out.kept.push_back(s);
  }
  return out;
}

namespace {

using logtext::at;

constexpr int kMax = 1 << 24;  // the largest degree, batch or dimension a log may state

/// The --model description, checked against what the log states.
void check_against(const std::optional<Stated<int>>& stated, int model_value, const char* what, const ImportOptions& o,
                   const std::string& file) {
  if (stated && stated->value != model_value)
    throw ConfigError(at(file, stated->line) + what + " " + std::to_string(stated->value) +
                      " in the log, but --model " + o.model_name + " has " + std::to_string(model_value));
}

ModelDesc model_of(const LogSettings& s, const ImportOptions& o, const std::string& file) {
  if (o.model) {
    const ModelDesc& m = *o.model;
    check_against(s.layers, m.layers, "layers", o, file);
    check_against(s.hidden, m.hidden, "hidden size", o, file);
    check_against(s.ffn_hidden, m.ffn_hidden, "ffn hidden size", o, file);
    check_against(s.heads, m.heads, "attention heads", o, file);
    check_against(s.kv_heads, m.kv_heads, "kv heads", o, file);
    check_against(s.head_dim, m.head_dim, "head dim", o, file);
    check_against(s.vocab, m.vocab, "vocabulary", o, file);
    if (s.gated_mlp && s.gated_mlp->value != m.gated_mlp)
      throw ConfigError(at(file, s.gated_mlp->line) + "gated MLP " + logtext::show(s.gated_mlp->value) +
                        " in the log, but --model " + o.model_name + " has " + logtext::show(m.gated_mlp));
    if (s.tied_embeddings && s.tied_embeddings->value != m.tied_embeddings)
      throw ConfigError(at(file, s.tied_embeddings->line) + "tied embeddings " +
                        logtext::show(s.tied_embeddings->value) + " in the log, but --model " + o.model_name + " has " +
                        logtext::show(m.tied_embeddings));
    if (s.experts && (!m.moe || m.moe->experts != s.experts->value))
      throw ConfigError(at(file, s.experts->line) + std::to_string(s.experts->value) +
                        " experts in the log, but --model " + o.model_name + " has " +
                        std::to_string(m.moe ? m.moe->experts : 0));
    return m;
  }
  const auto need = [&](const std::optional<Stated<int>>& v, const char* what) {
    if (!v) throw ConfigError(file + ": the log states no " + std::string(what) + "; pass --model NAME|FILE");
    return v->value;
  };
  ModelDesc m;
  m.name = "from " + std::filesystem::path(file).filename().string();
  m.layers = need(s.layers, "layer count");
  m.hidden = need(s.hidden, "hidden size");
  m.ffn_hidden = need(s.ffn_hidden, "ffn hidden size");
  m.heads = need(s.heads, "attention head count");
  m.kv_heads = s.kv_heads ? s.kv_heads->value : m.heads;
  m.head_dim = s.head_dim ? s.head_dim->value : m.hidden / m.heads;
  m.vocab = need(s.vocab, "vocabulary size");
  if (!s.gated_mlp) throw ConfigError(file + ": the log does not say whether the MLP is gated; pass --model");
  m.gated_mlp = s.gated_mlp->value;
  m.tied_embeddings = s.tied_embeddings ? s.tied_embeddings->value : false;
  if (s.experts && s.experts->value > 1) {
    MoeDesc e;
    e.experts = s.experts->value;
    e.top_k = need(s.top_k, "router top-k");
    e.expert_ffn_hidden = s.expert_ffn_hidden ? s.expert_ffn_hidden->value : m.ffn_hidden;
    e.shared_experts = s.shared_experts ? s.shared_experts->value : 0;
    e.dense_layers = s.dense_layers ? s.dense_layers->value : 0;
    m.moe = e;
  }
  if (m.heads % m.kv_heads != 0)
    throw ConfigError(at(file, s.kv_heads->line) + "heads (" + std::to_string(m.heads) +
                      ") not divisible by kv heads (" + std::to_string(m.kv_heads) + ")");
  return m;
}

std::string stem_id(const std::string& file) {
  std::string id = std::filesystem::path(file).stem().string();
  for (char& c : id)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') c = '_';
  return id.empty() ? "imported" : id;
}

}  // namespace

ImportedRun build_run(const ParsedLog& log, const ImportOptions& o) {
  const LogSettings& s = log.settings;
  const std::string& file = log.file;
  if (log.steps.empty())
    throw ConfigError(file + ": no training-step lines (" + log.framework +
                      " prints one per logged iteration; was the log cut before the first?)");
  // Every count within the range the schema admits, so that a corrupted number cannot overflow what follows.
  const auto bounded = [&](const std::optional<Stated<int>>& v, const char* what, int lo, int hi = kMax) {
    if (v && (v->value < lo || v->value > hi))
      throw ConfigError(at(file, v->line) + what + " " + std::to_string(v->value) + " is out of range (" +
                        std::to_string(lo) + ".." + std::to_string(hi) + ")");
  };
  for (const auto& [v, what] : {std::pair{&s.layers, "layers"},
                                {&s.hidden, "hidden size"},
                                {&s.ffn_hidden, "ffn hidden size"},
                                {&s.heads, "attention heads"},
                                {&s.kv_heads, "kv heads"},
                                {&s.head_dim, "head dim"},
                                {&s.vocab, "vocabulary"},
                                {&s.seq_len, "sequence length"},
                                {&s.experts, "experts"},
                                {&s.top_k, "top-k"},
                                {&s.expert_ffn_hidden, "expert ffn hidden size"},
                                {&s.gpus, "world size"},
                                {&s.tp, "tp"},
                                {&s.pp, "pp"},
                                {&s.vpp, "vpp"},
                                {&s.cp, "cp"},
                                {&s.ep, "ep"},
                                {&s.etp, "etp"},
                                {&s.dp, "dp"},
                                {&s.micro_batch, "micro batch"},
                                {&s.global_batch, "global batch"},
                                {&s.local_batch, "local batch"}})
    bounded(*v, what, 1);
  bounded(s.zero, "ZeRO stage", 0, 3);
  bounded(s.recompute_num_layers, "recompute_num_layers", 0);
  bounded(s.shared_experts, "shared experts", 0);
  bounded(s.dense_layers, "dense layers", 0);
  if (1LL * (s.tp ? s.tp->value : 1) * (s.pp ? s.pp->value : 1) * (s.cp ? s.cp->value : 1) > kMax)
    throw ConfigError(file + ": tp x pp x cp is out of range");
  ImportedRun r;
  r.id = o.id.empty() ? stem_id(file) : o.id;
  r.framework = log.framework;
  r.source = "shardplan calibrate import-log of " + std::filesystem::path(file).filename().string();
  r.model = model_of(s, o, file);
  if (o.gpu.empty()) throw ConfigError("--system: needed to name the GPU the run used");
  r.gpu = o.gpu;
  r.gpus_per_node = o.gpus_per_node;
  r.nvlink_domain = o.nvlink_domain;
  r.tp = s.tp ? s.tp->value : 1;
  r.pp = s.pp ? s.pp->value : 1;
  r.vpp = s.vpp ? s.vpp->value : 1;
  r.cp = s.cp ? s.cp->value : 1;
  r.ep = s.ep ? s.ep->value : 1;
  if (s.etp) r.etp = s.etp->value;
  r.zero = s.zero ? s.zero->value : 0;
  const int model_parallel = r.tp * r.pp * r.cp;
  if (s.gpus && o.gpus > 0 && s.gpus->value != o.gpus)
    throw ConfigError(at(file, s.gpus->line) + "the log's world size is " + std::to_string(s.gpus->value) +
                      " GPUs, but --gpus says " + std::to_string(o.gpus));
  r.gpus = s.gpus ? s.gpus->value : o.gpus;
  if (s.dp) {
    r.dp = s.dp->value;
    if (1LL * r.dp * model_parallel > kMax) throw ConfigError(file + ": the run's GPU count is out of range");
    if (r.gpus > 0 && r.dp * model_parallel != r.gpus)
      throw ConfigError(at(file, s.dp->line) + "data-parallel size " + std::to_string(r.dp) + " x tp " +
                        std::to_string(r.tp) + " x pp " + std::to_string(r.pp) + " x cp " + std::to_string(r.cp) +
                        " is not the " + std::to_string(r.gpus) + " GPUs of the run");
    r.gpus = r.dp * model_parallel;
  } else {
    if (r.gpus <= 0)
      throw ConfigError(file + ": the log states neither the world size nor the data-parallel size; pass --gpus N");
    if (r.gpus % model_parallel != 0)
      throw ConfigError(file + ": " + std::to_string(r.gpus) +
                        " GPUs are not a multiple of tp x pp x cp = " + std::to_string(model_parallel));
    r.dp = r.gpus / model_parallel;
  }
  if (1LL * r.dp * model_parallel > kMax) throw ConfigError(file + ": the run's GPU count is out of range");
  if (s.global_batch)
    r.global_batch = s.global_batch->value;
  else if (s.local_batch && 1LL * s.local_batch->value * r.dp <= kMax)
    r.global_batch = s.local_batch->value * r.dp;
  else if (s.local_batch)
    throw ConfigError(at(file, s.local_batch->line) + "local batch x data-parallel size is out of range");
  else
    throw ConfigError(file + ": the log states no global batch size");
  if (s.micro_batch) r.micro_batch = s.micro_batch->value;
  if (s.seq_len && o.seq_len > 0 && s.seq_len->value != o.seq_len)
    throw ConfigError(at(file, s.seq_len->line) + "sequence length " + std::to_string(s.seq_len->value) +
                      " in the log, but --seq says " + std::to_string(o.seq_len));
  if (!s.seq_len && o.seq_len <= 0) throw ConfigError(file + ": the log states no sequence length; pass --seq N");
  r.seq_len = s.seq_len ? s.seq_len->value : o.seq_len;
  if (!s.precision) throw ConfigError(file + ": the log states no training precision");
  r.precision = s.precision->value;
  if (s.fp8_recipe) r.fp8_recipe = s.fp8_recipe->value;
  r.recompute = s.recompute ? s.recompute->value : "";
  if (s.recompute_num_layers) r.recompute_num_layers = s.recompute_num_layers->value;
  if (s.sequence_parallel) r.sequence_parallel = s.sequence_parallel->value;
  if (s.tp_comm_overlap) r.tp_comm_overlap = s.tp_comm_overlap->value;

  const SteadyState ss = steady_state(log, o.warmup_steps, r.global_batch);
  if (ss.kept.empty())
    throw ConfigError(at(file, log.steps.back().line) + "no steady-state steps: the " +
                      std::to_string(log.steps.size()) + " logged steps are all warm-up (the first logged step and " +
                      "the next " + std::to_string(o.warmup_steps) + " iterations" +
                      (ss.ramp_dropped ? ", or a different global batch" : "") +
                      "); log a longer run or lower --warmup-steps");
  r.steps_kept = static_cast<int>(ss.kept.size());
  r.warmup_dropped = ss.warmup_dropped;
  std::vector<double> times, tflops, memory;
  const double tokens_per_step = static_cast<double>(r.global_batch) * r.seq_len;
  for (const StepRecord& k : ss.kept) {
    // A throughput-only line (torchtitan's tps, tokens per second per GPU) gives the step time as the step's
    // tokens over the GPUs' rate.
    times.push_back(k.step_time_s > 0 ? k.step_time_s : tokens_per_step / (*k.tokens_per_s_per_gpu * r.gpus));
    if (k.tflops_per_gpu) tflops.push_back(*k.tflops_per_gpu);
    if (k.memory_gib) memory.push_back(*k.memory_gib);
  }
  r.step_time_s = median(times);
  r.tokens_per_s_per_gpu = tokens_per_step / (r.step_time_s * r.gpus);
  if (tflops.size() == times.size()) r.model_tflops_per_gpu = median(tflops);
  std::string memory_from;
  if (memory.size() == times.size()) {
    r.peak_memory_gib = median(memory);
    memory_from = "peak_memory_gib = median " + log.memory_kind + " of those steps";
  } else if (!log.memory_gib.empty()) {
    double peak = 0;
    for (const auto& m : log.memory_gib) peak = std::max(peak, m.value);
    r.peak_memory_gib = peak;
    memory_from = "peak_memory_gib = largest " + log.memory_kind + " of " + std::to_string(log.memory_gib.size()) +
                  " memory report(s)";
  }
  const long first_kept = ss.kept.front().step, last_kept = ss.kept.back().step;
  r.derived_from = "median of " + std::to_string(r.steps_kept) + " steady-state step records (iterations " +
                   std::to_string(first_kept) + ".." + std::to_string(last_kept) + ") after dropping " +
                   std::to_string(r.warmup_dropped) + " warm-up record(s)" +
                   (ss.ramp_dropped ? " and " + std::to_string(ss.ramp_dropped) + " at another global batch" : "") +
                   "; tokens_per_s_per_gpu = global_batch*seq_len/(step_time_s*gpus)" +
                   (r.model_tflops_per_gpu ? "; model_tflops_per_gpu = the framework's own TFLOP/s per GPU" : "") +
                   (memory_from.empty() ? "" : "; " + memory_from);
  r.notes = "imported from " + file + " (" + log.framework + " log)";
  if (o.model) r.notes += " | architecture from --model " + o.model_name + ", checked against the log";
  for (const std::string& n : log.notes) r.notes += " | " + n;
  return r;
}

}  // namespace shardplan::calibrate
