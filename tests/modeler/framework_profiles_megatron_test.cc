#include "modeler/framework_profiles.h"

#include <doctest/doctest.h>

#include <string>

using namespace shardplan;

TEST_SUITE("framework profiles: Megatron family") {

TEST_CASE("Megatron-LM holds 2 + 4 + 12 = 18 bytes of state per parameter") {
  // Megatron-LM docs/distrib_optimizer.md: bf16 params with fp32 main grads, 18 bytes per parameter without the
  // distributed optimizer (2 param + 4 grad + 12 fp32 master, m, v).
  const Framework* f = find_framework("megatron-lm");
  REQUIRE(f != nullptr);
  CHECK(f->state.weights + f->state.gradients + f->state.optimizer == 18.0);
  CHECK(f->state.weights == 2.0);
}

TEST_CASE("the Megatron family's profiles build on Megatron-LM's") {
  const Framework m = profiles::megatron();
  CHECK(m.name == "megatron-lm");
  // NeMo (Megatron-Bridge recipes) keeps Megatron-Core's state bytes except its bf16 gradients.
  const Framework n = profiles::nemo();
  CHECK(n.state.weights == m.state.weights);
  CHECK(n.state.optimizer == m.state.optimizer);
  CHECK(n.state.gradients == 2.0);
  CHECK(profiles::nemo_2024().fp8_recipe == Fp8Recipe::delayed);
  CHECK_FALSE(profiles::megatron_legacy().offers_recompute_modules);
  CHECK(profiles::megatron_deepspeed().attention == AttentionKernel::flash2);
}
}
