#include "modeler/serving/serve_search.h"

#include <doctest/doctest.h>

#include "tests/modeler/serving/serving_fixtures.h"

using namespace shardplan;
using namespace shardplan::serving;

TEST_CASE("serve search ranks by output tokens/s per GPU and every result meets the targets") {
  const System sys = test::round_system(8);
  const ServingModel sm = make_serving_model(test::llama3_8b(), Precision{});
  ServeInputs base;
  base.model = &sm;
  base.system = &sys;
  ServeSearchSpace space;
  space.gpus = 8;
  SearchTargets t;
  t.tpot_ms = 20;
  const ServeSearchResult r = serve_search(base, space, t);
  REQUIRE_FALSE(r.ranked.empty());
  for (size_t i = 0; i < r.ranked.size(); ++i) {
    CHECK(to_ms(r.ranked[i].prediction.tpot) <= 20);
    if (i > 0)
      CHECK(r.ranked[i - 1].prediction.output_tokens_per_s_per_gpu >=
            r.ranked[i].prediction.output_tokens_per_s_per_gpu);
    CHECK(r.ranked[i].plan.agg.gpus() * r.ranked[i].plan.agg.workers == 8);
  }
  CHECK(r.rejected.count("tpot_target") == 1);
  // A tighter target leaves fewer plans.
  t.tpot_ms = 5;
  CHECK(serve_search(base, space, t).ranked.size() < r.ranked.size());
}

TEST_CASE("engine arguments carry the plan") {
  WorkerPlan w;
  w.tp = 4;
  w.attention_dp = 2;
  w.moe_ep = 8;
  w.moe_tp = 1;
  w.batch = 32;
  CHECK(engine_args(Engine::vllm, "m", w, 1) ==
        "vllm serve m --tensor-parallel-size 4 --pipeline-parallel-size 1 --data-parallel-size 2 "
        "--enable-expert-parallel --max-num-seqs 64 --kv-cache-dtype fp8");
  CHECK(engine_args(Engine::sglang, "m", w, 0).find("--tp 8 --dp 2 --enable-dp-attention --ep-size 8") !=
        std::string::npos);
  CHECK(engine_args(Engine::trtllm, "m", w, 0).find("--tp_size 8 --pp_size 1 --ep_size 8 --max_batch_size 32") !=
        std::string::npos);
}

TEST_CASE("engine_args appends the engine's speculative-decoding arguments when spec decoding is on") {
  WorkerPlan w;
  w.tp = 8;
  w.batch = 16;
  SpecDecode s;
  s.method = SpecMethod::mtp;
  s.tokens = 2;
  s.accept = {0.8};
  const std::string plain = engine_args(Engine::sglang, "m", w, 0);
  CHECK(engine_args(Engine::sglang, "m", w, 0, s) == plain + " " + spec_engine_args(Engine::sglang, s, ""));
  CHECK(engine_args(Engine::vllm, "m", w, 0, s).find("--speculative-config") != std::string::npos);
  CHECK(engine_args(Engine::vllm, "m", w, 0, SpecDecode{}) == engine_args(Engine::vllm, "m", w, 0));
}

TEST_CASE("missed_target: the TTFT target first, then the TPOT target; none when both are met or unset") {
  ServePrediction p;
  p.ttft = Seconds(0.5);
  p.tpot = Seconds(0.02);
  CHECK(std::string(missed_target(p, SearchTargets{})).empty());
  CHECK(std::string(missed_target(p, SearchTargets{400, 0})) == "ttft_target");
  CHECK(std::string(missed_target(p, SearchTargets{400, 10})) == "ttft_target");
  CHECK(std::string(missed_target(p, SearchTargets{600, 10})) == "tpot_target");
  CHECK(std::string(missed_target(p, SearchTargets{600, 20})).empty());
}

TEST_CASE("engine_args carry the memory fraction and the prefix cache in each engine's flags") {
  WorkerPlan w;
  w.tp = 2;
  w.batch = 8;
  const LaunchExtras x{0.85, true};
  const std::string v = engine_args(Engine::vllm, "m", w, 0, {}, "", x);
  CHECK(v == engine_args(Engine::vllm, "m", w, 0) + " --gpu-memory-utilization 0.85 --enable-prefix-caching");
  // SGLang's radix cache and TRT-LLM's block reuse are on by default: only the fraction is added.
  CHECK(engine_args(Engine::sglang, "m", w, 0, {}, "", x) ==
        engine_args(Engine::sglang, "m", w, 0) + " --mem-fraction-static 0.85");
  CHECK(engine_args(Engine::trtllm, "m", w, 0, {}, "", x) ==
        engine_args(Engine::trtllm, "m", w, 0) + " --kv_cache_free_gpu_memory_fraction 0.85");
  // The default adds nothing.
  CHECK(engine_args(Engine::vllm, "m", w, 0, {}, "", LaunchExtras{}) == engine_args(Engine::vllm, "m", w, 0));
  // TRT-LLM's attention-DP note stays last, after the flags.
  w.attention_dp = 2;
  const std::string t = engine_args(Engine::trtllm, "m", w, 0, {}, "", x);
  CHECK(t.find("--kv_cache_free_gpu_memory_fraction 0.85  (extra_llm_api_options: enable_attention_dp: true)") !=
        std::string::npos);
}
