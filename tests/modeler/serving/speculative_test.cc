#include "modeler/serving/speculative.h"

#include <doctest/doctest.h>

#include <cmath>

#include "modeler/serving/serve_predict.h"
#include "tests/modeler/serving/serving_fixtures.h"

using namespace shardplan;
using namespace shardplan::serving;

namespace {
SpecDecode spec(SpecMethod m, int k, std::vector<double> accept) {
  SpecDecode s;
  s.method = m;
  s.tokens = k;
  s.accept = std::move(accept);
  return s;
}
bool has(const Problems& p, const std::string& code) {
  for (const Problem& x : p)
    if (x.code == code) return true;
  return false;
}
ServeInputs inputs(const ServingModel& sm, const System& sys, int concurrency) {
  ServeInputs in;
  in.model = &sm;
  in.system = &sys;
  in.workload.input_len = 1024;
  in.workload.output_len = 256;
  in.workload.concurrency = concurrency;
  return in;
}
ModelDesc llama_with_mtp() {
  ModelDesc m = test::llama3_8b();
  m.mtp_layers = 1;
  return m;
}
}  // namespace

TEST_CASE("expected tokens per step: 1 + sum_i prod_{j<=i} a_j, by hand") {
  CHECK(expected_tokens_per_step(SpecDecode{}) == 1);  // off
  CHECK(expected_tokens_per_step(spec(SpecMethod::mtp, 1, {0.85})) == doctest::Approx(1.85));
  // One rate at every position: 1 + 0.5 + 0.25 + 0.125, Leviathan et al.'s (1 - a^(k+1)) / (1 - a).
  CHECK(expected_tokens_per_step(spec(SpecMethod::eagle, 3, {0.5})) == doctest::Approx(1.875));
  CHECK(expected_tokens_per_step(spec(SpecMethod::eagle, 3, {0.5})) == doctest::Approx((1 - std::pow(0.5, 4)) / 0.5));
  // Per position: 1 + 0.9 + 0.9 x 0.8 + 0.9 x 0.8 x 0.5.
  CHECK(expected_tokens_per_step(spec(SpecMethod::eagle, 3, {0.9, 0.8, 0.5})) == doctest::Approx(2.98));
  CHECK(expected_tokens_per_step(spec(SpecMethod::eagle, 3, {0})) == 1);
  CHECK(expected_tokens_per_step(spec(SpecMethod::eagle, 3, {1})) == 4);
  SpecDecode l = spec(SpecMethod::mtp, 3, {});
  l.accept_length = 2.6;
  CHECK(expected_tokens_per_step(l) == 2.6);
}

TEST_CASE("check_spec names each bad setting") {
  const ModelDesc t = llama_with_mtp();
  const WorkerPlan w;
  CHECK(check_spec(SpecDecode{}, t, nullptr, w).empty());
  CHECK(check_spec(spec(SpecMethod::mtp, 2, {0.8, 0.6}), t, nullptr, w).empty());
  CHECK(has(check_spec(spec(SpecMethod::mtp, 0, {0.8}), t, nullptr, w), "spec_tokens"));
  CHECK(has(check_spec(spec(SpecMethod::mtp, 2, {}), t, nullptr, w), "spec_accept"));        // no default
  CHECK(has(check_spec(spec(SpecMethod::mtp, 2, {1.2}), t, nullptr, w), "spec_accept"));
  CHECK(has(check_spec(spec(SpecMethod::mtp, 3, {0.8, 0.6}), t, nullptr, w), "spec_accept"));  // 2 rates, k 3
  SpecDecode both = spec(SpecMethod::mtp, 2, {0.8});
  both.accept_length = 2;
  CHECK(has(check_spec(both, t, nullptr, w), "spec_accept"));
  SpecDecode len = spec(SpecMethod::mtp, 2, {});
  len.accept_length = 3.5;  // above k + 1
  CHECK(has(check_spec(len, t, nullptr, w), "spec_accept"));
  CHECK(has(check_spec(spec(SpecMethod::mtp, 1, {0.8}), test::llama3_8b(), nullptr, w), "spec_method"));
  CHECK(has(check_spec(spec(SpecMethod::draft_model, 1, {0.8}), t, nullptr, w), "spec_draft"));
  const ModelDesc other_vocab = test::llama2_7b();  // V 32000 against 128256
  CHECK(has(check_spec(spec(SpecMethod::draft_model, 1, {0.8}), t, &other_vocab, w), "spec_draft"));
  ModelDesc small = test::llama3_8b();
  small.heads = 12;
  WorkerPlan tp8;
  tp8.tp = 8;
  CHECK(has(check_spec(spec(SpecMethod::draft_model, 1, {0.8}), t, &small, tp8), "spec_draft"));
  CHECK(check_spec(spec(SpecMethod::draft_model, 1, {0.8}), t, &small, w).empty());
}

TEST_CASE("the MTP module is one block like the target's last, plus eh_proj, sharing the LM head") {
  ModelDesc m = test::tiny_moe();  // layer 0 dense, layer 1 MoE
  m.mtp_layers = 1;
  const ServingModel target = make_serving_model(m, Precision{});
  const ServingModel mtp = make_draft_head(target, SpecMethod::mtp);
  REQUIRE(mtp.classes.size() == 1);
  CHECK(mtp.classes.front().count == 1);
  CHECK(mtp.classes.front().moe);
  const LinearSpec& fc = mtp.classes.front().linears.back();
  CHECK(fc.n == m.hidden);
  CHECK(fc.k == 2 * m.hidden);
  CHECK(mtp.lm_head.bytes == target.lm_head.bytes);
  const ServingModel eagle = make_draft_head(target, SpecMethod::eagle);
  CHECK_FALSE(eagle.classes.front().moe);  // EAGLE's layer is dense
  // New weights on the GPU: the block and eh_proj, not the shared embedding and LM head.
  const WorkerPlan w;
  const Bytes extra = draft_weight_bytes_per_gpu(mtp, w, SpecMethod::mtp);
  CHECK(extra.v > fc.bytes.v);
  CHECK(extra < weight_bytes_per_gpu(mtp, w));
}

TEST_CASE("a speculative step: verification of k + 1 tokens plus k draft passes") {
  const System sys = test::round_system();
  const ServingModel sm = make_serving_model(llama_with_mtp(), Precision{});
  const ServingModel head = make_draft_head(sm, SpecMethod::mtp);
  const WorkerPlan w;
  StepLoad l;
  l.decode_seqs = 2;
  l.decode_ctx = 2048;
  const SpecDecode s = spec(SpecMethod::mtp, 3, {0.5});
  StepLoad v = l;
  v.decode_tokens_per_seq = 4;
  StepLoad first = l;
  first.decode_tokens_per_seq = 1.875;
  const Seconds expected = step_time(sm, sys, w, v).total + step_time(head, sys, w, first).total +
                           step_time(head, sys, w, l).total * 2.0;
  const StepTime st = spec_step_time(sm, head, sys, w, l, s);
  CHECK(st.total.v == doctest::Approx(expected.v));
  CHECK(st.total.v == doctest::Approx((st.linear + st.attention + st.moe + st.comm + st.other + st.host).v));
}

TEST_CASE("with nothing accepted, speculative decoding costs more per token than plain decoding") {
  const System sys = test::round_system();
  const ServingModel sm = make_serving_model(llama_with_mtp(), Precision{});
  ServeInputs in = inputs(sm, sys, 8);
  const ServePrediction plain = serve_predict(in);
  for (SpecMethod m : {SpecMethod::mtp, SpecMethod::eagle}) {
    in.spec = spec(m, 2, {0});
    const ServePrediction p = serve_predict(in);
    CHECK(p.tokens_per_step == 1);
    CHECK(p.tpot > plain.tpot);
    CHECK(p.output_tokens_per_s < plain.output_tokens_per_s);
  }
}

TEST_CASE("with everything accepted at a small batch, TPOT falls by k + 1 over the step's cost ratio") {
  const System sys = test::round_system();
  const ServingModel sm = make_serving_model(llama_with_mtp(), Precision{});
  ServeInputs in = inputs(sm, sys, 1);
  const ServePrediction plain = serve_predict(in);
  const int k = 3;
  in.spec = spec(SpecMethod::mtp, k, {0.999});
  const ServePrediction p = serve_predict(in);
  const double e = expected_tokens_per_step(in.spec);
  CHECK(p.tokens_per_step == doctest::Approx(e));
  const double cost_ratio = p.decode_step.total / plain.decode_step.total;
  CHECK(plain.tpot / p.tpot == doctest::Approx(e / cost_ratio).epsilon(0.01));
  // Batch 1 is memory-bound: verifying 4 tokens costs about one token's step; the three one-layer draft passes
  // (their LM head included) add a fraction of it, so TPOT falls by more than 2x but less than k + 1.
  CHECK(cost_ratio > 1.0);
  CHECK(cost_ratio < 1.6);
  CHECK(plain.tpot / p.tpot > 2.5);
  CHECK(plain.tpot / p.tpot < k + 1.0);
}

TEST_CASE("a draft model's weights and KV shrink the cache; the k draft slots count per sequence") {
  const System sys = test::round_system();
  const ServingModel sm = make_serving_model(test::llama3_8b(), Precision{});
  ModelDesc small = test::llama3_8b();
  small.layers = 4;
  const ServingModel draft = make_draft_model(small, Precision{}, sm.engine);
  ServeInputs in = inputs(sm, sys, 8);
  const ServePrediction plain = serve_predict(in);
  in.spec = spec(SpecMethod::draft_model, 4, {0.7});
  in.draft = &draft;
  const ServePrediction p = serve_predict(in);
  CHECK(p.memory.weights.v == doctest::Approx((plain.memory.weights + weight_bytes_per_gpu(draft, WorkerPlan{})).v));
  CHECK(p.memory.kv_cache < plain.memory.kv_cache);
  CHECK(p.kv_tokens < plain.kv_tokens);
  CHECK(p.kv_slots_per_seq == 4);
  CHECK(p.kv_max_batch == doctest::Approx(p.kv_tokens / (1024 + 256 + 4)));
  // Steady-state throughput follows from TPOT as without speculation.
  CHECK(p.output_tokens_per_s == doctest::Approx(8 * 256 / (p.ttft + p.tpot * 255).v));
  in.draft = nullptr;  // draft_model needs its draft
  CHECK_THROWS_AS(serve_predict(in), ConfigError);
}

TEST_CASE("the draft's weights reduce the engines' KV pools by their rules") {
  MemoryReport r;
  r.capacity = GiB(80);
  r.weights = GiB(20);
  r.kv_cache = GiB(40);
  r.other = GiB(1);
  r.fraction = 0.5;
  CHECK(with_draft_weights(r, GiB(4), Engine::vllm).kv_cache == GiB(36));
  CHECK(with_draft_weights(r, GiB(4), Engine::sglang).kv_cache == GiB(36));
  CHECK(with_draft_weights(r, GiB(4), Engine::trtllm).kv_cache == GiB(38));
  CHECK(with_draft_weights(r, GiB(4), Engine::llamacpp).kv_cache == GiB(40));
  CHECK_FALSE(with_draft_weights(r, GiB(50), Engine::vllm).fits);
}

TEST_CASE("disaggregated decode and static batches divide the step by the expected tokens") {
  const System sys = test::round_system();
  const ServingModel sm = make_serving_model(llama_with_mtp(), Precision{});
  ServeInputs in = inputs(sm, sys, 16);
  in.static_batch = 4;
  in.spec = spec(SpecMethod::mtp, 1, {0.8});
  const ServePrediction st = serve_predict(in);
  CHECK(st.tpot.v == doctest::Approx(st.decode_step.total.v / 1.8));
  in.static_batch = 0;
  in.plan.mode = Mode::disaggregated;
  in.plan.prefill.batch = 1;
  const ServePrediction d = serve_predict(in);
  CHECK(d.tpot.v == doctest::Approx(d.decode_step.total.v / 1.8));
  in.plan.mode = Mode::aggregated;
  in.workload.rounds = 2;  // the step-by-step loop does not model it
  CHECK_THROWS_AS(serve_predict(in), ConfigError);
}

TEST_CASE("launch arguments of each engine") {
  const SpecDecode mtp = spec(SpecMethod::mtp, 3, {0.8});
  CHECK(spec_engine_args(Engine::vllm, mtp, "") ==
        "--speculative-config '{\"method\":\"mtp\",\"num_speculative_tokens\":3}'");
  CHECK(spec_engine_args(Engine::sglang, mtp, "") ==
        "--speculative-algorithm NEXTN --speculative-num-steps 3 --speculative-eagle-topk 1 "
        "--speculative-num-draft-tokens 4");
  CHECK(spec_engine_args(Engine::trtllm, mtp, "").find("decoding_type: MTP, num_nextn_predict_layers: 3") !=
        std::string::npos);
  const SpecDecode d = spec(SpecMethod::draft_model, 4, {0.7});
  CHECK(spec_engine_args(Engine::vllm, d, "org/small") ==
        "--speculative-config '{\"method\":\"draft_model\",\"num_speculative_tokens\":4,\"model\":\"org/small\"}'");
  CHECK(spec_engine_args(Engine::sglang, spec(SpecMethod::eagle, 2, {0.7}), "h").find(
            "--speculative-algorithm EAGLE --speculative-num-steps 2") != std::string::npos);
  CHECK(spec_engine_args(Engine::trtllm, d, "s").find("decoding_type: Draft_Target, max_draft_len: 4") !=
        std::string::npos);
  CHECK(spec_engine_args(Engine::vllm, SpecDecode{}, "").empty());
  CHECK(parse_spec_method("nextn") == SpecMethod::mtp);
  CHECK_FALSE(parse_spec_method("medusa"));
}
