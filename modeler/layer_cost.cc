#include "modeler/layer_cost.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "modeler/finetune.h"
#include "modeler/gemm_model.h"
#include "modeler/memory_model.h"
#include "modeler/mtp_cost.h"
#include "modeler/precision_recipe.h"

namespace shardplan {

namespace {

/// MLA's up projections (DeepSeek-V2 Sec. 2.1): queries from the q LoRA rank (when there is one), keys' nope part
/// and values from the K/V latent.
Gemms mla_up_projections(const Context& ctx, const Sharding& sh) {
  const MlaDesc& a = *ctx.model.mla;
  const double T = sh.tokens, split = sh.gemm_splits, qk = 1.0 * a.qk_nope_head_dim + a.qk_rope_head_dim;
  Gemms p;
  if (a.q_lora_rank > 0) p.add(sharded_linear(ctx, T, sh.heads * qk, a.q_lora_rank, split, true));
  p.add(sharded_linear(ctx, T, sh.heads * (1.0 * a.qk_nope_head_dim + a.v_head_dim), a.kv_lora_rank, split, true));
  return p;
}

/// QKV and output projections. MLA (DeepSeek-V2, arXiv 2405.04434, Sec. 2.1): query down/up projections through
/// the q LoRA rank (or one direct projection), the joint K/V down projection to kv_lora_rank + the shared RoPE
/// key, the K/V up projection to heads x (nope + v), and the output projection from heads x v. The small down
/// projections are split like the heads (Megatron-Core shards them over tp too).
struct Projections {
  Gemms in, out;  // the input projections (the qkv slot) and the output projection (proj)
  Gemms all() const {
    Gemms g = in;
    g.add(out);
    return g;
  }
};
Projections attention_projections(const Context& ctx, const Sharding& sh) {
  const ModelDesc& m = ctx.model;
  const double T = sh.tokens, h = m.hidden, split = sh.gemm_splits;
  const OverlapChunks c = tp_overlap_chunks(ctx);
  Projections p;
  if (!m.mla) {
    p.in.add(sharded_linear(ctx, T, (sh.heads + 2.0 * sh.kv_heads) * m.head_dim, h, split, true, c.ag, 1));
    p.out.add(sharded_linear(ctx, T, h, sh.heads * m.head_dim, split, false, c.rs, c.ag));
    return p;
  }
  const MlaDesc& a = *m.mla;
  const double frac = sh.heads / m.heads, qk = 1.0 * a.qk_nope_head_dim + a.qk_rope_head_dim;
  if (a.q_lora_rank > 0)
    p.in.add(sharded_linear(ctx, T, a.q_lora_rank * frac, h, split, true));
  else
    p.in.add(sharded_linear(ctx, T, sh.heads * qk, h, split, true));
  p.in.add(sharded_linear(ctx, T, (1.0 * a.kv_lora_rank + a.qk_rope_head_dim) * frac, h, split, true));
  p.in.add(mla_up_projections(ctx, sh));
  p.out.add(sharded_linear(ctx, T, h, sh.heads * a.v_head_dim, split, false));
  return p;
}

/// Megatron-Core selective recompute (plan.h RecomputeModule): each module's forward once more in backward, the
/// norms as their memory passes; a recomputed MoE layer re-runs its dispatch and combine too (time_model.cc).
PassCost module_recompute(const Context& ctx, const Sharding& sh, const AttentionCost& attn, const MlpParts& mlp,
                          Seconds norms) {
  const unsigned modules = ctx.plan.recompute_modules;
  const ModelDesc& m = ctx.model;
  const double moe = mlp.moe;
  PassCost r;
  if (modules & kRecomputeCoreAttn) {
    r.time = r.attention = attn.fwd;
    r.flops = 2.0 * attn.flops_fwd;
  }
  if (modules & kRecomputeLayernorm) r.time += norms;
  auto add = [&r](const Gemms& g, Seconds mem, double share, bool is_moe) {
    const Seconds t = (g.fwd + mem) * share;
    r.time += t;
    r.flops += g.flops_fwd * share;
    if (is_moe) r.moe += t;
  };
  if ((modules & kRecomputeMlp) && moe < 1.0) add(mlp.dense.gemms, mlp.dense.mem_fwd, 1.0 - moe, false);
  if (moe > 0 && (modules & kRecomputeMoe)) {
    add(mlp.routed.gemms, mlp.routed.mem_fwd + mlp.routed.kernels_fwd, moe, true);
  } else if (moe > 0) {
    if (modules & kRecomputeMoeAct)
      add(Gemms{}, memory_time(ctx.system.gpu, Bytes(activation_elems(m, ctx.framework) * sh.expert_tokens *
                                                      sh.expert_ffn * kActBytes)),
          moe, true);
    if (modules & kRecomputeSharedExperts) {
      const MlpCost shared = dense_mlp(ctx, sh, sh.shared_ffn);
      add(shared.gemms, shared.mem_fwd, moe, true);
    }
  }
  if (m.mla && (modules & kRecomputeMlaUpProj)) add(mla_up_projections(ctx, sh), Seconds(0), 1.0, false);
  return r;
}

/// One layer's quantization kernels under the plan's fp8/fp4 recipe, forward and backward.
struct QuantizeTimes {
  Seconds fwd, bwd;
};

QuantizeTimes quantize_times(const Context& ctx, const Sharding& sh, const Gemms& proj, const MlpCost& mlp) {
  const ModelDesc& m = ctx.model;
  const Framework& fw = ctx.framework;
  const Gpu& g = ctx.system.gpu;
  const double T = sh.tokens, h = m.hidden;
  const RecipeKernels k = recipe_kernels(effective_fp8_recipe(ctx.plan, fw), fw, g);
  // Attention projections: QKV and output inputs (the QKV input before sequence parallelism's all-gather, as
  // the existing cast convention), their outputs, and their weights (FLOPs / 2T: every projection sees T rows).
  const double attn_in = sh.norm_tokens * h + T * sh.heads * m.head_dim;
  const double attn_out = m.mla ? attn_in : T * (sh.heads + 2.0 * sh.kv_heads) * m.head_dim + T * h;
  const double attn_w = T > 0 ? proj.flops_fwd / (2.0 * T) : 0.0;
  constexpr double kLinears = 4.0;  // QKV, output projection, MLP up and down: one quantization each
  auto pass = [&](const QuantizeCost& q, double elems) {
    return memory_time(g, Bytes(elems * q.bytes_per_elem / (kLinears * q.kernels))) * (kLinears * q.kernels) +
           memory_time(g, Bytes(0.0)) * (kLinears * q.launch_only_ops);
  };
  QuantizeTimes t;
  const Fp8Recipe recipe = effective_fp8_recipe(ctx.plan, fw);
  if (fw.fp8_library == Fp8Library::transformer_engine_v1 && recipe == Fp8Recipe::delayed && !m.moe && !m.mla) {
    // Transformer Engine 1.x's modules (precision_recipe.h te_v1_layer_quantize): the norms write the fp8 cast,
    // the sequence-parallel linears transpose in backward.
    const bool sp = ctx.plan.sequence_parallel && ctx.plan.tp > 1;
    LinearOperands o;
    o.normed_input_local = 2.0 * sh.norm_tokens * h;
    o.normed_input_full = 2.0 * T * h;
    o.row_input = T * sh.heads * m.head_dim + T * sh.ffn;
    o.column_grad = T * (sh.heads + 2.0 * sh.kv_heads) * m.head_dim + T * (m.gated_mlp ? 2.0 : 1.0) * sh.ffn;
    o.row_grad_local = 2.0 * sh.norm_tokens * h;
    o.row_grad_full = 2.0 * T * h;
    const LayerQuantize lq = te_v1_layer_quantize(o, sp, m.linear_bias);
    auto passes = [&](const std::vector<QuantizePass>& ps) {
      Seconds s{0};
      for (const QuantizePass& p : ps) s += memory_time(g, Bytes(p.bytes / p.kernels)) * p.kernels;
      return s;
    };
    t.fwd = passes(lq.fwd);
    t.bwd = passes(lq.bwd);
    // The two norms (layer_cost's fused norm: read and write 16 bits) write 1 byte per element instead.
    const Seconds norm16 = memory_time(g, Bytes(sh.norm_tokens * h * (kActBytes + kActBytes)));
    const Seconds norm8 = memory_time(g, Bytes(sh.norm_tokens * h * (kActBytes + lq.norm_output_bytes)));
    if (fw.fused_elementwise) t.fwd -= (norm16 - norm8) * 2.0;
  } else {
    t.fwd = pass(k.activation, attn_in + mlp.linear_input_elems);
    t.bwd = pass(k.gradient, attn_out + mlp.linear_output_elems);
  }
  // Weights: with parameters kept in the recipe's dtype (fp8 param gather) only the column-wise copy is made (a
  // read and write of the 1-byte data); otherwise the recipe's full quantization. Transformer Engine quantizes
  // them once per step and reuses them (fp8_caches_weights); torchao casts in every forward.
  const bool fp8_params = ctx.plan.fp8_param_gather.value_or(fw.fp8_param_gather);
  const QuantizeCost w = fp8_params ? QuantizeCost{2.0, 1} : k.weight;
  const double per_mb = fw.fp8_caches_weights ? 1.0 / std::max(1, ctx.plan.num_microbatches()) : 1.0;
  t.fwd += pass(w, attn_w + mlp.linear_weight_elems) * per_mb;
  return t;
}

}  // namespace

Seconds eager_rope_time(const Context& ctx, const Sharding& sh) {
  const double elems = sh.tokens * (sh.heads + sh.kv_heads) * ctx.model.head_dim;
  return memory_time(ctx.system.gpu, Bytes(elems * ctx.framework.eager_rope_bytes_per_element));
}

Seconds kv_repeat_time(const Context& ctx, const Sharding& sh) {
  const ModelDesc& m = ctx.model;
  if (m.mla || sh.kv_heads >= sh.heads) return Seconds(0);
  // K and V: read the kv heads, write the query heads, in 16 bits.
  return memory_time(ctx.system.gpu, Bytes(2.0 * sh.tokens * (sh.kv_heads + sh.heads) * m.head_dim * kActBytes));
}

LayerCost layer_cost(const Context& ctx, const Sharding& sh) {
  const ModelDesc& m = ctx.model;
  const Framework& fw = ctx.framework;
  const Gpu& g = ctx.system.gpu;
  const double T = sh.tokens, Tn = sh.norm_tokens, h = m.hidden, d = m.head_dim;

  const Projections projections = attention_projections(ctx, sh);
  const Gemms proj = projections.all();
  const MlpParts parts = mlp_parts(ctx, sh);
  const MlpCost mlp = mlp_cost(parts, sh);
  const AttentionCost attn = attention_cost(ctx, sh);

  // Memory-bound kernels of the forward pass, by bytes read + written. Fused: one read and one write per
  // tensor. Eager (unfused) frameworks run each norm as several elementwise kernels.
  const double norm_passes = fw.fused_elementwise ? 1.0 : fw.unfused_passes_per_norm;
  const Bytes norm(2.0 * Tn * h * kActBytes * norm_passes);
  const Bytes residual(3.0 * Tn * h * kActBytes);  // read x and branch output, write the sum
  const Bytes rope(2.0 * T * (sh.heads + sh.kv_heads) * d * kActBytes);
  const bool rotary = m.position == PositionKind::rope;
  Seconds mem_fwd = 2.0 * memory_time(g, norm) + 2.0 * memory_time(g, residual) + mlp.mem_fwd;
  const bool own_rope = rotary && fw.eager_rope_bytes_per_element > 0;
  if (rotary && !own_rope) mem_fwd += memory_time(g, rope);
  mem_fwd += qk_norm_time(ctx, sh);  // QK-norm before RoPE (Qwen3); its backward doubles with the other norms'
  // Backward of elementwise kernels reads the saved input and the incoming gradient and writes one gradient:
  // about twice the forward traffic.
  Seconds mem_bwd = (mem_fwd - mlp.mem_fwd) * 2.0 + mlp.mem_bwd;
  // Kernels whose backward moves what their forward moves (framework.h): an eager RoPE of the framework's own
  // and the K/V repeat of grouped-query attention (the copy, then the sum over the copies).
  const Seconds same_both_ways =
      (own_rope ? eager_rope_time(ctx, sh) : Seconds(0)) + (fw.gqa_repeats_kv ? kv_repeat_time(ctx, sh) : Seconds(0));
  mem_fwd += same_both_ways;
  mem_bwd += same_both_ways;
  if (tp_overlap_chunks(ctx).ag > 1 && fw.tp_overlap_rs_reduce_kernel) {
    // AsyncTP's reduce-scatters (after proj and FC2 in forward, of the QKV and FC1 dX in backward) end with a sum
    // of the tp received partials: reads T x h 16-bit elements, writes T / tp x h. The backward's are NCCL's own
    // where the overlap does not pair them (framework.h tp_overlap_pairs_dx_reduce_scatter).
    const Seconds reduce = memory_time(g, Bytes(T * h * kActBytes * (1.0 + 1.0 / ctx.plan.tp)));
    mem_fwd += reduce * 2.0;
    if (fw.tp_overlap_pairs_dx_reduce_scatter) mem_bwd += reduce * 2.0;
  }
  if (quantized_gemms(ctx.plan)) {
    // The recipe's quantization kernels (precision_recipe.h): each linear's input in forward, its output gradient
    // in backward, and its weight. The QKV and output projections' inputs and outputs, then the MLP's (dense or
    // every expert's); MLA's projections are counted by their inputs for both.
    const QuantizeTimes q = quantize_times(ctx, sh, proj, mlp);
    mem_fwd += q.fwd;
    mem_bwd += q.bwd;
  }
  // SDP's backward masking runs the GEMMs' backward only for the held parameters (techniques.md section 2).
  const double bwd_frac = sh.backward_fraction;
  const double gemm_flops = proj.flops_fwd + mlp.gemms.flops_fwd;

  LayerCost c;
  c.forward.time = proj.fwd + mlp.gemms.fwd + attn.fwd + mem_fwd + mlp.host_fwd + mlp.kernels_fwd;
  c.forward.attention = attn.fwd;
  c.forward.moe = mlp.moe_fwd;
  c.forward.flops = gemm_flops + 2.0 * attn.flops_fwd;
  c.backward.time = (proj.bwd + mlp.gemms.bwd) * bwd_frac + attn.bwd + mem_bwd + mlp.kernels_bwd;
  c.backward.attention = attn.bwd;
  c.backward.moe = mlp.moe_bwd;
  c.backward.flops = (base_frozen(ctx.plan) ? 1.0 : 2.0) * gemm_flops * bwd_frac + attn.flops_bwd;
  const std::pair<LinearGemm, const Gemms*> linears[] = {
      {LinearGemm::qkv, &projections.in}, {LinearGemm::proj, &projections.out},
      {LinearGemm::fc1, &mlp.up}, {LinearGemm::fc2, &mlp.down}};
  for (const auto& [which, gemms] : linears) {
    c.forward.linear[linear_slot(which)] = gemms->fwd;
    c.backward.linear[linear_slot(which)] = gemms->dgrad * bwd_frac;
    c.backward.linear[linear_slot(which, true)] = gemms->wgrad * bwd_frac;
  }
  // Fine-tuning adapters and QLoRA's dequantisation (finetune.h), before recompute re-runs the forward.
  const AdapterCost adapters = adapter_cost(ctx, sh);
  c.forward.time += adapters.fwd;
  c.forward.flops += adapters.flops_fwd;
  c.backward.time += adapters.bwd;
  c.backward.flops += adapters.flops_bwd;
  switch (ctx.plan.recompute) {
    case Recompute::none: break;
    case Recompute::selective:
      if (fw.selective_is_op_sac) {
        // torchtitan's op-level selective checkpointing (parallelize_llama.py _save_list policy): saves the
        // outputs of every other matmul and of SDPA, recomputes the rest: of the layer's matmuls in call order
        // (wq, wk, wv, wo, w1, w3, w2) the 2nd, 4th and 6th (wk, wo, w3), plus every elementwise kernel.
        const double recomputed = 2.0 * T * h * (sh.kv_heads * d + sh.heads * d + sh.ffn);
        const double share = gemm_flops > 0 ? std::min(1.0, recomputed / gemm_flops) : 0.0;
        c.recompute.time = (proj.fwd + mlp.gemms.fwd) * share + mem_fwd;
        c.recompute.flops = recomputed;
        break;
      }
      // Korthikanti Sec. 5: re-run the attention core (Megatron's default module), and any other modules asked.
      c.recompute = module_recompute(ctx, sh, attn, parts, 2.0 * memory_time(g, norm));
      break;
    case Recompute::full: {
      // Block method: only recompute_layers of each chunk's layers re-run their forward (the per-layer mean).
      const double share = full_recompute_share(ctx.plan, sh);
      c.recompute = {c.forward.time * share, c.forward.attention * share, c.forward.moe * share,
                     c.forward.flops * share};
      break;
    }
  }
  return c;
}

OutputParts output_parts(const Context& ctx, const Sharding& sh) {
  const ModelDesc& m = ctx.model;
  const Gpu& g = ctx.system.gpu;
  const double T = sh.tokens;
  OutputParts o;
  // Embedding lookup: gather T rows of h (write) on the first stage; scatter-add of its gradient in backward.
  // A frozen embedding (fine-tuning) gets no gradient: nothing runs for it in backward.
  const Bytes embed(T * m.hidden * kActBytes * 2.0);
  const bool frozen = base_frozen(ctx.plan);
  o.embed_fwd = memory_time(g, embed);
  o.embed_bwd = frozen ? Seconds(0) : memory_time(g, embed * 2.0);
  // LM head GEMM over the local vocabulary (always 16-bit: fp8 recipes keep the output layer in bf16) and the
  // cross-entropy over [T x V_local] logits, whose HBM traffic per logit is the framework's trait.
  const Dtype d = sixteen_bit_gemm(ctx);
  const Seconds ce = memory_time(g, Bytes(T * sh.vocab * ctx.framework.loss_traffic_per_logit(ctx.plan.tp)));
  o.head_fwd = gemm_time(g, d, T, sh.vocab, m.hidden) + ce / 2.0;
  o.head_bwd = gemm_time(g, d, T, m.hidden, sh.vocab) +
               (frozen ? Seconds(0) : gemm_time(g, d, m.hidden, sh.vocab, T)) + ce / 2.0;
  o.head_flops = 2.0 * T * sh.vocab * m.hidden;
  return o;
}

LayerCost head_cost(const Context& ctx, const Sharding& sh) {
  const Gpu& g = ctx.system.gpu;
  LayerCost c;
  const OutputParts o = output_parts(ctx, sh);
  const bool frozen = base_frozen(ctx.plan);
  const Seconds first_fwd = o.embed_fwd, first_bwd = o.embed_bwd;
  const Seconds final_norm = memory_time(g, Bytes(2.0 * sh.norm_tokens * ctx.model.hidden * kActBytes));
  const Seconds last_fwd = o.head_fwd + final_norm, last_bwd = o.head_bwd + final_norm * 2.0;
  const double head_flops = o.head_flops;
  if (sh.ends) {
    // The pipeline strategy named the rank's ends (a custom layout, or MTP modules on the last rank).
    const Sharding::StageEnds& e = *sh.ends;
    if (e.embedding) c.forward.time += first_fwd, c.backward.time += first_bwd;
    if (e.loss) c.forward.time += last_fwd, c.backward.time += last_bwd;
    c.forward.flops = e.loss ? head_flops : 0.0;
    c.backward.flops = e.loss ? (frozen ? 1.0 : 2.0) * head_flops : 0.0;
    if (e.mtp > 0) {
      const LayerCost mtp = mtp_module_cost(ctx, sh);
      c.forward.time += mtp.forward.time * e.mtp;
      c.backward.time += mtp.backward.time * e.mtp;
      c.forward.flops += mtp.forward.flops * e.mtp;
      c.backward.flops += mtp.backward.flops * e.mtp;
    }
    return c;
  }
  if (ctx.plan.pp == 1) {
    c.forward.time = first_fwd + last_fwd;
    c.backward.time = first_bwd + last_bwd;
  } else if (first_fwd + first_bwd > last_fwd + last_bwd) {
    c.forward.time = first_fwd;
    c.backward.time = first_bwd;
  } else {
    c.forward.time = last_fwd;
    c.backward.time = last_bwd;
  }
  c.forward.flops = head_flops;
  c.backward.flops = (frozen ? 1.0 : 2.0) * head_flops;
  return c;
}

}  // namespace shardplan
