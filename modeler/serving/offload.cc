#include "modeler/serving/offload.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <regex>

#include "modeler/gemm_model.h"
#include "modeler/problems.h"
#include "modeler/serving/engine_memory.h"

namespace shardplan::serving {

const char* home_name(Home h) {
  switch (h) {
    case Home::gpu:
      return "gpu";
    case Home::cpu:
      return "cpu";
    case Home::stream:
      return "stream";
  }
  return "?";
}

namespace {

double cpu_time(const Host& h, double flops, double bytes) {
  return std::max(flops / h.cpu_flops.v, bytes / h.memory_bw.v);
}

}  // namespace

int host_runs(const std::vector<OffloadItem>& items, const std::vector<Home>& homes) {
  int layers = 0;
  for (const OffloadItem& it : items) layers = std::max(layers, it.layer + 1);
  std::vector<char> cpu(layers, 0), gpu(layers, 0);
  for (size_t i = 0; i < items.size() && i < homes.size(); ++i) {
    if (items[i].layer < 0) continue;
    (homes[i] == Home::cpu ? cpu : gpu)[items[i].layer] = 1;
  }
  int runs = 0;
  bool in_cpu_run = false;  // the previous block was computed wholly on the CPU
  for (int l = 0; l < layers; ++l) {
    const bool whole = cpu[l] && !gpu[l];
    if (cpu[l] && gpu[l])
      ++runs;
    else if (whole && !in_cpu_run)
      ++runs;
    in_cpu_run = whole;
  }
  return runs;
}

GraphsVerdict cuda_graphs_off_with_splits(const std::string& engine, const std::string& build_date,
                                          double compute_capability) {
  // ISO dates compare as strings.
  auto on_or_before = [&](const char* day) { return !build_date.empty() && build_date <= day; };
  if (engine == "llama.cpp") {
    if (on_or_before("2026-01-19")) return {true, "CUDA graphs off with graph splits (llama.cpp before PR #18934)"};
    if (compute_capability > 0 && compute_capability < 8.0 && on_or_before("2026-07-16"))
      return {true, "CUDA graphs off below Ampere (llama.cpp before PR #25749)"};
    if (build_date.empty()) return {false, "build date unknown: a CUDA graph per split (llama.cpp PR #18934)"};
    return {false, ""};
  }
  if (engine == "ik_llama.cpp") {
    if (build_date.empty() || on_or_before("2026-01-20"))
      return {true, "CUDA graphs off with graph splits (ik_llama.cpp before PR #1172)"};
    return {false, ""};
  }
  return {false, ""};
}

bool llama_ngl_output_first(const std::string& engine, const std::string& build_date) {
  if (engine != "llama.cpp" && engine != "ik_llama.cpp") return true;
  return build_date.empty() || build_date > "2025-12-17";
}

bool is_pinned(const WeightTensor& t) { return t.role == TensorRole::other || t.role == TensorRole::router; }

Bytes pinned_bytes(const ServingModel& sm) {
  Bytes b;
  for (const WeightTensor& t : sm.tensors)
    if (is_pinned(t)) b += t.bytes;
  return b;
}

std::vector<OffloadItem> offload_items(const OffloadSetup& s) {
  const ServingModel& sm = *s.model;
  const ModelDesc& m = sm.model;
  const Gpu& g = *s.gpu;
  std::vector<OffloadItem> items;
  const double tokens[2] = {s.prefill_tokens, s.decode_batch};
  for (const WeightTensor& t : sm.tensors) {
    if (t.role == TensorRole::token_embd) continue;  // looked up on the host; never multiplied
    if (is_pinned(t)) continue;
    OffloadItem it;
    it.name = t.name;
    it.layer = t.layer;
    it.bytes = t.bytes;
    it.expert = t.experts > 0;
    const Dtype math = math_dtype(t.format, g);
    for (int ph = 0; ph < 2; ++ph) {
      const double n = tokens[ph];
      double touched = 1, flops = 2.0 * n * t.n * t.k;
      if (t.experts > 0) {
        const double pairs = n * m.moe->top_k;
        touched = 1.0 - std::pow(1.0 - 1.0 / t.experts, pairs);
        flops = 2.0 * pairs * t.n * t.k;
        // Grouped experts on the GPU: the touched experts' weights, at the per-expert row count.
        const double rows = pairs / (t.experts * touched);
        it.t_gpu[ph] =
            (weight_gemm_time(g, math, rows, t.n, t.k, t.bytes * (1.0 / t.experts)) * (t.experts * touched)).v;
      } else {
        it.t_gpu[ph] = weight_gemm_time(g, math, n, t.n, t.k, t.bytes).v;
      }
      it.t_cpu[ph] = cpu_time(s.host, flops, t.bytes.v * touched);
      // Streaming copies the whole tensor for the step (llama.cpp's op offload copies the weight of a host
      // tensor to the GPU when the batch is large enough).
      it.t_stream[ph] = t.bytes.v / s.host.pcie_bw.v + it.t_gpu[ph];
      it.host_home[ph] = s.op_offload_min_batch > 0 ? (n >= s.op_offload_min_batch ? Home::stream : Home::cpu)
                                                    : (it.t_cpu[ph] <= it.t_stream[ph] ? Home::cpu : Home::stream);
    }
    items.push_back(it);
  }
  // KV cache per layer: decode reads context x kv elements; prefill attention is compute (causal half).
  WorkerPlan one;
  const double kv_per_token = kv_bytes_per_token(sm, one, 0).v / std::max(1, m.layers);
  for (int i = 0; i < m.layers; ++i) {
    OffloadItem it;
    it.name = "blk." + std::to_string(i) + ".kv";
    it.layer = i;
    it.kv = true;
    const double keys = is_sliding_layer(m, i) ? std::min(s.context, 1.0 * m.sliding_window) : s.context;
    it.bytes = Bytes(kv_per_token * keys * s.decode_batch);
    const double qk = m.mla ? m.mla->kv_lora_rank + m.mla->qk_rope_head_dim : m.head_dim;
    for (int ph = 0; ph < 2; ++ph) {
      const double n = tokens[ph];
      // Prefill: each query sees the cache before its ubatch plus the causal half of the ubatch itself
      // (prefill_keys on average, or n / 2 from an empty cache); the step reads every key up to its last token.
      const double prefill_keys = s.prefill_keys > 0 ? s.prefill_keys : n / 2.0;
      const double attend = ph == 0 ? std::min(keys, prefill_keys) : keys;
      const double flops = 4.0 * n * attend * m.heads * qk;
      const double read = ph == 0 ? kv_per_token * std::min(keys, prefill_keys + n / 2.0) : it.bytes.v;
      it.t_gpu[ph] =
          (g.eff.kernel_overhead + std::max(Flops(flops) / (g.peak_for(Dtype::bf16) * 0.3), Bytes(read) / g.hbm_bw)).v;
      it.t_cpu[ph] = cpu_time(s.host, flops, read);
      it.t_stream[ph] = read / s.host.pcie_bw.v + it.t_gpu[ph];
      // A host KV cache (-ngl below the layer, --no-kv-offload). Under the engine's rule its attention follows the
      // neighbouring weight ops: ggml_backend_sched offers only ops on host weights to the GPU backend, then expands
      // GPU assignments over the ops without weights ("cpu will never be used unless weights are on cpu, or there
      // are no gpu ops between cpu ops", pass 2 of ggml_backend_sched_split_graph, ggml/src/ggml-backend.cpp) and
      // copies their host inputs in. So a step of at least op_offload_min_batch tokens (its weights streamed)
      // attends on the GPU with the cache copied over, and a shorter one (decode) on the CPU. The planner's
      // default (0) takes the cheaper of the two.
      it.host_home[ph] = s.op_offload_min_batch > 0 ? (n >= s.op_offload_min_batch ? Home::stream : Home::cpu)
                                                    : (it.t_cpu[ph] <= it.t_stream[ph] ? Home::cpu : Home::stream);
    }
    items.push_back(it);
  }
  return items;
}

namespace {

// The step of a phase: the sum over items (additive), plus in decode the engine's cost per host run.
void evaluate(const std::vector<OffloadItem>& items, const std::vector<bool>& on_gpu, int ph, const OffloadSetup& s,
              Placement* p) {
  p->home[ph].assign(items.size(), Home::gpu);
  double t = 0, b = 0;
  for (size_t i = 0; i < items.size(); ++i) {
    if (on_gpu[i]) {
      t += items[i].t_gpu[ph];
      b += items[i].bytes.v;
    } else {
      p->home[ph][i] = items[i].host_home[ph];
      t += items[i].off(ph);
    }
  }
  if (ph == 1 && s.decode_host_run_s > 0) t += s.decode_host_run_s * host_runs(items, p->home[ph]);
  p->step[ph] = Seconds(t);
  p->gpu_bytes[ph] = Bytes(b);
}

std::vector<bool> ngl_set(const std::vector<OffloadItem>& items, int layers, int ngl, bool output_first) {
  // Output first: blocks >= first and the output layer (index layers) on the GPU. Before: the last ngl blocks,
  // and the output layer only when ngl exceeds the blocks.
  const int first = output_first ? layers + 1 - ngl : layers - ngl;
  std::vector<bool> on(items.size());
  for (size_t i = 0; i < items.size(); ++i) {
    const bool output = items[i].layer == layers;
    on[i] = ngl > 0 && (output_first || !output ? items[i].layer >= first : ngl > layers);
  }
  return on;
}

double bytes_of(const std::vector<OffloadItem>& items, const std::vector<bool>& on) {
  double b = 0;
  for (size_t i = 0; i < items.size(); ++i) b += on[i] ? items[i].bytes.v : 0;
  return b;
}

// Pairwise improvement: move a host item in (if it fits) or swap it with a resident one when that lowers the
// phase's time; repeat until no move helps. The objective is additive, so each move's gain is exact.
void improve(const std::vector<OffloadItem>& items, int ph, double budget, std::vector<bool>* on) {
  const size_t n = items.size();
  std::vector<double> gain(n);
  for (size_t i = 0; i < n; ++i) gain[i] = items[i].off(ph) - items[i].t_gpu[ph];
  double used = bytes_of(items, *on);
  for (int round = 0; round < 8; ++round) {
    bool changed = false;
    for (size_t b = 0; b < n; ++b) {
      if ((*on)[b] || gain[b] <= 0) continue;
      if (used + items[b].bytes.v <= budget) {
        (*on)[b] = true;
        used += items[b].bytes.v;
        changed = true;
        continue;
      }
      size_t best = n;
      double best_delta = 0;
      for (size_t a = 0; a < n; ++a) {
        if (!(*on)[a] || used - items[a].bytes.v + items[b].bytes.v > budget) continue;
        const double delta = gain[b] - gain[a];
        if (delta > best_delta + 1e-12) {
          best_delta = delta;
          best = a;
        }
      }
      if (best < n) {
        (*on)[best] = false;
        (*on)[b] = true;
        used += items[b].bytes.v - items[best].bytes.v;
        changed = true;
      }
    }
    if (!changed) break;
  }
}

int layers_of(const std::vector<OffloadItem>& items) {
  int l = 0;
  for (const auto& it : items) l = std::max(l, it.layer);
  return l;  // the output layer's index = blocks (or the last block when tied)
}

}  // namespace

Placement layer_placement(const std::vector<OffloadItem>& items, const OffloadSetup& s, int ngl) {
  Placement p;
  p.ngl = ngl;
  const std::vector<bool> on = ngl_set(items, s.model->model.layers, ngl, s.ngl_output_first);
  for (int ph = 0; ph < 2; ++ph) evaluate(items, on, ph, s, &p);
  return p;
}

Placement flags_placement(const std::vector<OffloadItem>& items, const OffloadSetup& s, int ngl, int n_cpu_moe,
                          const std::vector<std::string>& cpu_regexes) {
  Placement p;
  p.ngl = ngl;
  std::vector<bool> on = ngl_set(items, s.model->model.layers, ngl, s.ngl_output_first);
  std::vector<std::regex> res;
  for (const std::string& r : cpu_regexes) {
    try {
      res.emplace_back(r);
    } catch (const std::regex_error&) {
      throw ConfigError("tensor override '" + r + "' is not a regular expression");
    }
  }
  for (size_t i = 0; i < items.size(); ++i) {
    if (items[i].expert && items[i].layer < n_cpu_moe) on[i] = false;
    // llama.cpp matches -ot patterns with std::regex_search against the tensor name.
    for (const auto& re : res)
      if (std::regex_search(items[i].name, re)) on[i] = false;
  }
  for (int ph = 0; ph < 2; ++ph) evaluate(items, on, ph, s, &p);
  return p;
}

Placement best_layer_placement(const std::vector<OffloadItem>& items, const OffloadSetup& s) {
  Placement best;
  const int layers = s.model->model.layers;
  for (int ph = 0; ph < 2; ++ph) {
    double best_t = 1e300;
    for (int ngl = 0; ngl <= layers + 1; ++ngl) {
      const std::vector<bool> on = ngl_set(items, layers, ngl, s.ngl_output_first);
      if (bytes_of(items, on) > s.vram.v) break;  // each ngl holds the previous one's tensors and more
      Placement p;
      evaluate(items, on, ph, s, &p);
      if (p.step[ph].v < best_t) {
        best_t = p.step[ph].v;
        best.home[ph] = p.home[ph];
        best.step[ph] = p.step[ph];
        best.gpu_bytes[ph] = p.gpu_bytes[ph];
        if (ph == 1) best.ngl = ngl;
      }
    }
  }
  (void)layers_of;
  return best;
}

Placement tensor_placement(const std::vector<OffloadItem>& items, const OffloadSetup& s) {
  Placement out;
  const size_t n = items.size();
  const int layers = s.model->model.layers;
  for (int ph = 0; ph < 2; ++ph) {
    // Greedy by benefit per byte.
    std::vector<size_t> order(n);
    std::iota(order.begin(), order.end(), 0);
    auto ratio = [&](size_t i) { return (items[i].off(ph) - items[i].t_gpu[ph]) / std::max(1.0, items[i].bytes.v); };
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return ratio(a) > ratio(b); });
    std::vector<bool> greedy(n, false);
    double used = 0;
    for (size_t i : order) {
      if (ratio(i) <= 0) break;
      if (used + items[i].bytes.v <= s.vram.v) {
        greedy[i] = true;
        used += items[i].bytes.v;
      }
    }
    improve(items, ph, s.vram.v, &greedy);
    // Second start: the best -ngl split for this phase, improved the same way.
    std::vector<bool> seed(n, false);
    double best_t = 1e300;
    for (int ngl = 0; ngl <= layers + 1; ++ngl) {
      const std::vector<bool> on = ngl_set(items, layers, ngl, s.ngl_output_first);
      if (bytes_of(items, on) > s.vram.v) break;
      Placement p;
      evaluate(items, on, ph, s, &p);
      if (p.step[ph].v < best_t) {
        best_t = p.step[ph].v;
        seed = on;
      }
    }
    improve(items, ph, s.vram.v, &seed);
    Placement a, b;
    evaluate(items, greedy, ph, s, &a);
    evaluate(items, seed, ph, s, &b);
    const Placement& w = a.step[ph] <= b.step[ph] ? a : b;
    out.home[ph] = w.home[ph];
    out.step[ph] = w.step[ph];
    out.gpu_bytes[ph] = w.gpu_bytes[ph];
  }
  return out;
}

std::string llama_cpp_flags(const std::vector<OffloadItem>& items, const Placement& p, int phase) {
  // Host tensors grouped by name stem (blk.N.<stem>) -> the layers that hold them.
  std::map<std::string, std::vector<int>> host;
  int expert_host_prefix = -1;
  bool experts_prefix = true;
  std::vector<int> expert_layers;
  bool kv_host = false;
  for (size_t i = 0; i < items.size(); ++i) {
    if (p.home[phase][i] == Home::gpu) continue;
    const OffloadItem& it = items[i];
    if (it.kv) {
      kv_host = true;
      continue;
    }
    const bool block = it.name.rfind("blk.", 0) == 0;
    const std::string stem = block ? it.name.substr(it.name.find('.', 4) + 1) : it.name;
    host[stem].push_back(block ? it.layer : -1);
    if (it.expert) expert_layers.push_back(it.layer);
  }
  std::sort(expert_layers.begin(), expert_layers.end());
  expert_layers.erase(std::unique(expert_layers.begin(), expert_layers.end()), expert_layers.end());
  for (size_t i = 0; i < expert_layers.size(); ++i)
    if (expert_layers[i] != static_cast<int>(i)) experts_prefix = false;
  // --n-cpu-moe N moves every expert tensor of blocks 0..N-1: it fits only when none of them stayed resident.
  for (size_t i = 0; i < items.size() && experts_prefix; ++i)
    if (items[i].expert && items[i].layer < static_cast<int>(expert_layers.size()) && p.home[phase][i] == Home::gpu)
      experts_prefix = false;
  std::string flags = "-ngl 999";
  bool only_experts = !host.empty();
  for (const auto& [stem, layers] : host)
    if (stem.find("_exps") == std::string::npos) only_experts = false;
  if (only_experts && experts_prefix && !expert_layers.empty()) {
    expert_host_prefix = static_cast<int>(expert_layers.size());
    flags += " --n-cpu-moe " + std::to_string(expert_host_prefix);
  } else {
    for (const auto& [stem, layers] : host) {
      if (layers.size() == 1 && layers[0] < 0) {
        flags += " -ot '" + stem + "=CPU'";
        continue;
      }
      std::string alt;
      for (int l : layers) alt += (alt.empty() ? "" : "|") + std::to_string(l);
      flags += " -ot 'blk\\.(" + alt + ")\\." + stem + "=CPU'";
    }
  }
  if (kv_host)
    flags +=
        "  (some layers' KV in host memory: not expressible per layer in llama.cpp; --no-kv-offload "
        "moves all of it)";
  return flags;
}

}  // namespace shardplan::serving
