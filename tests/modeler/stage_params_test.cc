#include "modeler/stage_params.h"

#include <doctest/doctest.h>

#include "tests/modeler/test_fixtures.h"

using namespace shardplan;

namespace {
// Tiny model by hand: attention 64 x (64 + 2 x 64) + 64 x 64 = 16,384; two LayerNorms 256; MLP 2 x 64 x 256
// = 32,768; 49,408 per layer. Embedding and LM head 128 x 64 = 8,192 each. Final LayerNorm 128.
constexpr double kLayer = 49408, kEmbed = 8192, kFinalNorm = 128;
}  // namespace

TEST_SUITE("stage_params") {

TEST_CASE("tiny model counts by hand") {
  const ModelDesc m = test::tiny_model();
  CHECK(params_per_layer(m) == kLayer);
  CHECK(embedding_params(m) == kEmbed);
  CHECK(lm_head_params(m) == kEmbed);
  CHECK(total_params(m) == 2 * kLayer + 2 * kEmbed + kFinalNorm);
}

TEST_CASE("pp 1: one stage holds the layers, the embedding and the LM head, divided by tp") {
  for (int tp : {1, 2, 4}) {
    CAPTURE(tp);
    const test::Setup su(test::tiny_model(), test::plan_of(tp, 1, 1));
    const Sharding sh = su.sharding();
    const StageParams first = first_stage_params(su.ctx(), sh), last = last_stage_params(su.ctx(), sh);
    CHECK(first.layers == 2 * kLayer / tp);
    CHECK(first.embedding == kEmbed / tp);
    CHECK(first.head == kEmbed / tp);
    CHECK(last.total() == first.total());
    CHECK(busiest_stage_params(su.ctx(), sh).total() == first.total());
  }
}

TEST_CASE("pp 1, tp 1: the single stage holds every parameter, the final norm included") {
  // stage_params.cc counts layers x params_per_layer + embedding + LM head but never the final norm
  // (model_desc.cc non_embedding_params adds it), so the one stage of a pp-1 plan is short of total_params by
  // 2h (LayerNorm) or h (RMSNorm): 128 parameters here, 4096 (x 18 bytes of state) for Llama-2-7B.
  const test::Setup su(test::tiny_model(), test::plan_of(1, 1, 1));
  CHECK(busiest_stage_params(su.ctx(), su.sharding()).total() == total_params(su.model));
}

TEST_CASE("pp 2, untied: embedding on the first stage, LM head on the last") {
  const test::Setup su(test::tiny_model(), test::plan_of(2, 2, 1));
  const Sharding sh = su.sharding();
  const StageParams first = first_stage_params(su.ctx(), sh), last = last_stage_params(su.ctx(), sh);
  CHECK(first.layers == kLayer / 2);  // one layer per stage, tp 2
  CHECK(first.embedding == kEmbed / 2);
  CHECK(first.head == 0);
  CHECK(last.layers == kLayer / 2);
  CHECK(last.embedding == 0);
  CHECK(last.head == kEmbed / 2);
}

TEST_CASE("tied embeddings with pp > 1: the last stage holds its own copy for the LM head") {
  ModelDesc m = test::tiny_model();
  m.tied_embeddings = true;
  const test::Setup su(m, test::plan_of(1, 2, 1));
  const Sharding sh = su.sharding();
  CHECK(lm_head_params(m) == 0);
  CHECK(last_stage_params(su.ctx(), sh).head == kEmbed);
  // pp 1 keeps one copy.
  const test::Setup one(m, test::plan_of(1, 1, 1));
  CHECK(first_stage_params(one.ctx(), one.sharding()).head == 0);
}

TEST_CASE("the busiest stage is the one with more parameters") {
  // Learned positions make the first stage's embedding larger: 128 x 64 + 2048 x 64.
  ModelDesc m = test::tiny_model();
  m.position = PositionKind::learned;
  m.max_position = 2048;
  const test::Setup su(m, test::plan_of(1, 2, 1));
  const Sharding sh = su.sharding();
  CHECK(busiest_stage_params(su.ctx(), sh).embedding == kEmbed + 2048.0 * 64);
  // Without learned positions both stages hold a V x h matrix; the last also holds the final norm, so it is busier.
  const test::Setup plain(test::tiny_model(), test::plan_of(1, 2, 1));
  const StageParams b = busiest_stage_params(plain.ctx(), plain.sharding());
  CHECK(b.embedding == 0);
  CHECK(b.head == kEmbed);
  CHECK(b.final_norm == doctest::Approx(2.0 * 64));  // the final LayerNorm: a scale and a bias per channel
}


TEST_CASE("a rank with MTP modules: the loss's LM head, eh_proj, three norms and its own embedding copy") {
  ModelDesc m = test::tiny_model();
  m.mtp_layers = 1;
  test::Setup su(m, test::plan_of(1, 2, 1));
  su.plan.mtp_layers = 1;
  const Sharding sh = su.sharding();
  REQUIRE(sh.ends.has_value());
  const StageParams p = busiest_stage_params(su.ctx(), sh);
  const double h = m.hidden, V = m.vocab;
  CHECK(p.embedding == 0);
  CHECK(p.head == doctest::Approx(V * h));
  CHECK(p.mtp == doctest::Approx(2.0 * h * h + 3.0 * h + V * h));
  CHECK(p.layers == doctest::Approx(2.0 * params_per_layer(m)));  // 1 layer + the MTP module's
  CHECK(p.total() == doctest::Approx(p.layers + p.head + p.final_norm + p.mtp));
}

TEST_CASE("a custom layout: each rank's own dense and MoE layers; the dense rank holds no routed experts") {
  ModelDesc m = test::tiny_moe();
  m.layers = 4;
  m.moe->dense_layers = 2;  // layers 0-1 dense, 2-3 MoE (DeepSeek-V3's first_k_dense_replace)
  Plan plan = test::plan_of(1, 2, 1);
  plan.pipeline_layout = "Et*2|t*2L";  // rank 0: E + layers 0-1; rank 1: layers 2-3 + L
  const test::Setup su(m, plan);
  auto rank = [&](int load) {
    Sharding sh = su.unsharded();
    sh.rank_load = load;
    for (const Strategy* s : all_strategies()) s->shard(su.ctx(), &sh);
    return busiest_stage_params(su.ctx(), sh);
  };
  // By hand (h 64, 4 query heads and 2 K/V heads of 16): attention 64 x (64 + 2 x 32) + 64 x 64 = 12,288; two
  // RMSNorms 128; the dense SwiGLU 3 x 64 x 96 = 18,432; an MoE layer's 8 routed experts 8 x 3 x 64 x 32 = 49,152,
  // its shared expert 3 x 64 x 32 = 6,144 and router 64 x 8 = 512.
  constexpr double attn_norms = 12288 + 128, dense_mlp = 18432, routed = 49152, moe_rest = 6144 + 512;
  const StageParams dense = rank(0), moe = rank(1);
  CHECK(dense.experts == 0);
  CHECK(dense.layers == 2 * (attn_norms + dense_mlp));
  CHECK(moe.experts == 2 * routed);
  CHECK(moe.layers == 2 * (attn_norms + moe_rest));
  CHECK(dense.layers + dense.experts + moe.layers + moe.experts == doctest::Approx(m.layers * params_per_layer(m)));
  // Without the layout each of the two stages holds the mean layer: half the routed experts each.
  Plan even = plan;
  even.pipeline_layout.clear();
  const test::Setup mean(m, even);
  CHECK(busiest_stage_params(mean.ctx(), mean.sharding()).experts == doctest::Approx(routed));
}

TEST_CASE("stage_moe_share: the rank's decoder share, its MTP layers as the last layer; else the model's mean") {
  ModelDesc m = test::tiny_moe();
  m.layers = 4;
  m.moe->dense_layers = 2;
  Sharding sh;
  sh.layers = 3;  // two dense decoder layers and an MTP module's layer, which is of the last (MoE) layer's kind
  sh.ends = Sharding::StageEnds{false, true, 1};
  CHECK(stage_moe_share(m, sh) == 0.5);  // no rank share: the model's 2 of 4
  sh.moe_layer_share = 0.0;
  CHECK(stage_moe_share(m, sh) == doctest::Approx(1.0 / 3));
  sh.moe_layer_share = 1.0;
  CHECK(stage_moe_share(m, sh) == 1.0);
  CHECK(stage_moe_share(test::tiny_model(), sh) == 0.0);  // a dense model
}

}
