#include "modeler/serving/flexgen.h"

#include <algorithm>
#include <cmath>

#include "modeler/problems.h"

namespace shardplan::serving {

namespace {

// Bytes per value as FlexGen stores it. fp16 everywhere (OPT in FlexGen is fp16). The 4-bit group-wise format
// (flexgen/compression.py, TorchCompressedDevice.allocate: group 64, two 4-bit values per byte plus an fp16
// scale and an fp16 minimum per group) is 32 + 4 bytes per 64 values.
constexpr double kFp16 = 2.0;
constexpr double kCompressed = 36.0 / 64.0;
// Device-memory traffic per value decompressed on the GPU (compression.py decompress, FlexLLMGen 004ffef), per
// output value of one packed byte's two: bitwise_right_shift(4) reads the packed byte and writes a uint8
// temporary (0.5 + 0.5), the assignment into the fp16 output's even slots reads it and writes 2 bytes (0.5 + 1);
// bitwise_and(0xF) and the odd slots the same: 5 bytes; div_ by the scale and add_ of the minimum, each a read
// and a write of fp16: 8. Counted from the code, not measured (was 11.5, which left out the temporaries' reads).
constexpr double kDecompressTraffic = 13.0;
// Per value compressed on the GPU (compression.py compress: min and max reductions, subtract, scale, clamp and
// round in place, the uint8 cast and the nibble packing): about a dozen fp16 passes, 25 bytes counted.
constexpr double kCompressTraffic = 25.0;
// CPU attention over a CPU-resident fp16 cache (flex_opt.py load_cache path 1, pytorch_backend.py mha_gen): the
// cache is copied into an fp32 workspace (read 2, write 4, plus 4 of read-for-ownership: ordinary x86 stores
// fetch the line first, Intel 64 and IA-32 Optimization Reference Manual, non-temporal stores), then both
// torch.bmm calls read the fp32 copy (4). 14 bytes of DRAM traffic per cached value.
constexpr double kCpuAttentionCachedTraffic = 14.0;
// Cache on disk with CPU attention: the disk copy threads fill the fp32 workspace; the CPU then reads it (4).
constexpr double kCpuAttentionDiskTraffic = 4.0;
// Prefill attention scores (pytorch_backend.py mha): bmm writes fp16 scores (2), torch.where reads and writes
// them (4), softmax reads and writes (4), the second bmm reads them (2).
constexpr double kScoreTraffic = 12.0;
// Elementwise device traffic per token and hidden value outside the GEMMs, counted from pytorch_backend.py
// (FMInference/FlexLLMGen 004ffef), fp16 reads and writes of 2 bytes. Attention (mha / mha_gen): layer_norm
// (read, write: 4), q * scaling (4), the permute().reshape() copies of q, k and v into (b * n_head, ...) (12),
// value.transpose().reshape() (4), the residual value.add_(inputs) (read 2 x 2, write 2: 6): 30. MLP (mlp):
// layer_norm (4) and add_ (6) per hidden value, the in-place relu (4) per intermediate value.
constexpr double kAttentionElementwise = 30.0;
constexpr double kMlpElementwisePerHidden = 10.0;
constexpr double kMlpElementwisePerFfn = 4.0;
// OPT's learned position table has max_position_embeddings + 2 rows (HF OPTLearnedPositionalEmbedding offset).
constexpr int kOptDefaultPositions = 2048;

enum class Kind { embed_in, attention, mlp, embed_out };

// One weight tensor of a sub-layer, in the order init_weight lists it (flex_opt.py weight_specs).
struct Tensor {
  double values;
  bool matrix;  // 2-D: compressed with compress_weight and pinned only with pin_weight; 1-D: fp16, always pinned
};

struct SubLayer {
  Kind kind;
  std::vector<Tensor> tensors;
  double params = 0;  // values stored for this layer's weights
};

SubLayer make(Kind kind, std::vector<Tensor> tensors) {
  SubLayer l{kind, std::move(tensors)};
  for (const Tensor& t : l.tensors) l.params += t.values;
  return l;
}

// The time each resource is busy during one (sub-layer, GPU batch) step.
struct Busy {
  // GPU kernels on the default stream, the hidden-state copies that share it, and CPU attention (the CPU part
  // blocks the launching thread).
  double compute = 0;
  // Host copies of pageable tensors into pinned memory on the launching thread before compute is launched:
  // general_copy's src.pin_memory() relay (pytorch_backend.py) runs inside load_weight and load_cache, which the
  // loop calls before compute_layer, so the GPU waits for them and their DMA starts only after them.
  double stage = 0;
  double h2d = 0, d2h = 0, disk_read = 0, disk_write = 0;
  Busy& operator+=(const Busy& o) {
    compute += o.compute, stage += o.stage, h2d += o.h2d, d2h += o.d2h, disk_read += o.disk_read,
        disk_write += o.disk_write;
    return *this;
  }
  double longest() const { return std::max({stage + compute, stage + h2d, d2h, disk_read, disk_write}); }
  double sum() const { return compute + stage + h2d + d2h + disk_read + disk_write; }
};

void check_percent(double p, const char* key) {
  if (!(p >= 0 && p <= 100)) throw ConfigError(std::string("flexgen policy: ") + key + " must be in [0, 100]");
}

void check_pair(double gpu, double cpu, const char* what) {
  if (gpu + cpu > 100 + 1e-9)
    throw ConfigError(std::string("flexgen policy: ") + what + " GPU + CPU percent exceeds 100 (" + num(gpu + cpu) +
                      ")");
}

void validate(const FlexgenPolicy& p, const FlexgenWorkload& w) {
  if (p.gpu_batch_size < 1) throw ConfigError("flexgen policy: gpu_batch_size must be at least 1");
  if (p.num_gpu_batches < 1) throw ConfigError("flexgen policy: num_gpu_batches must be at least 1");
  check_percent(p.w_gpu_percent, "w_gpu_percent");
  check_percent(p.w_cpu_percent, "w_cpu_percent");
  check_percent(p.cache_gpu_percent, "cache_gpu_percent");
  check_percent(p.cache_cpu_percent, "cache_cpu_percent");
  check_percent(p.act_gpu_percent, "act_gpu_percent");
  check_percent(p.act_cpu_percent, "act_cpu_percent");
  check_pair(p.w_gpu_percent, p.w_cpu_percent, "weights");
  check_pair(p.cache_gpu_percent, p.cache_cpu_percent, "cache");
  check_pair(p.act_gpu_percent, p.act_cpu_percent, "activations");
  // flex_opt.py init_cache_one_gpu_batch asserts a compressed cache is not split over devices.
  if (p.compress_cache && p.cache_gpu_percent != 100 && p.cache_cpu_percent != 100 &&
      p.cache_gpu_percent + p.cache_cpu_percent != 0)
    throw ConfigError("flexgen policy: compress_cache needs the whole cache on one device (FlexGen asserts it)");
  if (w.prompt_len < 1 || w.gen_len < 1) throw ConfigError("flexgen workload: prompt and generation lengths >= 1");
}

std::vector<SubLayer> sub_layers(const ModelDesc& m) {
  const double h = m.hidden, f = m.ffn_hidden;
  const int positions = m.max_position > 0 ? m.max_position : kOptDefaultPositions;
  std::vector<SubLayer> out;
  // w_token, w_pos (flex_opt.py InputEmbed).
  out.push_back(make(Kind::embed_in, {{m.vocab * h, true}, {(positions + 2.0) * h, true}}));
  const Tensor mat{h * h, true}, vec{h, false};
  for (int i = 0; i < m.layers; ++i) {
    // w_q, b_q, w_k, b_k, w_v, b_v, w_out, b_out, then the pre-attention LayerNorm (flex_opt.py SelfAttention).
    out.push_back(make(Kind::attention, {mat, vec, mat, vec, mat, vec, mat, vec, vec, vec}));
    // wi, bi, wo, bo, then the pre-MLP LayerNorm (flex_opt.py MLP).
    out.push_back(make(Kind::mlp, {{f * h, true}, {f, false}, {h * f, true}, vec, vec, vec}));
  }
  // The final LayerNorm and FlexGen's own copy of the token embedding for the logits (OutputEmbed).
  out.push_back(make(Kind::embed_out, {vec, vec, {m.vocab * h, true}}));
  return out;
}

struct Ctx {
  const ModelDesc& m;
  const FlexgenPolicy& p;
  const FlexgenMachine& hw;
  double prompt = 0;
  double cache_len = 0;  // positions allocated per sequence: prompt + gen_len - 1 (init_cache_one_gpu_batch)
  double w_bytes = kFp16, c_bytes = kFp16;  // per value as stored (w_bytes: 2-D weights)
  double cg = 0, cc = 0, cd = 0, ac = 0, ad = 0;
  double cache_d2h = 0;  // bytes/s of new KV to the CPU-resident cache (never pinned), through the copy threads
  double stage_s_per_byte = 0;  // a pageable-to-pinned host copy: a read and a write at DRAM bandwidth
};

// Where one sub-layer's weights live, in bytes as stored.
struct Placed {
  double gpu = 0, cpu_pinned = 0, cpu_pageable = 0, disk = 0;
};

// flex_opt.py init_weight_list: every tensor goes whole to one device, the one whose share (listed disk, CPU,
// GPU: get_choice over their cumulative percents) holds the midpoint of the tensor's cumulative size within its
// sub-layer. 2-D tensors are compressed with compress_weight and pinned with pin_weight; 1-D ones are fp16 and
// pinned.
Placed place(const Ctx& c, const SubLayer& l) {
  const double disk_pct = std::max(0.0, 100 - c.p.w_gpu_percent - c.p.w_cpu_percent);
  const double bounds[2] = {disk_pct, disk_pct + c.p.w_cpu_percent};
  Placed out;
  double cum = 0;
  for (const Tensor& t : l.tensors) {
    cum += t.values;
    const double mid_pct = 100 * (cum - t.values / 2) / l.params;
    const double bytes = t.values * (t.matrix ? c.w_bytes : kFp16);
    if (mid_pct < bounds[0]) {
      out.disk += bytes;
    } else if (mid_pct < bounds[1]) {
      (!t.matrix || c.p.pin_weight ? out.cpu_pinned : out.cpu_pageable) += bytes;
    } else {
      out.gpu += bytes;
    }
  }
  return out;
}

// GPU time of a linear layer: the larger of its math at the sustained GEMM rate and one read of its fp16 weights.
double linear(const Ctx& c, double tokens, double params) {
  return std::max(2 * tokens * params / c.hw.gpu_gemm.v, kFp16 * params / c.hw.gpu_memory_bw.v);
}

// Own work of one GPU batch in sub-layer `l` at token index i (0 = prefill; context = prompt + i otherwise).
Busy own_work(const Ctx& c, const SubLayer& l, int i) {
  Busy b;
  const double gbs = c.p.gpu_batch_size, h = c.m.hidden;
  const bool prefill = i == 0;
  const double tokens = gbs * (prefill ? c.prompt : 1);
  const double mem = c.hw.gpu_memory_bw.v;
  if (c.p.compress_weight) {  // the 2-D tensors are decompressed for every GPU batch
    double matrix_values = 0;
    for (const Tensor& t : l.tensors) matrix_values += t.matrix ? t.values : 0;
    b.compute += kDecompressTraffic * matrix_values / mem;
  }
  switch (l.kind) {
    case Kind::embed_in:
      break;  // a gather: no math worth timing
    case Kind::embed_out:
      // Prefill computes logits for every prompt position (pytorch_backend.py opt_output_embed).
      b.compute += linear(c, tokens, c.m.vocab * h);
      break;
    case Kind::mlp:
      b.compute += linear(c, tokens, l.params);
      b.compute += tokens * (kMlpElementwisePerHidden * h + kMlpElementwisePerFfn * c.m.ffn_hidden) / mem;
      break;
    case Kind::attention: {
      b.compute += linear(c, tokens, 4 * h * h) + kAttentionElementwise * tokens * h / mem;
      if (prefill) {
        const double s = c.prompt;
        b.compute += 4 * gbs * s * s * h / c.hw.gpu_gemm.v + kScoreTraffic * gbs * c.m.heads * s * s / mem;
        if (c.p.compress_cache) b.compute += kCompressTraffic * 2 * gbs * s * h / mem;
      } else {
        const double values = 2 * gbs * (c.prompt + i) * h;                       // K and V over the context
        const bool cpu_attention = c.p.cpu_cache_compute && !c.p.compress_cache;  // load_cache path 0 if compressed
        if (cpu_attention) {
          b.compute += c.cg * values * kFp16 / mem;
          b.compute +=
              (c.cc * kCpuAttentionCachedTraffic + c.cd * kCpuAttentionDiskTraffic) * values / c.hw.host_memory_bw.v;
          b.disk_read += c.cd * values * kFp16 / c.hw.disk_read.v;
        } else {
          // Non-GPU shares are copied to the GPU (the pageable CPU share through the pin_memory() relay, disk
          // ones through the disk threads), then attention reads fp16.
          b.stage += c.cc * values * c.c_bytes * c.stage_s_per_byte;
          b.h2d += (c.cc + c.cd) * values * c.c_bytes / c.hw.pcie_h2d.v;
          b.disk_read += c.cd * values * c.c_bytes / c.hw.disk_read.v;
          // A compressed cache at home on the GPU is not copied (smart_copy returns the home itself), and mha_gen
          // decompresses that whole tensor before slicing the context off it (`decompress(k_cache)[:src_s]`,
          // pytorch_backend.py, FlexLLMGen 004ffef): every allocated position, prompt + gen_len - 1. A copied
          // (CPU or disk) cache holds only the context (load_cache indices 0 .. prompt + i).
          if (c.p.compress_cache)
            b.compute += kDecompressTraffic * (c.cg * 2 * gbs * c.cache_len * h + (1 - c.cg) * values) / mem;
          b.compute += values * kFp16 / mem;
        }
      }
      // The new tokens' K and V go to the cache's homes (store_cache).
      const double fresh = 2 * gbs * (prefill ? c.prompt : 1) * h * c.c_bytes;
      b.d2h += c.cc * fresh / c.cache_d2h + c.cd * fresh / c.hw.pcie_d2h.v;
      b.disk_write += c.cd * fresh / c.hw.disk_write.v;
      break;
    }
  }
  // The hidden state leaves for its home after the layer and comes back before the next (store/load_hidden).
  // To and from the CPU (pinned: TorchDevice.allocate pins CPU tensors by default) these are plain non_blocking
  // copies issued outside any stream context, so on the default stream, in series with compute. Disk copies go
  // through the copy threads.
  const double hidden = tokens * h * kFp16;
  b.compute += c.ac * hidden * (1 / c.hw.pcie_d2h.v + 1 / c.hw.pcie_h2d.v);
  b.d2h += c.ad * hidden / c.hw.pcie_d2h.v;
  b.h2d += c.ad * hidden / c.hw.pcie_h2d.v;
  b.disk_write += c.ad * hidden / c.hw.disk_write.v;
  b.disk_read += c.ad * hidden / c.hw.disk_read.v;
  return b;
}

// Loading one sub-layer's weights to the GPU (load_weight at k == 0).
// Pageable CPU weights (pin_weight false) are first copied into pinned memory on the launching thread.
Busy weight_load(const Ctx& c, const Placed& w) {
  Busy b;
  b.stage = w.cpu_pageable * c.stage_s_per_byte;
  b.h2d = (w.cpu_pinned + w.cpu_pageable + w.disk) / c.hw.pcie_h2d.v;
  b.disk_read = w.disk / c.hw.disk_read.v;
  return b;
}

// One token of the whole block through every sub-layer, as generation_loop_overlap_multi_batch orders it: the
// step of (layer j, batch k) runs batch k's work while the next sub-layer's weights (at k == 0) and the next
// step's inputs load and the previous step's outputs store; each step ends in a sync, so it lasts as long as its
// busiest resource. Without overlap (generation_loop_normal) everything adds up.
std::vector<double> layer_times(const Ctx& c, const std::vector<SubLayer>& ls, int i) {
  const int nb = c.p.num_gpu_batches;
  const int n = static_cast<int>(ls.size());
  std::vector<Busy> own(n), wl(n);
  for (int j = 0; j < n; ++j) own[j] = own_work(c, ls[j], i), wl[j] = weight_load(c, place(c, ls[j]));
  std::vector<double> t(n, 0.0);
  for (int j = 0; j < n; ++j) {
    for (int k = 0; k < nb; ++k) {
      if (!c.p.overlap) {
        t[j] += own[j].sum() + (k == 0 ? wl[j].sum() : 0);
        continue;
      }
      // Compute of this step; loads (h2d, disk reads) belong to the next step's batch, stores to the previous
      // one's: in the steady state each step carries one batch's worth of each, plus the next layer's weights.
      Busy step = own[j];
      if (k == 0) step += wl[(j + 1) % n];
      t[j] += step.longest();
    }
  }
  return t;
}

double token_time(const Ctx& c, const std::vector<SubLayer>& ls, int i) {
  double total = 0;
  for (double t : layer_times(c, ls, i)) total += t;
  return total;
}

// FlexGen's --debug fewer_batch decode (flex_opt.py generation_loop_debug_multi_batch and _single_batch): from
// token 1 on, 20 sub-layer steps run (each timed over all GPU batches, "decoding_gpu_batch"), the mean of the
// last ten (costs[10:]) times num_layers (the 2 L + 2 sub-layers) is every decode token's time.
double fewer_batch_decode_time(const Ctx& c, const std::vector<SubLayer>& ls, int gen_len) {
  constexpr int kRun = 20, kSkip = 10;
  const int n = static_cast<int>(ls.size());
  std::vector<double> steps;
  for (int i = 1; static_cast<int>(steps.size()) < kRun; ++i) {
    const std::vector<double> t = layer_times(c, ls, i);
    for (int j = 0; j < n && static_cast<int>(steps.size()) < kRun; ++j) steps.push_back(t[j]);
  }
  double mean = 0;
  for (int s = kSkip; s < kRun; ++s) mean += steps[s] / (kRun - kSkip);
  return (gen_len - 1) * n * mean;
}

// Decode tokens 1..gen_len-1. A token's time is a maximum of terms linear in its context, so it is convex and
// piecewise linear in i: long generations are summed from at most kSamples evaluated tokens by the trapezoid rule
// (exact where the time is linear between samples), so a row asking for millions of tokens cannot hang.
double decode_time(const Ctx& c, const std::vector<SubLayer>& ls, int gen_len) {
  constexpr int kSamples = 256;
  const int n = gen_len - 1;  // tokens to sum
  if (n <= 0) return 0;
  double sum = 0;
  if (n <= kSamples) {
    for (int i = 1; i <= n; ++i) sum += token_time(c, ls, i);
    return sum;
  }
  double prev_t = token_time(c, ls, 1), first = prev_t;
  int prev_i = 1;
  for (int k = 1; k < kSamples; ++k) {
    const int i = 1 + static_cast<int>(std::lround(static_cast<double>(k) * (n - 1) / (kSamples - 1)));
    const double t = token_time(c, ls, i);
    sum += 0.5 * (prev_t + t) * (i - prev_i);
    prev_t = t, prev_i = i;
  }
  return sum + 0.5 * (first + prev_t);
}

}  // namespace

FlexgenPrediction flexgen_predict(const ModelDesc& model, const FlexgenPolicy& policy, const FlexgenMachine& hw,
                                  const FlexgenWorkload& work) {
  validate(policy, work);
  FlexgenPolicy run = policy;
  if (run.debug_fewer_batch) run.overlap = true;  // the debug loops are the overlapped ones
  Ctx c{model, run, hw};
  c.prompt = work.prompt_len;
  c.cache_len = work.prompt_len + work.gen_len - 1.0;
  c.w_bytes = policy.compress_weight ? kCompressed : kFp16;
  c.c_bytes = policy.compress_cache ? kCompressed : kFp16;
  c.cg = policy.cache_gpu_percent / 100, c.cc = policy.cache_cpu_percent / 100;
  c.cd = std::max(0.0, 1 - c.cg - c.cc);
  c.ac = policy.act_cpu_percent / 100;
  c.ad = std::max(0.0, 1 - policy.act_gpu_percent / 100 - c.ac);
  // Pageable CPU tensors (weights with pin_weight false, and the CPU cache, which FlexGen allocates with
  // pin_memory = False, "high memory overhead", pytorch_backend.py and compression.py init_cache_one_gpu_batch)
  // reach the GPU through general_copy's src.pin_memory(): a host copy, a read and a write at DRAM bandwidth,
  // then a pinned DMA. New KV going to a pageable CPU cache takes the copy threads' pinned relay: DMA, then the
  // host copy, in series on that thread.
  c.stage_s_per_byte = 2.0 / hw.host_memory_bw.v;
  c.cache_d2h = 1.0 / (1.0 / hw.pcie_d2h.v + c.stage_s_per_byte);

  const auto ls = sub_layers(model);
  FlexgenPrediction out;
  // Homes: weights by share; the cache holds prompt + gen_len - 1 positions per sequence (init_cache_one_gpu_batch).
  Placed weights;
  double largest = 0;
  for (const SubLayer& l : ls) {
    const Placed w = place(c, l);
    weights.gpu += w.gpu, weights.cpu_pinned += w.cpu_pinned, weights.cpu_pageable += w.cpu_pageable;
    weights.disk += w.disk;
    largest = std::max(largest, l.params);
  }
  const double block = policy.block_size();
  const double cache = 2.0 * model.layers * block * (work.prompt_len + work.gen_len - 1) * model.hidden * c.c_bytes;
  out.gpu_home = Bytes(weights.gpu + c.cg * cache);
  out.cpu_home = Bytes(weights.cpu_pinned + weights.cpu_pageable + c.cc * cache);
  out.disk_home = Bytes(weights.disk + c.cd * cache);
  // On the GPU besides the homes: the double-buffered fp16 weights of the layer computing and the one loading.
  const Bytes gpu_need = out.gpu_home + Bytes(2 * largest * kFp16);
  if (gpu_need > hw.gpu_memory)
    throw Infeasible("flexgen: GPU needs " + num(to_GiB(gpu_need), "%.1f") + " GiB (homes + two layers' weights), " +
                     hw.name + " has " + num(to_GiB(hw.gpu_memory), "%.1f"));
  if (out.cpu_home > hw.host_memory)
    throw Infeasible("flexgen: CPU share needs " + num(to_GiB(out.cpu_home), "%.1f") + " GiB, " + hw.name + " has " +
                     num(to_GiB(hw.host_memory), "%.1f"));
  if (out.disk_home > hw.disk)
    throw Infeasible("flexgen: disk share needs " + num(to_GiB(out.disk_home), "%.1f") + " GiB, " + hw.name + " has " +
                     num(to_GiB(hw.disk), "%.1f"));

  out.prefill = Seconds(token_time(c, ls, 0));
  out.decode = Seconds(policy.debug_fewer_batch && work.gen_len > 1 ? fewer_batch_decode_time(c, ls, work.gen_len)
                                                                    : decode_time(c, ls, work.gen_len));
  const double total = out.prefill.v + out.decode.v;
  out.throughput_tokens_per_s = block * work.gen_len / total;
  out.decode_tokens_per_s = work.gen_len > 1 ? block * (work.gen_len - 1) / out.decode.v : 0;
  out.prefill_tokens_per_s = block * work.prompt_len / out.prefill.v;
  return out;
}

}  // namespace shardplan::serving
