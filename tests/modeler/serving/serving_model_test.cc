#include "modeler/serving/serving_model.h"

#include <doctest/doctest.h>

#include "tests/modeler/serving/serving_fixtures.h"

using namespace shardplan;
using namespace shardplan::serving;

TEST_CASE("a dense model is one class of identical blocks with its linears, the LM head and the embedding") {
  const ServingModel sm = make_serving_model(test::llama3_8b(), Precision{});
  REQUIRE(sm.classes.size() == 1);
  const LayerClass& c = sm.classes.front();
  CHECK(c.count == 32);
  CHECK_FALSE(c.moe);
  CHECK_FALSE(c.sliding);
  CHECK(c.experts.empty());
  // q, k, v, o, gate/up and down projections (their stems as tensors.cc names them).
  CHECK(c.linears.size() >= 5);
  CHECK(c.norm_bytes.v > 0);
  // Untied Llama-3: the LM head is its own 128,256 x 4,096 matrix; the embedding table is looked up, not read.
  CHECK(sm.lm_head.n == 128256);
  CHECK(sm.lm_head.k == 4096);
  CHECK(sm.embedding_bytes.v == doctest::Approx(128256.0 * 4096 * 2));
}

TEST_CASE("MoE and sliding-window layers form their own classes; routed experts are kept apart") {
  ModelDesc m = test::llama3_8b();
  m.moe = MoeDesc{64, 2, 1024, 0, 0, 0, false, false};
  const ServingModel moe = make_serving_model(m, Precision{});
  REQUIRE(moe.classes.size() == 1);
  CHECK(moe.classes.front().moe);
  CHECK(moe.classes.front().experts.size() >= 2);  // up (gate + up) and down
  bool router = false;
  for (const LinearSpec& s : moe.classes.front().linears) router = router || s.router;
  CHECK(router);
  ModelDesc tied = test::llama3_8b();
  tied.tied_embeddings = true;
  const ServingModel t = make_serving_model(tied, Precision{});
  CHECK(t.lm_head.n == tied.vocab);
  CHECK(t.lm_head.bytes.v == doctest::Approx(t.embedding_bytes.v));
}

TEST_CASE("a serving model starts with the engine-neutral step traits") {
  const ServingModel sm = make_serving_model(test::llama3_8b(), Precision{});
  CHECK(sm.engine.small_kernels_per_block == kCommonSmallKernelsPerBlock);
  CHECK(sm.engine.small_kernels_per_step == kCommonSmallKernelsPerStep);
  CHECK(sm.engine.host_per_step.v == 0);
}
