// Inputs for the modeler's unit tests, built in code (no files): small models whose numbers can be checked by
// hand, two real models, and a synthetic GPU, cluster and framework with round numbers and every efficiency 1, so
// that a test's expected value is the formula itself. Header-only: the test glob compiles *_test.cc files only.
#pragma once

#include <string>
#include <utility>

#include "modeler/evaluate.h"
#include "modeler/framework.h"
#include "modeler/model_desc.h"
#include "modeler/plan.h"
#include "modeler/problems.h"
#include "modeler/strategies/strategy.h"
#include "modeler/system.h"
#include "modeler/workload.h"

namespace shardplan::test {

/// A model of the given shape with every ModelDesc default (plain GELU MLP, untied, no biases, LayerNorm, RoPE):
/// the common start of the tests' hand-counted models, which then set what differs.
inline ModelDesc plain_model(std::string name, int layers, int hidden, int ffn_hidden, int heads, int kv_heads,
                             int head_dim, int vocab) {
  ModelDesc m;
  m.name = std::move(name);
  m.layers = layers;
  m.hidden = hidden;
  m.ffn_hidden = ffn_hidden;
  m.heads = heads;
  m.kv_heads = kv_heads;
  m.head_dim = head_dim;
  m.vocab = vocab;
  return m;
}

/// 2 layers, h 64, f 4h (plain GELU MLP), 4 heads of 16 (MHA), V 128, LayerNorm, RoPE, no biases, untied.
/// The shape of Korthikanti et al.'s activation derivation (f = 4h, a x d = h).
inline ModelDesc tiny_model() { return plain_model("tiny", 2, 64, 256, 4, 4, 16, 128); }

/// The tiny model with grouped-query attention (2 K/V heads) and a SwiGLU MLP of width 96 per projection.
inline ModelDesc tiny_gqa_gated() {
  ModelDesc m = tiny_model();
  m.name = "tiny-gqa-gated";
  m.kv_heads = 2;
  m.gated_mlp = true;
  m.ffn_hidden = 96;
  m.norm = NormKind::rmsnorm;
  return m;
}

/// The GQA/SwiGLU tiny model as a mixture of experts: 2 layers, the first dense; 8 experts of width 32, top-2,
/// one shared expert.
inline ModelDesc tiny_moe() {
  ModelDesc m = tiny_gqa_gated();
  m.name = "tiny-moe";
  MoeDesc e;
  e.experts = 8;
  e.top_k = 2;
  e.expert_ffn_hidden = 32;
  e.shared_experts = 1;
  e.dense_layers = 1;
  m.moe = e;
  return m;
}

/// GPT-3 175B as Megatron-LM trains it (Narayanan et al. 2021, Table 1): 96 layers, h 12288, 96 heads, V 51200,
/// tied embeddings, learned positions (2048), biases, LayerNorm.
inline ModelDesc gpt3_175b() {
  ModelDesc m = plain_model("gpt3-175b", 96, 12288, 4 * 12288, 96, 96, 128, 51200);
  m.tied_embeddings = true;
  m.linear_bias = true;
  m.norm = NormKind::layernorm;
  m.position = PositionKind::learned;
  m.max_position = 2048;
  return m;
}

/// Llama-2-7B (meta-llama/Llama-2-7b-hf config.json): 32 layers, h 4096, SwiGLU 11008, 32 heads (MHA), V 32000,
/// untied, RMSNorm, RoPE, no biases. 6,738,415,616 parameters.
inline ModelDesc llama2_7b() {
  ModelDesc m = plain_model("llama-2-7b", 32, 4096, 11008, 32, 32, 128, 32000);
  m.gated_mlp = true;
  m.norm = NormKind::rmsnorm;
  return m;
}

/// Llama-3-8B (meta-llama/Meta-Llama-3-8B config.json; torchtitan's llama3 "8B" flavor): 32 layers, h 4096,
/// SwiGLU 14336, 32 query heads and 8 K/V heads of 128, V 128256, untied, RMSNorm, RoPE, no biases.
inline ModelDesc llama3_8b() {
  ModelDesc m = llama2_7b();
  m.name = "llama-3-8b";
  m.ffn_hidden = 14336;
  m.kv_heads = 8;
  m.vocab = 128256;
  return m;
}

constexpr double kPeak = 100e12;    // synthetic bf16 dense peak, FLOP/s
constexpr double kHbm = 1000e9;     // synthetic HBM bandwidth, B/s
constexpr double kNvlink = 100e9;   // synthetic tier-0 bandwidth per GPU, B/s
constexpr double kNetwork = 10e9;   // synthetic tier-1 bandwidth per GPU, B/s

/// A GPU whose achieved rates are its peaks: 100 TFLOP/s bf16 only, 1000 GB/s HBM, 80 GiB, every efficiency curve
/// constant 1 (FlashAttention-2 tables included, so attention runs at the peak too), no kernel overhead, and
/// sm_count 0 (no wave quantization). Its name matches no Hopper prefix (128x128 GEMM tiles).
inline Gpu synthetic_gpu() {
  Gpu g;
  g.name = "synthetic";
  g.peak[static_cast<int>(Dtype::bf16)] = FlopsPerSec(kPeak);
  g.hbm_capacity = GiB(80);
  g.hbm_bw = BytesPerSec(kHbm);
  g.sm_count = 0;
  g.eff.gemm[static_cast<int>(Dtype::bf16)] = Curve::constant(1.0, "test");
  g.eff.attention_fwd[static_cast<int>(AttentionKernel::flash2)] = Curve::constant(1.0, "test");
  g.eff.attention_bwd[static_cast<int>(AttentionKernel::flash2)] = Curve::constant(1.0, "test");
  g.eff.memory = Curve::constant(1.0, "test");
  g.eff.kernel_overhead = Seconds(0);
  return g;
}

/// `gpus` synthetic GPUs, 8 per node: an 8-GPU domain at 100 GB/s per GPU, then a network at 10 GB/s per GPU,
/// both with zero latency and efficiency 1.
inline System synthetic_system(int gpus = 8) {
  System s;
  s.name = "synthetic";
  s.gpu = synthetic_gpu();
  s.gpus = gpus;
  s.gpus_per_node = 8;
  Tier inner;
  inner.name = "nvlink";
  inner.domain_gpus = 8;
  inner.bw_per_gpu = BytesPerSec(kNvlink);
  inner.latency = Seconds(0);
  inner.busbw_eff = Curve::constant(1.0, "test");
  Tier outer;
  outer.name = "network";
  outer.domain_gpus = 0;
  outer.bw_per_gpu = BytesPerSec(kNetwork);
  outer.latency = Seconds(0);
  outer.busbw_eff = Curve::constant(1.0, "test");
  s.tiers = {inner, outer};
  s.host_memory_per_gpu = GiB(128);
  return s;
}

/// Megatron-LM's profile with every trait set here, so the tests do not move when the built-in profile does:
/// FlashAttention-2 (scores never materialised), fused elementwise kernels, overlapped gradient reduction and parameter
/// gather, 2 + 4 + 12 bytes of state per parameter.
inline Framework synthetic_framework() {
  const Framework* base = find_framework("megatron-lm");
  Framework f = base ? *base : Framework{};
  f.name = "synthetic";
  f.attention = AttentionKernel::flash2;
  f.materialized_attention = false;
  f.fused_elementwise = true;
  f.unfused_passes_per_norm = 1.0;
  f.overlap_grad_reduce = true;
  f.overlap_param_gather = true;
  f.reshard_after_forward = true;
  f.state = {2, 4, 12};
  f.fsdp_unsharded_param_bytes = 0;
  f.pp_deferred_grad_bytes = 0;
  f.pp_microbatches_default_to_pp = false;
  f.fp8_caches_weights = true;
  f.offers_recompute_modules = true;
  f.loss_parallel_cross_entropy_bytes_per_logit = 0;
  f.loss_parallel_logits_bytes_per_logit = 0;
  f.cp_merge = CpMergeBytes{};  // Transformer Engine's ring merges
  f.fused_moe_permutation = false;
  f.cp_allgather_runs_ring_loop = false;
  f.cp_grad_kv_bytes = 2.0;
  return f;
}

/// Owns what a Context refers to, and runs the strategies the way evaluate() does.
struct Setup {
  ModelDesc model = tiny_model();
  System system = synthetic_system();
  Plan plan;
  Framework framework = synthetic_framework();

  Setup() = default;
  Setup(ModelDesc m, Plan p, int gpus) : model(std::move(m)), system(synthetic_system(gpus)), plan(p) {}
  Setup(ModelDesc m, Plan p) : Setup(std::move(m), p, p.gpus()) {}

  Context ctx() const { return Context{model, system, plan, framework}; }

  /// The unsharded layer shape, before any strategy.
  Sharding unsharded() const { return shardplan::unsharded(ctx()); }
  /// Every strategy's shard(), in registry order, as evaluate() runs them.
  Sharding sharding() const {
    Sharding sh = unsharded();
    for (const Strategy* s : all_strategies()) s->shard(ctx(), &sh);
    return sh;
  }
  Schedule schedule() const {
    const Sharding sh = sharding();
    Schedule sched;
    for (const Strategy* s : all_strategies()) s->schedule(ctx(), sh, &sched);
    return sched;
  }
  CommPlan comm() const {
    const Sharding sh = sharding();
    CommPlan c;
    for (const Strategy* s : all_strategies()) s->add_comm(ctx(), sh, &c);
    return c;
  }
  Problems problems(const Strategy& s) const {
    Problems p;
    s.validate(ctx(), &p);
    return p;
  }
};

/// A plan with the given degrees and batch; the rest default.
inline Plan plan_of(int tp, int pp, int dp, int cp = 1, int mbs = 1, int gbs = 8, int seq = 128) {
  Plan p;
  p.tp = tp;
  p.pp = pp;
  p.dp = dp;
  p.cp = cp;
  p.micro_batch = mbs;
  p.global_batch = gbs;
  p.seq_len = seq;
  return p;
}

/// Problem codes, in order, for compact checks.
inline std::string codes(const Problems& ps) {
  std::string out;
  for (const Problem& p : ps) out += (out.empty() ? "" : ",") + p.code;
  return out;
}

}  // namespace shardplan::test
