#include "modeler/serving/disagg_search.h"

#include <doctest/doctest.h>

#include "modeler/serving/step_time.h"
#include "tests/modeler/serving/serving_fixtures.h"

using namespace shardplan;
using namespace shardplan::serving;

namespace {

ServeInputs inputs(const ServingModel& sm, const System& sys, int in_len, int out_len) {
  ServeInputs in;
  in.model = &sm;
  in.system = &sys;
  in.workload.input_len = in_len;
  in.workload.output_len = out_len;
  return in;
}

double best_agg(const ServeSearchResult& r) {
  return r.ranked.empty() ? 0 : r.ranked.front().prediction.output_tokens_per_s_per_gpu;
}

double best_disagg(const DisaggSearchResult& r) {
  return r.ranked.empty() ? 0 : r.ranked.front().output_tokens_per_s_per_gpu_budget;
}

}  // namespace

TEST_CASE("prefill batch: the prompts one step budget holds, at least one") {
  CHECK(prefill_batch(8192, 1024) == 8);
  CHECK(prefill_batch(8192, 3000) == 2);
  CHECK(prefill_batch(2048, 8192) == 1);
}

TEST_CASE("disaggregation wins with long prompts under a tight TPOT target") {
  // Llama-3-8B on 8 round GPUs (1 PFLOP/s, 1 TB/s), 8192-token prompts, 256 output tokens. Aggregated, every
  // decode step also prefills batch x 8192 / 256 = 32 x batch prompt tokens (16 GFLOP each: 0.5 ms of compute
  // per batch slot on one GPU beside the 16 ms weight read), so a 20 ms TPOT holds the aggregated plans to
  // tp 4 x batch 16 (12.6 ms; batch 32 takes 20.6 ms); disaggregated decode steps carry no prompt tokens, and
  // 3 decode workers at tp 2 x batch 16 fed by 2 tp-1 prefill workers come out ahead (356 against 311 output
  // tok/s per GPU when this test was written). Without a TPOT target the aggregated plans win (517 against 423).
  const System sys = test::round_system(8);
  const ServingModel sm = make_serving_model(test::llama3_8b(), Precision{});
  const ServeInputs base = inputs(sm, sys, 8192, 256);
  ServeSearchSpace space;
  space.gpus = 8;
  const SearchTargets t{0, 20};
  const ServeSearchResult agg = serve_search(base, space, t);
  const DisaggSearchResult dis = disagg_search(base, space, t);
  REQUIRE_FALSE(dis.ranked.empty());
  CHECK(best_disagg(dis) > 1.1 * best_agg(agg));
  CHECK(best_agg(serve_search(base, space, SearchTargets{})) > best_disagg(disagg_search(base, space, SearchTargets{})));
  const DisaggCandidate& c = dis.ranked.front();
  // The decode TPOT is the pure decode step, within the target; the prefill pool keeps up (its capacity exceeds
  // the rate served) and the GPU accounting adds up.
  CHECK(c.prediction.tpot == c.prediction.decode_step.total);
  CHECK(to_ms(c.prediction.tpot) <= 20);
  CHECK(c.prefill_capacity_rps > c.request_rate_rps);
  CHECK(c.concurrency == c.plan.decode.workers * c.plan.decode.attention_dp * *c.plan.decode.batch);
  CHECK(c.gpus_used == c.plan.prefill.workers * c.plan.prefill.gpus() + c.plan.decode.workers * c.plan.decode.gpus());
  CHECK(c.gpus_used + c.idle_gpus == 8);
  CHECK(c.output_tokens_per_s_per_gpu_budget == doctest::Approx(c.prediction.output_tokens_per_s / 8));
  for (size_t i = 1; i < dis.ranked.size(); ++i)
    CHECK(dis.ranked[i - 1].output_tokens_per_s_per_gpu_budget >= dis.ranked[i].output_tokens_per_s_per_gpu_budget);
  CHECK(dis.rejected.count("tpot_target") == 1);
  // Every plan's TTFT carries its KV transfer: 8192 x 131,072 B = 1 GiB per request, on one 8-GPU node over its
  // 400 GB/s tier (2.7 ms).
  for (const DisaggCandidate& d : dis.ranked) {
    REQUIRE(d.prediction.kv_transfer);
    CHECK(d.prediction.kv_transfer->same_node);
    CHECK(d.prediction.kv_transfer->shards.unique.v == 1073741824.0);
    CHECK(d.prediction.ttft >= d.prediction.prefill_step.total + d.prediction.kv_transfer->exposed);
  }
}

TEST_CASE("x is the fewest prefill workers that keep up with the decode pool") {
  const System sys = test::round_system(8);
  const ServingModel sm = make_serving_model(test::llama3_8b(), Precision{});
  const ServeInputs base = inputs(sm, sys, 8192, 256);
  ServeSearchSpace space;
  space.gpus = 8;
  const DisaggSearchResult dis = disagg_search(base, space, SearchTargets{});
  REQUIRE_FALSE(dis.ranked.empty());
  int checked = 0;
  for (const DisaggCandidate& c : dis.ranked) {
    if (c.plan.prefill.workers == 1) continue;
    // One prefill worker fewer: the prefill pool would be the bottleneck.
    ServeInputs in = base;
    in.plan = c.plan;
    in.plan.prefill.workers -= 1;
    in.workload.concurrency = c.concurrency;
    const ServePrediction p = serve_predict(in);
    const double cap = in.plan.prefill.workers * in.plan.prefill.attention_dp * *in.plan.prefill.batch /
                       p.prefill_step.total.v;
    CHECK(p.output_tokens_per_s / 256 == doctest::Approx(cap));
    if (++checked == 5) break;
  }
  CHECK(checked > 0);
}

TEST_CASE("aggregated wins with short prompts and long outputs") {
  // 128 prompt tokens, 2048 generated: prefill is 1/16 of the tokens, so a dedicated prefill pool mostly idles
  // while its GPUs are missing from decoding.
  const System sys = test::round_system(8);
  const ServingModel sm = make_serving_model(test::llama3_8b(), Precision{});
  const ServeInputs base = inputs(sm, sys, 128, 2048);
  ServeSearchSpace space;
  space.gpus = 8;
  const ServeSearchResult agg = serve_search(base, space, SearchTargets{});
  const DisaggSearchResult dis = disagg_search(base, space, SearchTargets{});
  REQUIRE_FALSE(dis.ranked.empty());
  CHECK(best_agg(agg) > best_disagg(dis));
}

TEST_CASE("disaggregated rejections: pools that do not fit, counted once per shape") {
  const System sys = test::round_system(2);
  const ServingModel sm = make_serving_model(test::llama3_8b(), Precision{});
  const ServeInputs base = inputs(sm, sys, 1024, 128);
  ServeSearchSpace space;
  // One GPU: no room for a prefill and a decode worker, every prefill shape (4 tp x 3 pp) is rejected.
  space.gpus = 1;
  DisaggSearchResult r = disagg_search(base, space, SearchTargets{});
  CHECK(r.ranked.empty());
  CHECK(r.evaluated == 0);
  CHECK(r.prefill_shapes == 12);
  CHECK(r.rejected.at("pools_exceed_gpus") == 12);
  // Two GPUs: only tp 1 pp 1 prefill beside a tp 1 decode worker (11 prefill + 3 decode shapes rejected); one
  // plan per batch of the ladder at most, 1P1D.
  space.gpus = 2;
  r = disagg_search(base, space, SearchTargets{});
  CHECK(r.rejected.at("pools_exceed_gpus") == 14);
  CHECK(r.prefill_shapes_kept == 1);
  REQUIRE_FALSE(r.ranked.empty());
  for (const DisaggCandidate& c : r.ranked) {
    CHECK(c.plan.prefill.workers == 1);
    CHECK(c.plan.decode.workers == 1);
    CHECK(c.gpus_used == 2);
    CHECK(c.idle_gpus == 0);
  }
  // Every evaluation is ranked, rejected by a reason, or stepped to one more prefill worker.
  auto n = [&](const char* why) { return r.rejected.count(why) ? r.rejected.at(why) : 0; };
  CHECK(r.evaluated == static_cast<int>(r.ranked.size()) + r.prefill_stepped + n("ttft_target") +
                           n("tpot_target") + n("kv_cache_caps_batch") + n("oom"));
  CHECK(static_cast<int>(r.ranked.size()) <= static_cast<int>(space.batch.size()));
  // A TTFT target below one prefill step rejects every plan by ttft_target.
  r = disagg_search(base, space, SearchTargets{0.001, 0});
  CHECK(r.ranked.empty());
  CHECK(r.rejected.at("ttft_target") > 0);
}

TEST_CASE("disaggregated launch flags per engine") {
  const DisaggLaunch s = disagg_launch(Engine::sglang, 2, 3);
  CHECK(s.prefill_flags == " --disaggregation-mode prefill");
  CHECK(s.decode_flags == " --disaggregation-mode decode");
  CHECK(s.router.find("sglang_router.launch_router --pd-disaggregation") != std::string::npos);
  const DisaggLaunch v = disagg_launch(Engine::vllm, 2, 3);
  CHECK(v.prefill_flags.find("\"kv_role\":\"kv_producer\"") != std::string::npos);
  CHECK(v.decode_flags.find("\"kv_role\":\"kv_consumer\"") != std::string::npos);
  const DisaggLaunch t = disagg_launch(Engine::trtllm, 2, 3);
  CHECK(t.prefill_flags.find("cache_transceiver_config") != std::string::npos);
  CHECK(t.router.find("trtllm-serve disaggregated") != std::string::npos);
  CHECK(t.router.find("num_instances: 2") != std::string::npos);
  CHECK(t.router.find("num_instances: 3") != std::string::npos);
}
