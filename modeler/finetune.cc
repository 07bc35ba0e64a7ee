#include "modeler/finetune.h"

#include <algorithm>
#include <cmath>

#include "modeler/gemm_model.h"
#include "modeler/layer_cost.h"

namespace shardplan {

namespace {

constexpr double kAct = 2.0;  // 16-bit activations and dequantised weights
constexpr const char* kPeftNames[] = {"none", "lora", "dora", "qlora"};
constexpr unsigned kAttentionQkv = kLoraQ | kLoraK | kLoraV;
constexpr unsigned kMlpTargets = kLoraGate | kLoraUp | kLoraDown;

std::vector<LoraTarget> targets_of(unsigned bits) {
  std::vector<LoraTarget> out;
  for (const LoraTargetName& t : kLoraTargetNames)
    if (bits & t.bit) out.push_back(t.bit);
  return out;
}

const char* target_name(LoraTarget t) {
  for (const LoraTargetName& n : kLoraTargetNames)
    if (n.bit == t) return n.name;
  return "?";
}

/// The rank-local shape of a target's base linear: column-parallel layers (q, k, v, gate, up) split their output
/// over tensor parallelism, row-parallel ones (o, down) their input.
LinearShape local_shape(const ModelDesc& m, const Sharding& sh, LoraTarget t) {
  const double h = m.hidden, d = m.head_dim;
  switch (t) {
    case kLoraQ:
      return {h, sh.heads * d};
    case kLoraK:
    case kLoraV:
      return {h, sh.kv_heads * d};
    case kLoraO:
      return {sh.heads * d, h};
    case kLoraGate:
    case kLoraUp:
      return {h, sh.ffn};
    case kLoraDown:
      return {sh.ffn, h};
  }
  return {};
}

/// Weight elements of one layer's base linears on this rank (what QLoRA dequantises per layer), dense models:
/// attention and MLP projections at their local shapes.
double local_linear_weights(const ModelDesc& m, const Sharding& sh) {
  double w = 0;
  for (const LoraTargetName& t : kLoraTargetNames) {
    if (t.bit == kLoraGate && !m.gated_mlp) continue;
    const LinearShape s = local_shape(m, sh, t.bit);
    w += s.in * s.out;
  }
  return w;
}

double norm_vector_params(const ModelDesc& m) { return (m.norm == NormKind::layernorm ? 2.0 : 1.0) * m.hidden; }

}  // namespace

const char* to_string(Peft p) { return kPeftNames[static_cast<int>(p)]; }

std::optional<Peft> parse_peft(const std::string& text) {
  for (int i = 0; i < 4; ++i)
    if (text == kPeftNames[i]) return static_cast<Peft>(i);
  return std::nullopt;
}

std::string lora_targets_string(unsigned targets) {
  std::string s;
  for (const LoraTargetName& t : kLoraTargetNames)
    if (targets & t.bit) s += (s.empty() ? "" : "+") + std::string(t.name);
  return s;
}

std::optional<unsigned> parse_lora_targets(const std::string& text, std::string* unknown) {
  if (text == "all") return kAttentionQkv | kLoraO | kMlpTargets;
  unsigned bits = 0;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find_first_of(",+", start);
    if (end == std::string::npos) end = text.size();
    const std::string name = text.substr(start, end - start);
    bool found = false;
    for (const LoraTargetName& t : kLoraTargetNames)
      if (name == t.name) {
        bits |= t.bit;
        found = true;
      }
    if (!found) {
      if (unknown) *unknown = name;
      return std::nullopt;
    }
    start = end + 1;
  }
  if (bits == 0) return std::nullopt;
  return bits;
}

LinearShape target_shape(const ModelDesc& m, LoraTarget t) {
  Sharding whole;
  whole.heads = m.heads;
  whole.kv_heads = m.kv_heads;
  whole.ffn = m.ffn_hidden;
  return local_shape(m, whole, t);
}

double adapter_params_per_layer(const ModelDesc& m, const Finetune& f) {
  if (f.peft == Peft::none) return 0.0;
  double p = 0;
  for (LoraTarget t : targets_of(f.lora_targets)) {
    const LinearShape s = target_shape(m, t);
    p += 1.0 * f.lora_rank * (s.in + s.out);
    if (f.peft == Peft::dora) p += s.out;  // the magnitude vector, one per output column
  }
  return p;
}

double adapter_params(const ModelDesc& m, const Finetune& f) { return m.layers * adapter_params_per_layer(m, f); }

double trainable_params(const ModelDesc& m, const Plan& p) {
  return base_frozen(p) ? adapter_params(m, p.finetune) : total_params(m);
}

double trainable_share(const ModelDesc& m, const Plan& p) {
  const double total = total_params(m);
  return total > 0 ? trainable_params(m, p) / total : 1.0;
}

std::vector<ParamGroup> trainable_groups(const ModelDesc& m, const Plan& p) {
  std::vector<ParamGroup> g;
  const double L = m.layers, h = m.hidden;
  if (base_frozen(p)) {
    const double r = p.finetune.lora_rank;
    for (LoraTarget t : targets_of(p.finetune.lora_targets)) {
      const LinearShape s = target_shape(m, t);
      g.push_back({r, s.in, L, true});   // A
      g.push_back({s.out, r, L, true});  // B
      if (p.finetune.peft == Peft::dora) g.push_back({s.out, 1, L, true});
    }
    return g;
  }
  // Every weight: the layers' matrices at their shapes (MLA's projections and MoE experts approximated by their
  // hidden-wide matrices of the same parameter count), the embedding and LM head, and the vectors (norms, biases)
  // as what remains of the model's count.
  double matrices = 0;
  auto add = [&](double rows, double cols, double count, bool hidden) {
    if (rows <= 0 || cols <= 0 || count <= 0) return;
    g.push_back({rows, cols, count, hidden});
    matrices += rows * cols * count;
  };
  if (!m.mla) {
    for (LoraTarget t : {kLoraQ, kLoraK, kLoraV, kLoraO}) {
      const LinearShape s = target_shape(m, t);
      add(s.out, s.in, L, true);
    }
  } else {
    const double attn = params_per_layer(m) - routed_expert_params(m) / std::max(1.0, L);
    add(h, std::max(1.0, std::floor(attn / h)), L, true);
  }
  if (!m.moe && !m.mla) {
    add(m.ffn_hidden, h, L * (m.gated_mlp ? 2.0 : 1.0), true);  // gate and up
    add(h, m.ffn_hidden, L, true);                              // down
  } else if (m.moe && m.moe->expert_ffn_hidden > 0) {
    const double per_expert = h * m.moe->expert_ffn_hidden;
    add(m.moe->expert_ffn_hidden, h, std::floor(routed_expert_params(m) / per_expert), true);
  }
  add(m.vocab, h, 1, false);
  if (!m.tied_embeddings) add(m.vocab, h, 1, false);
  const double rest = total_params(m) - matrices;
  if (rest > 0) g.push_back({rest, 1, 1, false});
  return g;
}

void validate_finetune(const Context& ctx, Problems* problems) {
  const Plan& p = ctx.plan;
  const Finetune& f = p.finetune;
  const ModelDesc& m = ctx.model;
  const Framework& fw = ctx.framework;
  auto problem = [problems](const char* code, const std::string& message) { problems->push_back({code, message}); };
  if (f.peft == Peft::none) {
    if (f.lora_rank != 0 || f.lora_targets != 0 || f.lora_dropout != 0)
      problem("lora_needs_peft", "a LoRA rank, targets or dropout need --peft lora, dora or qlora");
  } else {
    if (f.lora_rank < 1)
      problem("lora_rank_range", "LoRA rank (" + std::to_string(f.lora_rank) + ") must be at least 1");
    if (!(f.lora_dropout >= 0 && f.lora_dropout < 1))
      problem("lora_dropout_range", "LoRA dropout (" + num(f.lora_dropout, "%g") + ") must be in [0, 1)");
    if (f.lora_targets == 0)
      problem("lora_targets_empty",
              "--peft " + std::string(to_string(f.peft)) + " needs target modules (--lora-targets q,v,...)");
    if (m.mla && (f.lora_targets & kAttentionQkv))
      problem("lora_target_missing", m.name +
                                         " uses multi-head latent attention: it has no separate q, k, v "
                                         "projections to adapt (target o or the MLP)");
    if (m.moe && (f.lora_targets & kMlpTargets))
      problem("lora_target_moe",
              "adapters on the MLPs of an MoE model (routed experts) are not modelled; target "
              "the attention projections");
    if (!m.gated_mlp && (f.lora_targets & kLoraGate))
      problem("lora_target_missing", m.name + " has no gate projection (its MLP is not gated)");
    for (LoraTarget t : targets_of(f.lora_targets)) {
      const LinearShape s = target_shape(m, t);
      if (f.lora_rank > std::min(s.in, s.out)) {
        problem("lora_rank_exceeds", "LoRA rank (" + std::to_string(f.lora_rank) + ") exceeds the smaller side of " +
                                         target_name(t) + " (" + num(std::min(s.in, s.out)) + ")");
        break;
      }
    }
    if (f.peft == Peft::qlora && (p.precision == Dtype::fp8 || p.precision == Dtype::fp4))
      problem("qlora_precision", "QLoRA dequantises its NF4 base weights to bf16 for every GEMM; precision " +
                                     precision_name(p) + " does not apply");
  }
  if (p.optimizer_offload > 0 && f.optimizer != Optimizer::adamw)
    problem("offload_optimizer", std::string("optimizer offload steps AdamW on the CPU (DeepSpeedCPUAdam, Megatron "
                                             "HybridDeviceOptimizer); --optimizer ") +
                                     to_string(f.optimizer) + " is not offloaded");
  // What each launcher runs (its source read at the commit its emitter targets).
  const std::string peft = to_string(f.peft), opt = to_string(f.optimizer);
  switch (fw.launcher) {
    case Launcher::megatron:
      // Megatron-LM d98e8a6: no adapter training (tensor_parallel/layers.py only mentions NeMo's LoRA adapter);
      // --optimizer adam|sgd|muon|lion|soap|adaptive_muon (training/arguments.py), --sgd-momentum 0.9 default.
      if (f.peft != Peft::none)
        problem("peft_unsupported",
                "Megatron-LM has no LoRA or adapter training (Megatron-Core d98e8a6); "
                "NeMo/Megatron-Bridge's PEFT has LoRA and DoRA: --framework nemo");
      if (f.optimizer == Optimizer::adamw8bit || f.optimizer == Optimizer::adafactor)
        problem("optimizer_unsupported", "Megatron-LM has no " + opt + " (--optimizer adam, sgd, muon, lion)");
      break;
    case Launcher::nemo:
      // Megatron-Bridge 067f987 src/megatron/bridge/peft: LoRA (fused linear_qkv, linear_proj, linear_fc1,
      // linear_fc2), CanonicalLoRA (linear_q/k/v, linear_fc1_up/gate) and DoRA (fused modules only); no 4-bit base.
      // Optimizers are Megatron-Core OptimizerConfig.optimizer's: adam, sgd, muon.
      if (f.peft == Peft::qlora)
        problem("peft_unsupported",
                "NeMo/Megatron-Bridge's PEFT (LoRA, canonical LoRA, DoRA) has no 4-bit base "
                "weights (QLoRA); use --peft lora");
      if (f.peft == Peft::dora) {
        const unsigned t = f.lora_targets;
        const bool split_qkv = (t & kAttentionQkv) != 0 && (t & kAttentionQkv) != kAttentionQkv;
        const bool split_fc1 = (t & (kLoraGate | kLoraUp)) != 0 && (t & (kLoraGate | kLoraUp)) != (kLoraGate | kLoraUp);
        if (split_qkv || split_fc1)
          problem("peft_unsupported",
                  "Megatron-Bridge's DoRA adapts the fused linear_qkv and linear_fc1: target q, k "
                  "and v together and gate with up");
      }
      if (f.optimizer != Optimizer::adamw && f.optimizer != Optimizer::sgd && f.optimizer != Optimizer::sgd_momentum &&
          f.optimizer != Optimizer::muon)
        problem("optimizer_unsupported",
                "NeMo/Megatron-Bridge (Megatron-Core OptimizerConfig) has no " + opt + " (adam, sgd, muon)");
      break;
    case Launcher::torchtitan:
      // torchtitan b5bcd76: components/lora.py LoRAConverter (rank, alpha, target_modules by FQN's last segment; wk
      // and wv share one config, wkv); components/optimizer: Adam, AdamW, DistMuon.
      if (f.peft == Peft::dora || f.peft == Peft::qlora)
        problem("peft_unsupported",
                "torchtitan's LoRAConverter trains plain LoRA only; --peft " + peft + " is not offered");
      if (f.peft != Peft::none && ((f.lora_targets & kLoraK) != 0) != ((f.lora_targets & kLoraV) != 0))
        problem("peft_unsupported", "torchtitan builds wk and wv from one config (wkv): target k and v together");
      if (f.optimizer != Optimizer::adamw && f.optimizer != Optimizer::muon)
        problem("optimizer_unsupported", "torchtitan offers Adam, AdamW and DistMuon, not " + opt);
      break;
    case Launcher::megatron_deepspeed:
      // Megatron-DeepSpeed: Megatron's arguments (--optimizer adam|sgd), no adapter training.
      if (f.peft != Peft::none) problem("peft_unsupported", "Megatron-DeepSpeed has no LoRA or adapter training");
      if (f.optimizer != Optimizer::adamw && f.optimizer != Optimizer::sgd && f.optimizer != Optimizer::sgd_momentum)
        problem("optimizer_unsupported", "Megatron-DeepSpeed offers --optimizer adam or sgd, not " + opt);
      break;
    case Launcher::none:
      break;  // a plan only: any method the model allows
  }
}

Bytes finetune_weights(const Context& ctx, const Sharding& sh, const StageParams& params) {
  const Plan& p = ctx.plan;
  const ModelDesc& m = ctx.model;
  const double stored = ctx.framework.state.weights;  // the frozen base is kept as the framework stores weights
  const double per_layer = params_per_layer(m);
  // QLoRA quantises every linear of the layers; the norms' vectors stay 16-bit.
  const double quantized = p.finetune.peft == Peft::qlora && per_layer > 0
                               ? std::max(0.0, 1.0 - 2.0 * norm_vector_params(m) / per_layer)
                               : 0.0;
  const double layer_bytes = quantized * kNf4PackedBytesPerParam + (1.0 - quantized) * std::min(stored, kAct);
  const double base_layer = p.finetune.peft == Peft::qlora ? layer_bytes : stored;
  const double base_rest = p.finetune.peft == Peft::qlora ? std::min(stored, kAct) : stored;
  // The LM head in NF4 where the framework quantises it (Framework::qlora_quantizes_lm_head).
  const bool head_nf4 = p.finetune.peft == Peft::qlora && ctx.framework.qlora_quantizes_lm_head;
  const double head_bytes = head_nf4 ? kNf4PackedBytesPerParam : base_rest;
  double bytes = params.layers * base_layer / sh.dp_shard_weights + params.experts * base_layer / sh.edp_shard_weights +
                 (params.embedding + params.final_norm) * base_rest / sh.dp_shard_weights +
                 params.head * head_bytes / sh.dp_shard_weights;
  // The NF4 statistics are not sharded by data parallelism (kNf4StatsBytesPerParam).
  bytes += ((params.layers + params.experts) * quantized + (head_nf4 ? params.head : 0.0)) * kNf4StatsBytesPerParam;
  // Adapters on the stage's layers, split over tensor parallelism like their base linears.
  const double adapters = adapter_params_per_layer(m, p.finetune) * sh.layers / sh.weight_shard;
  bytes += adapters * stored / sh.dp_shard_weights;
  return Bytes(bytes);
}

double finetune_activation_delta(const ModelDesc& m, const Sharding& sh, const Plan& p, double lin,
                                 const Framework& fw) {
  if (!base_frozen(p)) return 0.0;
  const unsigned t = p.finetune.lora_targets;
  const double T = sh.tokens, Tn = sh.norm_tokens, h = m.hidden;
  // With lora_dropout > 0 every adapter reads its own dropped-out copy of the input (PEFT's Linear.forward:
  // lora_A(dropout(x)), one nn.Dropout per adapted module), so no adapter keeps the shared input itself: each keeps
  // that copy (16-bit, lora_A's saved input) and native_dropout's bool mask (1 byte per element).
  const bool dropout = p.finetune.lora_dropout > 0;
  unsigned keeps_input = dropout ? 0u : t;
  // bitsandbytes before 0.43.2 keeps every 4-bit linear's input (Framework::qlora_keeps_linear_inputs).
  if (p.finetune.peft == Peft::qlora && fw.qlora_keeps_linear_inputs)
    keeps_input = kAttentionQkv | kLoraO | kMlpTargets;
  double d = 0;
  if (!(keeps_input & kAttentionQkv)) d -= Tn * h * lin;            // the QKV projection's input
  if (!(keeps_input & (kLoraGate | kLoraUp))) d -= Tn * h * lin;    // the MLP's up (and gate) input
  if (!(keeps_input & kLoraDown) && !m.moe) d -= T * sh.ffn * lin;  // the down projection's input
  // One adapter on the fused QKV linear (Framework::lora_fused_qkv): one dropped-out copy for q, k and v together,
  // and, when only some of them are adapted, zero_pad's index_copy keeps B's output over the adapted parts.
  const bool fused_qkv = fw.lora_fused_qkv && (t & kAttentionQkv) != 0;
  if (fused_qkv) {
    if (dropout) d += T * h * (kAct + 1.0);
    if ((t & kAttentionQkv) != kAttentionQkv) {
      double adapted_out = 0;
      for (LoraTarget q : targets_of(t & kAttentionQkv)) adapted_out += local_shape(m, sh, q).out;
      d += T * adapted_out * kAct;
    }
  }
  for (LoraTarget target : targets_of(t)) {
    const LinearShape s = local_shape(m, sh, target);
    const bool shares_fused_copy = fused_qkv && (target & kAttentionQkv) != 0;
    if (dropout && !shares_fused_copy) d += T * s.in * (kAct + 1.0);  // the dropped-out input and its mask
    d += T * p.finetune.lora_rank * kAct;                             // x A, input of B
    // DoRA: the base output, for the magnitude's gradient.
    if (p.finetune.peft == Peft::dora) d += T * s.out * kAct;
  }
  return d;
}

double gathered_param_bytes(const Plan& p) { return p.finetune.peft == Peft::qlora ? kNf4PackedBytesPerParam : kAct; }

Bytes finetune_buffers(const Context& ctx, const Sharding& sh) {
  if (ctx.plan.finetune.peft != Peft::qlora) return Bytes(0);
  double largest = 0;
  for (const LoraTargetName& t : kLoraTargetNames) {
    const LinearShape s = local_shape(ctx.model, sh, t.bit);
    largest = std::max(largest, s.in * s.out);
  }
  // A quantised LM head is dequantised whole (its local vocabulary) for each of its GEMMs; the one profile with
  // that trait (litgpt-2023) runs without pipeline stages, so the busiest rank holds the head.
  const Framework& fw = ctx.framework;
  if (fw.qlora_quantizes_lm_head) largest = std::max(largest, sh.vocab * ctx.model.hidden);
  return Bytes(largest * kAct * fw.qlora_dequant_copies);
}

AdapterCost adapter_cost(const Context& ctx, const Sharding& sh) {
  AdapterCost c;
  const Plan& p = ctx.plan;
  if (!base_frozen(p)) return c;
  const ModelDesc& m = ctx.model;
  const Gpu& g = ctx.system.gpu;
  const Dtype d = g.sixteen_bit();  // adapters run in the 16-bit compute dtype
  const double T = sh.tokens, r = p.finetune.lora_rank;
  for (LoraTarget t : targets_of(p.finetune.lora_targets)) {
    // Column-parallel bases replicate A and split B's output; row-parallel ones split A's input (LinearShape).
    const LinearShape s = local_shape(m, sh, t);
    c.fwd += gemm_time(g, d, T, r, s.in) + gemm_time(g, d, T, s.out, r);
    // Backward: dB = (xA)^T dY, d(xA) = dY B^T, dA = x^T d(xA), dx += d(xA) A^T.
    c.bwd += gemm_time(g, d, r, s.out, T) + gemm_time(g, d, T, r, s.out) + gemm_time(g, d, s.in, r, T) +
             gemm_time(g, d, T, s.in, r);
    c.flops_fwd += 2.0 * T * r * (s.in + s.out);
    c.flops_bwd += 4.0 * T * r * (s.in + s.out);
    if (p.finetune.peft == Peft::dora) {
      // DoRA (PEFT's DoraLinearLayer): B A formed and added to W for the column norms every forward (the norm is
      // detached, Liu et al. Sec. 4.3, so backward does not repeat it), and the magnitude scaling of the output.
      c.fwd += gemm_time(g, d, s.out, s.in, r) + memory_time(g, Bytes(s.in * s.out * 3.0 * kAct)) +
               memory_time(g, Bytes(3.0 * T * s.out * kAct));
      c.bwd += memory_time(g, Bytes(4.0 * T * s.out * kAct));
      c.flops_fwd += 2.0 * s.out * s.in * r;
    }
  }
  if (p.finetune.peft == Peft::qlora) {
    const Seconds dequant = memory_time(g, Bytes(local_linear_weights(m, sh) * (kNf4BytesPerParam + kAct)));
    c.fwd += dequant;
    c.bwd += dequant;
  }
  return c;
}

double finetune_flops_per_token(const ModelDesc& m, const Plan& p, double full) {
  if (!base_frozen(p)) return full;
  // Activated matmul parameters: every activated parameter but the embedding table (a lookup, no GEMM).
  const double matmul = activated_params(m) - embedding_params(m) + (m.tied_embeddings ? 1.0 * m.vocab * m.hidden : 0);
  return full - 2.0 * matmul + 6.0 * adapter_params(m, p.finetune);
}

}  // namespace shardplan
