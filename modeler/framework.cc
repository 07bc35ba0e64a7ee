#include "modeler/framework.h"

#include <algorithm>
#include <cstdio>

#include "modeler/framework_profiles.h"

namespace shardplan {

namespace {
const std::vector<Framework>& registry() {
  using namespace profiles;
  static const std::vector<Framework> all = {megatron(),    nemo(),        torchtitan(),          llm_foundry(),
                                             megatron_deepspeed(), other(), megatron_legacy(), nemo_2024(),
                                             hf_deepspeed(), hf_fsdp(), litgpt_2023()};
  return all;
}

}  // namespace

const Framework* find_framework(const std::string& name) {
  for (const Framework& f : registry())
    if (f.name == name) return &f;
  return nullptr;
}

std::vector<std::string> framework_names() {
  std::vector<std::string> names;
  for (const Framework& f : registry()) names.push_back(f.name);
  return names;
}

const char* to_string(Launcher l) {
  constexpr const char* names[] = {"none", "megatron-lm", "nemo", "torchtitan", "megatron-deepspeed"};
  return names[static_cast<int>(l)];
}

std::string framework_defaults_text(const Framework& f) {
  std::string zero = "zero " + std::to_string(f.default_zero);
  if (f.default_zero_pp != f.default_zero) zero += " (" + std::to_string(f.default_zero_pp) + " with pp > 1)";
  return zero + ", sp " + (f.default_sp ? "on" : "off") + " when tp > 1, recompute " + to_string(f.default_recompute) +
         ", fp8 recipe " + to_string(f.fp8_recipe);
}

namespace {
/// The leading number of a version string ("core_r0.8.0" -> 0, "v3.0" -> 3, "24.07" -> 24); -1 if none.
int major_version(const std::string& v) {
  size_t i = 0;
  while (i < v.size() && !(v[i] >= '0' && v[i] <= '9')) ++i;
  if (i == v.size()) return -1;
  int n = 0;
  for (; i < v.size() && v[i] >= '0' && v[i] <= '9'; ++i) n = n * 10 + (v[i] - '0');
  return n;
}
int year_of(const std::string& date) { return date.size() >= 4 ? major_version(date.substr(0, 4)) : -1; }
}  // namespace

const Framework* select_framework(const std::string& name, const std::string& version, const std::string& date) {
  const int major = major_version(version), year = year_of(date);
  if (name == "megatron-lm") {
    // Releases v1.x-v3.x (2019-2022) predate Megatron-Core (core_r0.x, 2023-) and its FlashAttention and
    // Transformer Engine integration; "core_r" / "core_v" releases are the current profile.
    const bool core = version.rfind("core", 0) == 0;
    if (!version.empty() ? (!core && major >= 1 && major <= 3) : (year > 0 && year < 2023))
      return find_framework("megatron-lm-legacy");
  }
  if (name == "nemo") {
    // NeMo containers are named YY.MM: 24.x and earlier ran NeMo's own recipes (delayed fp8 scaling); 25.x the
    // Megatron-Bridge performance recipes.
    if (!version.empty() ? (major > 0 && major <= 24) : (year > 0 && year <= 2024)) return find_framework("nemo-2024");
  }
  return find_framework(name);
}

Framework compiled(const Framework& f) {
  if (!f.offers_compile) return f;
  Framework c = f;
  c.fused_elementwise = true;
  c.unfused_passes_per_norm = 1.0;
  c.eager_swiglu_saves_silu_output = false;  // Inductor's partitioner recomputes the SiLU from its saved input
  // Inductor fuses the norm's upcast into its kernel and the partitioner saves the smaller 16-bit input for the
  // backward (the cast is recomputed inside the fused backward kernel).
  c.norm_saved_input_bytes = std::min(c.norm_saved_input_bytes, 2.0);
  // Inductor fuses an eager RoPE's casts and complex multiply into one kernel over 16-bit loads and stores. The
  // K/V repeat stays: the attention kernel is an extern call whose inputs Inductor materialises at their shape.
  c.eager_rope_bytes_per_element = 0;
  // PyTorch's context-parallel SDPA (torch/distributed/tensor/experimental/_attention.py, late 2024, the only CP
  // that keeps its ring loop under the all-gather rotater) is a monkey-patch of F.scaled_dot_product_attention
  // (_distribute_function) plus DTensor custom op handlers (_enable_cp_dispatcher: _sdpa_handler), plain Python,
  // no custom op and no torch.compiler.disable; a block compiled with fullgraph=True (torchtitan@9dec370
  // apply_compile) traces its ring loop. Traced, every functional collective is followed at once by wait_tensor
  // (_functional_collectives.py _maybe_wrap_tensor under _are_we_tracing; _attention.py's _maybe_wait says as
  // much), and Inductor moves waits only under reorder_for_compute_comm_overlap (torch/_inductor/config.py:
  // False; torchtitan@9dec370 sets only _micro_pipeline_tp, for async TP): the K/V exchange overlaps nothing.
  if (f.cp_allgather_runs_ring_loop) c.cp_comm_waited_at_issue = true;
  return c;
}

namespace {
std::string text(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}
std::string text(bool b) { return b ? "yes" : "no"; }
std::string dispatchers_text(const std::vector<MoeDispatcher>& v) {
  std::string s;
  for (MoeDispatcher d : v) s += (s.empty() ? "" : ", ") + std::string(to_string(d));
  return s;
}
std::string text(const std::vector<int>& v) {
  std::string s;
  for (int x : v) s += (s.empty() ? "" : ",") + std::to_string(x);
  return s;
}
}  // namespace

std::vector<FrameworkTrait> framework_traits(const Framework& f) {
  const CpMergeBytes& cp = f.cp_merge;
  return {
      {"attention", kAttentionKernelNames[static_cast<int>(f.attention)]},
      {"materialized_attention", text(f.materialized_attention)},
      {"selective_is_op_sac", text(f.selective_is_op_sac)},
      {"fused_elementwise", text(f.fused_elementwise)},
      {"unfused_passes_per_norm", text(f.unfused_passes_per_norm)},
      {"overlap_grad_reduce", text(f.overlap_grad_reduce)},
      {"overlap_param_gather", text(f.overlap_param_gather)},
      {"reshard_after_forward", text(f.reshard_after_forward)},
      {"state_bytes (weights, gradients, optimizer)",
       text(f.state.weights) + ", " + text(f.state.gradients) + ", " + text(f.state.optimizer)},
      {"fsdp_unsharded_param_bytes", text(f.fsdp_unsharded_param_bytes)},
      {"pp_deferred_grad_bytes", text(f.pp_deferred_grad_bytes)},
      {"zero_stages", text(f.zero_stages)},
      {"offers_tp_overlap", text(f.offers_tp_overlap)},
      {"offers_ep_overlap", text(f.offers_ep_overlap)},
      {"offers_block_recompute", text(f.offers_block_recompute)},
      {"offers_recompute_modules", text(f.offers_recompute_modules)},
      {"pp_microbatches_default_to_pp", text(f.pp_microbatches_default_to_pp)},
      {"cross_entropy_bytes_per_logit", text(f.cross_entropy_bytes_per_logit)},
      {"logits_bytes_per_logit", text(f.logits_bytes_per_logit)},
      {"loss_parallel_cross_entropy_bytes_per_logit", text(f.loss_parallel_cross_entropy_bytes_per_logit)},
      {"loss_parallel_logits_bytes_per_logit", text(f.loss_parallel_logits_bytes_per_logit)},
      {"fused_moe_permutation", text(f.fused_moe_permutation)},
      {"fused_moe_router", text(f.fused_moe_router)},
      {"moe_gemm_per_expert", text(f.moe_gemm_per_expert)},
      {"wgrad_into_fp32_main_grad", text(f.wgrad_into_fp32_main_grad)},
      {"offers_moe_max_nodes", text(f.offers_moe_max_nodes)},
      {"moe_probs_in_activation", text(f.moe_probs_in_activation)},
      {"moe_dispatchers", dispatchers_text(f.moe_dispatchers)},
      {"fp8_caches_weights", text(f.fp8_caches_weights)},
      {"fp8_saves_linear_inputs", text(f.fp8_saves_linear_inputs)},
      {"tp_saves_gathered_inputs", text(f.tp_saves_gathered_inputs)},
      {"tp_overlap_pairs_dx_reduce_scatter", text(f.tp_overlap_pairs_dx_reduce_scatter)},
      {"cp_merge_bytes (forward first, later; backward first, later)",
       text(cp.forward_first) + ", " + text(cp.forward_step) + "; " + text(cp.backward_first) + ", " +
           text(cp.backward_step)},
      {"cp_grad_kv_bytes_per_step (first, later)", text(cp.grad_kv_first) + ", " + text(cp.grad_kv_step)},
      {"cp_kv_copy_bytes (per pass, per send)", text(cp.kv_pass) + ", " + text(cp.kv_send)},
      {"cp_allgather_runs_ring_loop", text(f.cp_allgather_runs_ring_loop)},
      {"cp_grad_kv_bytes", text(f.cp_grad_kv_bytes)},
      {"cp_last_grad_kv_exposed", text(f.cp_last_grad_kv_exposed)},
      {"cp_comm_waited_at_issue", text(f.cp_comm_waited_at_issue)},
      {"optimizer_offload", f.optimizer_offload == OptimizerOffloadKind::megatron_hybrid ? "megatron_hybrid"
                            : f.optimizer_offload == OptimizerOffloadKind::zero_offload  ? "zero_offload"
                                                                                         : "none"},
      {"hsdp_zero_stages", text(f.hsdp_zero_stages)},
      {"offers_zeropp", text(f.offers_zeropp)},
      {"param_offload", f.param_offload == ParamOffloadKind::zero_infinity ? "zero_infinity"
                        : f.param_offload == ParamOffloadKind::fsdp_cpu    ? "fsdp_cpu"
                                                                           : "none"},
      {"offers_nvme_offload", text(f.offers_nvme_offload)},
      {"offers_activation_offload", text(f.offers_activation_offload)},
      {"zero3_gather", f.zero3_gather == Zero3Gather::deepspeed_modules ? "deepspeed_modules" : "fsdp_units"},
      {"fused_projections", text(f.fused_projections)},
      {"norm_saved_input_bytes", text(f.norm_saved_input_bytes)},
      {"eager_rope_bytes_per_element", text(f.eager_rope_bytes_per_element)},
      {"gqa_repeats_kv", text(f.gqa_repeats_kv)},
      {"eager_swiglu_saves_silu_output", text(f.eager_swiglu_saves_silu_output)},
      {"attention_keeps_fused_qkv", text(f.attention_keeps_fused_qkv)},
      {"lora_fused_qkv", text(f.lora_fused_qkv)},
      {"qlora_keeps_linear_inputs", text(f.qlora_keeps_linear_inputs)},
      {"qlora_quantizes_lm_head", text(f.qlora_quantizes_lm_head)},
      {"qlora_dequant_copies", text(f.qlora_dequant_copies)},
      {"offers_model_parallel", text(f.offers_model_parallel)},
      {"launcher", to_string(f.launcher)},
      {"defaults", framework_defaults_text(f)},
      {"fp8_library", f.fp8_library == Fp8Library::torchao                 ? "torchao"
                     : f.fp8_library == Fp8Library::transformer_engine_v1 ? "transformer_engine_v1"
                                                                          : "transformer_engine"},
      {"fp8_recipe", to_string(f.fp8_recipe)},
      {"fp8_param_gather", text(f.fp8_param_gather)},
      {"recipe_tp_comm_overlap", text(f.recipe_tp_comm_overlap)},
      {"recipe_cp_kind", to_string(f.recipe_cp_kind)},
      {"offers_compile", text(f.offers_compile)},
      {"compiled_by_default", text(f.compiled_by_default)},
  };
}

}  // namespace shardplan
