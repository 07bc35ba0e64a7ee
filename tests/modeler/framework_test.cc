#include "modeler/framework.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <set>

using namespace shardplan;

namespace {
// Traits other than the name and sources: two profiles that differ only in name behave the same.
void check_same_traits(const Framework& a, const Framework& b) {
  CHECK(a.attention == b.attention);
  CHECK(a.fused_elementwise == b.fused_elementwise);
  CHECK(a.unfused_passes_per_norm == b.unfused_passes_per_norm);
  CHECK(a.overlap_grad_reduce == b.overlap_grad_reduce);
  CHECK(a.overlap_param_gather == b.overlap_param_gather);
  CHECK(a.reshard_after_forward == b.reshard_after_forward);
  CHECK(a.state.weights == b.state.weights);
  CHECK(a.state.gradients == b.state.gradients);
  CHECK(a.state.optimizer == b.state.optimizer);
  CHECK(a.fp8_saves_linear_inputs == b.fp8_saves_linear_inputs);
  CHECK(a.fp8_caches_weights == b.fp8_caches_weights);
  CHECK(a.fsdp_unsharded_param_bytes == b.fsdp_unsharded_param_bytes);
  CHECK(a.pp_deferred_grad_bytes == b.pp_deferred_grad_bytes);
  CHECK(a.pp_microbatches_default_to_pp == b.pp_microbatches_default_to_pp);
}
}  // namespace

TEST_SUITE("framework") {

TEST_CASE("the built-in profiles cover the published-runs framework names, each found by its name") {
  const std::vector<std::string> names = framework_names();
  for (const std::string published :
       {"megatron-lm", "nemo", "torchtitan", "llm-foundry", "megatron-deepspeed", "other"}) {
    CAPTURE(published);
    CHECK(std::find(names.begin(), names.end(), published) != names.end());
  }
  for (const std::string& name : framework_names()) {
    CAPTURE(name);
    const Framework* f = find_framework(name);
    REQUIRE(f != nullptr);
    CHECK(f->name == name);
    CHECK_FALSE(f->sources.empty());  // every trait names its source
    CHECK_FALSE(f->description.empty());
    CHECK(f->unfused_passes_per_norm >= 1.0);
  }
  CHECK(find_framework("megatron") == nullptr);
  CHECK(find_framework("") == nullptr);
}

TEST_CASE("derived profiles keep their parent's traits") {
  // NeMo is Megatron-Core run by its performance recipes, which keep and reduce gradients in bf16.
  Framework nemo = *find_framework("nemo");
  CHECK(nemo.state.gradients == 2.0);
  nemo.state.gradients = find_framework("megatron-lm")->state.gradients;
  check_same_traits(nemo, *find_framework("megatron-lm"));
  check_same_traits(*find_framework("other"), *find_framework("torchtitan"));
  // Megatron-DeepSpeed: FlashAttention-2, no overlapped parameter gather; the rest as Megatron.
  const Framework& mds = *find_framework("megatron-deepspeed");
  CHECK(mds.attention == AttentionKernel::flash2);
  CHECK_FALSE(mds.overlap_param_gather);
  CHECK(mds.state.weights == find_framework("megatron-lm")->state.weights);
  // Only Transformer Engine's linears keep their input as the fp8 cast.
  CHECK(find_framework("megatron-lm")->fp8_saves_linear_inputs);
  CHECK_FALSE(mds.fp8_saves_linear_inputs);
  CHECK_FALSE(find_framework("torchtitan")->fp8_saves_linear_inputs);
  // Only torchtitan's DTensor tensor parallelism saves the gathered inputs of its linears (memory_model.cc).
  for (const std::string& name : framework_names()) {
    CAPTURE(name);
    CHECK(find_framework(name)->tp_saves_gathered_inputs == (name == "torchtitan"));
  }
}

TEST_CASE("framework_traits lists every trait once, with its value as text") {
  const std::vector<FrameworkTrait> titan = framework_traits(*find_framework("torchtitan"));
  std::set<std::string> names;
  for (const FrameworkTrait& t : titan) {
    CAPTURE(t.name);
    CHECK(names.insert(t.name).second);
    CHECK_FALSE(t.value.empty());
  }
  auto value = [](const std::vector<FrameworkTrait>& traits, const std::string& name) {
    for (const FrameworkTrait& t : traits)
      if (t.name == name) return t.value;
    return std::string("(missing)");
  };
  CHECK(value(titan, "pp_deferred_grad_bytes") == "4");
  CHECK(value(titan, "zero_stages") == "0,2,3");
  CHECK(value(titan, "fp8_caches_weights") == "no");
  CHECK(value(titan, "tp_saves_gathered_inputs") == "yes");
  CHECK(value(titan, "eager_rope_bytes_per_element") == "20");
  CHECK(value(titan, "gqa_repeats_kv") == "yes");
  CHECK(value(titan, "cp_grad_kv_bytes_per_step (first, later)") == "28, 21");
  CHECK(value(titan, "cp_kv_copy_bytes (per pass, per send)") == "4, 4");
  CHECK(value(titan, "cp_last_grad_kv_exposed") == "yes");
  CHECK(value(titan, "recipe_cp_kind") == "allgather");  // torchtitan@9dec370 context_parallel_rotate_method
  CHECK(value(titan, "tp_overlap_pairs_dx_reduce_scatter") == "no");
  CHECK(value(titan, "state_bytes (weights, gradients, optimizer)") == "4, 4, 8");
  const std::vector<FrameworkTrait> megatron = framework_traits(*find_framework("megatron-lm"));
  CHECK(value(megatron, "attention") == "flash3");
  CHECK(value(megatron, "offers_recompute_modules") == "yes");
  CHECK(value(megatron, "zero3_gather") == "fsdp_units");
  CHECK(value(megatron, "recipe_cp_kind") == "ring");  // --cp-comm-type p2p
  // Megatron-DeepSpeed hands --zero-stage to DeepSpeed, which runs stages 0-3 (2 and 3 without pipelines).
  const std::vector<FrameworkTrait> mds = framework_traits(*find_framework("megatron-deepspeed"));
  CHECK(value(mds, "zero_stages") == "0,1,2,3");
  CHECK(value(mds, "zero3_gather") == "deepspeed_modules");
  // The Hugging Face stacks: DeepSpeed's bf16 states and per-module gathering of separate projections; FSDP1 with
  // the fp32-loaded model; both eager with fp32 norm inputs and data parallelism only.
  const std::vector<FrameworkTrait> hfd = framework_traits(*find_framework("hf-deepspeed"));
  CHECK(value(hfd, "state_bytes (weights, gradients, optimizer)") == "2, 2, 12");
  CHECK(value(hfd, "fused_projections") == "no");
  CHECK(value(hfd, "norm_saved_input_bytes") == "4");
  CHECK(value(hfd, "offers_model_parallel") == "no");
  CHECK(value(hfd, "logits_bytes_per_logit") == "12");
  const std::vector<FrameworkTrait> hff = framework_traits(*find_framework("hf-fsdp"));
  CHECK(value(hff, "state_bytes (weights, gradients, optimizer)") == "4, 4, 8");
  CHECK(value(hff, "zero3_gather") == "fsdp_units");
  CHECK(value(hff, "zero_stages") == "0,2,3");
  CHECK(value(hff, "fused_projections") == "no");  // inherited from hf-deepspeed: the same transformers modules
  CHECK(value(hff, "eager_swiglu_saves_silu_output") == "yes");  // transformers' LlamaMLP in eager PyTorch
  // Lit-GPT 8641822 with bitsandbytes 0.41: bf16-true states, a fused QKV linear with one adapter, bf16 norms,
  // chunked bf16 logits, and QLoRA through Lightning's plugin (head quantised, inputs kept, fp16 -> bf16 copies).
  const std::vector<FrameworkTrait> lit = framework_traits(*find_framework("litgpt-2023"));
  CHECK(value(lit, "state_bytes (weights, gradients, optimizer)") == "2, 2, 0");
  CHECK(value(lit, "norm_saved_input_bytes") == "2");
  CHECK(value(lit, "logits_bytes_per_logit") == "4");
  CHECK(value(lit, "attention_keeps_fused_qkv") == "yes");
  CHECK(value(lit, "lora_fused_qkv") == "yes");
  CHECK(value(lit, "qlora_keeps_linear_inputs") == "yes");
  CHECK(value(lit, "qlora_quantizes_lm_head") == "yes");
  CHECK(value(lit, "qlora_dequant_copies") == "2");
  CHECK(value(lit, "offers_model_parallel") == "no");
  // torch.compile's fusion drops the eager SiLU output (compiled() of a profile that offers compile).
  Framework eager = *find_framework("hf-deepspeed");
  eager.offers_compile = true;
  CHECK_FALSE(compiled(eager).eager_swiglu_saves_silu_output);
}

TEST_CASE("select_framework: profiles keyed by the stated release, else the date, else the current one") {
  CHECK(select_framework("megatron-lm", "v3.0", "")->name == "megatron-lm-legacy");
  CHECK(select_framework("megatron-lm", "v2.5", "2024-01")->name == "megatron-lm-legacy");  // the release wins
  CHECK(select_framework("megatron-lm", "core_r0.8.0", "2021")->name == "megatron-lm");
  CHECK(select_framework("megatron-lm", "", "2022-05")->name == "megatron-lm-legacy");
  CHECK(select_framework("megatron-lm", "", "2023-01")->name == "megatron-lm");
  CHECK(select_framework("megatron-lm", "", "")->name == "megatron-lm");
  CHECK(select_framework("nemo", "24.07", "")->name == "nemo-2024");
  CHECK(select_framework("nemo", "25.09", "")->name == "nemo");
  CHECK(select_framework("nemo", "", "2024-07")->name == "nemo-2024");
  CHECK(select_framework("torchtitan", "9dec370", "2024-12")->name == "torchtitan");
  CHECK(select_framework("no-such", "", "") == nullptr);
}

TEST_CASE("recipe traits: what the published recipes turn on") {
  const Framework& bridge = *find_framework("nemo");
  CHECK(bridge.recipe_tp_comm_overlap);
  CHECK(bridge.fp8_recipe == Fp8Recipe::tensorwise);
  CHECK(bridge.fp8_param_gather);
  const Framework& nemo24 = *find_framework("nemo-2024");
  CHECK(nemo24.fp8_recipe == Fp8Recipe::delayed);
  CHECK_FALSE(nemo24.fp8_param_gather);
  CHECK_FALSE(find_framework("megatron-lm")->recipe_tp_comm_overlap);  // Megatron-LM's own default: off
  const Framework& titan = *find_framework("torchtitan");
  CHECK(titan.offers_compile);
  CHECK_FALSE(titan.compiled_by_default);
  const Framework c = compiled(titan);
  CHECK(c.fused_elementwise);
  CHECK(c.unfused_passes_per_norm == 1.0);
  // Eager RMSNorm keeps the fp32 upcast of its input (torchtitan models/norms.py); compiled, the bf16 input.
  CHECK(titan.norm_saved_input_bytes == 4.0);
  CHECK(c.norm_saved_input_bytes == 2.0);
  // Traced by a fullgraph compile, PyTorch's CP loop waits each collective where it is issued.
  CHECK_FALSE(titan.cp_comm_waited_at_issue);
  CHECK(c.cp_comm_waited_at_issue);
  CHECK_FALSE(compiled(*find_framework("megatron-lm")).cp_comm_waited_at_issue);
  CHECK(compiled(*find_framework("megatron-lm")).fused_elementwise == find_framework("megatron-lm")->fused_elementwise);
  const Framework& foundry = *find_framework("llm-foundry");
  CHECK(compiled(foundry).fused_elementwise == foundry.fused_elementwise);  // no compile offered: unchanged
}

}

TEST_CASE("framework defaults: each profile's own ZeRO stage, sequence parallelism, recompute and fp8 recipe") {
  const Framework& titan = *find_framework("torchtitan");
  CHECK(titan.zero_default(1) == 3);  // FSDP with reshard after forward
  CHECK(titan.zero_default(4) == 2);  // under PP torchtitan keeps parameters gathered
  CHECK(titan.default_recompute == Recompute::selective);
  CHECK(titan.fp8_recipe == Fp8Recipe::tensorwise);
  for (const std::string& name : framework_names()) {
    const Framework& f = *find_framework(name);
    CAPTURE(name);
    // A default is a stage the framework offers.
    CHECK(std::find(f.zero_stages.begin(), f.zero_stages.end(), f.default_zero) != f.zero_stages.end());
    CHECK(std::find(f.zero_stages.begin(), f.zero_stages.end(), f.default_zero_pp) != f.zero_stages.end());
  }
  CHECK(framework_defaults_text(titan) ==
        "zero 3 (2 with pp > 1), sp on when tp > 1, recompute selective, fp8 recipe tensorwise");
  CHECK(find_framework("megatron-lm")->launcher == Launcher::megatron);
  CHECK(find_framework("llm-foundry")->launcher == Launcher::none);
}
