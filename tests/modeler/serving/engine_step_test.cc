#include "modeler/serving/engine_step.h"

#include <doctest/doctest.h>

#include "tests/modeler/test_fixtures.h"

using namespace shardplan;
using namespace shardplan::serving;

namespace {
ModelDesc mla_model() {
  ModelDesc m = test::llama3_8b();
  m.mla = MlaDesc{};
  return m;
}
}  // namespace

TEST_CASE("TRT-LLM runs RoPE and the KV append inside its attention op: only the common small kernels") {
  const EngineStep s = engine_step(Engine::trtllm, "1.0.0rc3", test::llama3_8b());
  CHECK(s.small_kernels_per_block == kCommonSmallKernelsPerBlock);
  CHECK(s.small_kernels_per_step == kCommonSmallKernelsPerStep);
  CHECK(s.host_per_step.v == 0);
  CHECK_FALSE(s.source.empty());
}

TEST_CASE("vLLM and SGLang launch RoPE and the KV-cache write as kernels of their own, except for MLA") {
  for (Engine e : {Engine::vllm, Engine::sglang}) {
    CAPTURE(engine_name(e));
    CHECK(engine_step(e, "", test::llama3_8b()).small_kernels_per_block == kCommonSmallKernelsPerBlock + 2);
    CHECK(engine_step(e, "", mla_model()).small_kernels_per_block == kCommonSmallKernelsPerBlock);
    CHECK(engine_step(e, "", test::llama3_8b()).small_kernels_per_step == kCommonSmallKernelsPerStep);
    // Without rotary positions only the cache write remains.
    ModelDesc learned = test::llama3_8b();
    learned.position = PositionKind::learned;
    CHECK(engine_step(e, "", learned).small_kernels_per_block == kCommonSmallKernelsPerBlock + 1);
  }
  // vLLM 0.12.0 schedules between steps (async scheduling off), but no measured per-step figure is at hand.
  CHECK_FALSE(engine_step(Engine::vllm, "0.12.0", test::llama3_8b()).overlaps_scheduler);
  CHECK_FALSE(engine_step(Engine::vllm, "0.11.2", test::llama3_8b()).overlaps_scheduler);
  CHECK(engine_step(Engine::vllm, "0.12.0", test::llama3_8b()).host_per_step.v == 0);
  // The current release (and a version string without major.minor) turns async scheduling on.
  CHECK(engine_step(Engine::vllm, "", test::llama3_8b()).overlaps_scheduler);
  CHECK(engine_step(Engine::vllm, "0.20.2", test::llama3_8b()).overlaps_scheduler);
  CHECK(engine_step(Engine::sglang, "0.5.6.post2", test::llama3_8b()).overlaps_scheduler);
  CHECK(engine_step(Engine::trtllm, "1.0.0rc3", test::llama3_8b()).overlaps_scheduler);
}

TEST_CASE("llama.cpp and unknown engines keep the engine-neutral step") {
  for (Engine e : {Engine::llamacpp, Engine::other}) {
    const EngineStep s = engine_step(e, "b4000", test::llama3_8b());
    CHECK(s.small_kernels_per_block == kCommonSmallKernelsPerBlock);
    CHECK(s.host_per_step.v == 0);
  }
}

TEST_CASE("QK-norm: TRT-LLM fuses it with RoPE, SGLang overlaps or fuses q and k, vLLM runs two norm kernels") {
  ModelDesc qwen3 = test::llama3_8b();
  qwen3.qk_norm = QkNorm::per_head;
  const ModelDesc plain = test::llama3_8b();
  auto extra = [&](Engine e, const ModelDesc& m) {
    return engine_step(e, "", m).small_kernels_per_block - engine_step(e, "", plain).small_kernels_per_block;
  };
  CHECK(extra(Engine::trtllm, qwen3) == 1);
  CHECK(extra(Engine::sglang, qwen3) == 1);
  CHECK(extra(Engine::vllm, qwen3) == 2);
  CHECK(extra(Engine::llamacpp, qwen3) == 0);
  ModelDesc olmo2 = qwen3;
  olmo2.qk_norm = QkNorm::full;  // two full-width norm calls
  CHECK(extra(Engine::trtllm, olmo2) == 2);
  CHECK(extra(Engine::vllm, olmo2) == 2);
  // MLA's latent norms are not QK-norm.
  ModelDesc mla = mla_model();
  mla.qk_norm = QkNorm::per_head;
  CHECK(engine_step(Engine::vllm, "", mla).small_kernels_per_block == kCommonSmallKernelsPerBlock);
}

