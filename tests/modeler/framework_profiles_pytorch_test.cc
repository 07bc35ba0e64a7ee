#include "modeler/framework_profiles.h"

#include <doctest/doctest.h>

#include <string>

using namespace shardplan;

TEST_SUITE("framework profiles: PyTorch-native") {

TEST_CASE("FSDP stacks keep fp32 sharded parameters as the master copy: no separate 4-byte master in optimizer") {
  for (const std::string name : {"torchtitan", "llm-foundry"}) {
    CAPTURE(name);
    const Framework& f = *find_framework(name);
    CHECK(f.state.weights == 4.0);
    CHECK(f.state.optimizer == 8.0);  // Adam m and v only
  }
  CHECK_FALSE(find_framework("torchtitan")->fused_elementwise);
  // The layers compute with a bf16 unsharded copy; Megatron's 2-byte weights are that copy already.
  CHECK(find_framework("torchtitan")->fsdp_unsharded_param_bytes == 2.0);
  CHECK(find_framework("llm-foundry")->fsdp_unsharded_param_bytes == 2.0);
  CHECK(find_framework("megatron-lm")->fsdp_unsharded_param_bytes == 0.0);
  // Pipelining defers FSDP2's reduce-scatter and accumulates in the fp32 reduce dtype; torchao casts fp8 weights
  // per call, Transformer Engine caches them.
  CHECK(find_framework("torchtitan")->pp_deferred_grad_bytes == 4.0);
  CHECK_FALSE(find_framework("torchtitan")->fp8_caches_weights);
  CHECK(find_framework("megatron-lm")->fp8_caches_weights);
  CHECK(find_framework("torchtitan")->pp_microbatches_default_to_pp);
  // torchtitan's eager RoPE (fp32 complex multiply) and repeat_kv; compiled, Inductor fuses the RoPE only.
  CHECK(find_framework("torchtitan")->eager_rope_bytes_per_element == 20.0);
  CHECK(find_framework("torchtitan")->gqa_repeats_kv);
  CHECK(compiled(*find_framework("torchtitan")).eager_rope_bytes_per_element == 0.0);
  CHECK(compiled(*find_framework("torchtitan")).gqa_repeats_kv);
  CHECK(find_framework("megatron-lm")->eager_rope_bytes_per_element == 0.0);
  CHECK_FALSE(find_framework("megatron-lm")->gqa_repeats_kv);
  CHECK_FALSE(find_framework("megatron-lm")->pp_microbatches_default_to_pp);
  // PyTorch's ring loop: K/V copies each pass and send, fp32 dK/dV accumulation and its send-buffer copy, and the
  // last dK/dV transfer exposed (_attention.py); AsyncTP cannot pair the dX reduce-scatters (micro_pipeline_tp).
  const Framework& titan = *find_framework("torchtitan");
  CHECK(titan.cp_merge.kv_pass == 4.0);
  CHECK(titan.cp_merge.kv_send == 4.0);
  CHECK(titan.cp_merge.grad_kv_first == 28.0);
  CHECK(titan.cp_merge.grad_kv_step == 21.0);
  CHECK(titan.cp_last_grad_kv_exposed);
  CHECK_FALSE(titan.tp_overlap_pairs_dx_reduce_scatter);
  CHECK_FALSE(find_framework("megatron-lm")->cp_last_grad_kv_exposed);
  CHECK(find_framework("megatron-lm")->tp_overlap_pairs_dx_reduce_scatter);
  CHECK(find_framework("megatron-lm")->cp_merge.kv_send == 0.0);
  // torchtitan's loss_parallel under tp: 76 bytes per logit of traffic, a 16-byte peak; Megatron has one loss.
  CHECK(find_framework("torchtitan")->loss_parallel_cross_entropy_bytes_per_logit == 76.0);
  CHECK(find_framework("torchtitan")->loss_parallel_logits_bytes_per_logit == 16.0);
  CHECK(find_framework("megatron-lm")->loss_parallel_logits_bytes_per_logit == 0.0);
  // Megatron-Core's --recompute-modules: not in the 2021-22 Megatron-LM, the Megatron-DeepSpeed fork or torchtitan.
  CHECK(find_framework("megatron-lm")->offers_recompute_modules);
  CHECK(find_framework("nemo")->offers_recompute_modules);
  for (const char* name : {"megatron-lm-legacy", "megatron-deepspeed", "torchtitan", "llm-foundry"})
    CHECK_FALSE(find_framework(name)->offers_recompute_modules);
}

TEST_CASE("the PyTorch-native profiles: 'other' and hf-fsdp start from their parents") {
  const Framework t = profiles::torchtitan();
  const Framework o = profiles::other();
  CHECK(o.name == "other");
  CHECK(o.state.weights == t.state.weights);
  CHECK(o.fsdp_unsharded_param_bytes == t.fsdp_unsharded_param_bytes);
  CHECK(profiles::hf_fsdp().fused_projections == profiles::hf_deepspeed().fused_projections);
  CHECK(profiles::litgpt_2023().name == "litgpt-2023");
  CHECK(profiles::llm_foundry().launcher == Launcher::none);
}
}
