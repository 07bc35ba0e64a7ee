#include "modeler/serving/engine_memory.h"

#include <doctest/doctest.h>

#include "tests/modeler/serving/serving_fixtures.h"

using namespace shardplan;
using namespace shardplan::serving;

TEST_CASE("KV bytes per token: layers x 2 x kv_heads x head_dim x element bytes, split by tp and pp") {
  const ServingModel sm = make_serving_model(test::llama3_8b(), Precision{});
  WorkerPlan w;
  CHECK(kv_bytes_per_token(sm, w, 1000).v == doctest::Approx(32 * 2 * 8 * 128 * 2.0));
  w.tp = 2;
  w.pp = 2;
  CHECK(kv_bytes_per_token(sm, w, 1000).v == doctest::Approx(32 * 2 * 8 * 128 * 2.0 / 4));
  w.tp = 16;  // more ranks than K/V heads: each keeps one head
  w.pp = 1;
  CHECK(kv_bytes_per_token(sm, w, 1000).v == doctest::Approx(32 * 2 * 1 * 128 * 2.0));
}

TEST_CASE("each engine's rule for the KV cache") {
  const System sys = test::round_system();
  const ServingModel sm = make_serving_model(test::llama3_8b(), Precision{});
  WorkerPlan w;
  EngineMemoryOptions o;
  const MemoryReport v = engine_memory(sm, sys.gpu, w, Engine::vllm, o, 2048);
  CHECK(v.kv_cache.v == doctest::Approx((GiB(80) * 0.9 - v.weights - v.activations).v));
  const MemoryReport s = engine_memory(sm, sys.gpu, w, Engine::sglang, o, 2048);
  CHECK(s.kv_cache.v == doctest::Approx((GiB(80) * 0.88 - s.weights).v));
  const MemoryReport t = engine_memory(sm, sys.gpu, w, Engine::trtllm, o, 2048);
  CHECK(t.kv_cache.v == doctest::Approx(((GiB(80) - t.weights - t.activations - t.other) * 0.9).v));
  // llama.cpp allocates the context it is given, nothing more.
  o.context = 4096;
  const MemoryReport l = engine_memory(sm, sys.gpu, w, Engine::llamacpp, o, 2048);
  CHECK(l.kv_cache.v == doctest::Approx(4096 * 32 * 2 * 8 * 128 * 2.0));
  CHECK(l.fits);
}

TEST_CASE("weights that exceed the budget do not fit") {
  System sys = test::round_system();
  sys.gpu.hbm_capacity = GiB(12);
  const ServingModel sm = make_serving_model(test::llama3_8b(), Precision{});
  const MemoryReport r = engine_memory(sm, sys.gpu, WorkerPlan{}, Engine::vllm, EngineMemoryOptions{}, 2048);
  CHECK_FALSE(r.fits);
  WorkerPlan tp2;
  tp2.tp = 2;
  CHECK(weight_bytes_per_gpu(sm, tp2).v == doctest::Approx(weight_bytes_per_gpu(sm, WorkerPlan{}).v / 2).epsilon(0.01));
}

TEST_CASE("default prefill budget per step follows each engine's rule for the GPU") {
  Gpu g;
  g.name = "h100-sxm5-80gb";
  g.hbm_capacity = GiB(80);
  CHECK(default_max_num_tokens(Engine::vllm, g) == 8192);
  CHECK(default_max_num_tokens(Engine::sglang, g) == 8192);
  CHECK(default_max_num_tokens(Engine::trtllm, g) == 8192);
  g.name = "A100-SXM4-80GB";  // vLLM keeps the small budget on A100 whatever its memory
  CHECK(default_max_num_tokens(Engine::vllm, g) == 2048);
  g.name = "b200";
  g.hbm_capacity = GiB(179.1);
  CHECK(default_max_num_tokens(Engine::sglang, g) == 16384);
  CHECK(default_max_num_tokens(Engine::vllm, g) == 8192);
  g.name = "l40s";
  g.hbm_capacity = GiB(44.99);
  CHECK(default_max_num_tokens(Engine::sglang, g) == 4096);
  CHECK(default_max_num_tokens(Engine::vllm, g) == 2048);
  g.name = "rtx-4090";
  g.hbm_capacity = GiB(23.6);
  CHECK(default_max_num_tokens(Engine::sglang, g) == 2048);
  CHECK(default_max_num_tokens(Engine::llamacpp, g) == 512);
}

TEST_CASE("settle_memory: a negative KV pool does not fit and is 0; the total sums the parts against the capacity") {
  MemoryReport r;
  r.capacity = GiB(80);
  r.weights = GiB(70);
  r.activations = GiB(2);
  r.other = GiB(1);
  r.kv_cache = GiB(-3);
  settle_memory(&r);
  CHECK_FALSE(r.fits);
  CHECK(r.kv_cache.v == 0);
  CHECK(r.total.v == doctest::Approx(GiB(73).v));
  r = MemoryReport{};
  r.capacity = GiB(80);
  r.weights = GiB(40);
  r.kv_cache = GiB(41);
  settle_memory(&r);
  CHECK_FALSE(r.fits);  // the parts exceed the capacity
  r.kv_cache = GiB(30);
  r.fits = true;
  settle_memory(&r);
  CHECK(r.fits);
  CHECK(r.total.v == doctest::Approx(GiB(70).v));
}
