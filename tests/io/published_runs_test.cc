#include <doctest/doctest.h>

#include <string>

#include "modeler/io/published_runs.h"
#include "modeler/problems.h"

using namespace shardplan;
using namespace shardplan::io;

namespace {

std::string run_yaml(const std::string& moe, const std::string& mla, const std::string& etp = "null") {
  return R"(- id: r1
  source: Test source (2025)
  framework: nemo
  model:
    layers: 4
    hidden: 64
    ffn_hidden: 128
    heads: 4
    kv_heads: 4
    head_dim: 16
    vocab: 256
    seq_len: 128
    gated_mlp: true
    tied_embeddings: false
    moe: )" + moe + R"(
    mla: )" + mla + R"(
  system:
    gpu: h100-sxm5-80gb
    gpus: 8
  precision: bf16
  plan:
    tp: 2
    pp: 1
    dp: 4
    ep: 4
    etp: )" + etp + R"(
    global_batch: 8
  measured:
    tokens_per_s_per_gpu: 1000
)";
}

const std::string kMoe = R"(
      experts: 8
      top_k: 2
      expert_ffn_hidden: 32
      shared_experts: 1
      dense_layers: 1)";
const std::string kMla = R"(
      q_lora_rank: 32
      kv_lora_rank: 16
      qk_nope_head_dim: 16
      qk_rope_head_dim: 8
      v_head_dim: 16)";

}  // namespace

TEST_SUITE("published_runs") {

TEST_CASE("model.moe and model.mla are parsed into the model") {
  const auto runs = parse_published_runs(run_yaml(kMoe, kMla), "runs.yaml");
  REQUIRE(runs.size() == 1);
  const ModelDesc& m = runs[0].model;
  CHECK(runs[0].moe);
  REQUIRE(m.moe.has_value());
  CHECK(m.moe->experts == 8);
  CHECK(m.moe->top_k == 2);
  CHECK(m.moe->expert_ffn_hidden == 32);
  CHECK(m.moe->shared_experts == 1);
  CHECK(m.moe->dense_layers == 1);
  REQUIRE(m.mla.has_value());
  CHECK(m.mla->q_lora_rank == 32);
  CHECK(m.mla->kv_lora_rank == 16);
  CHECK(m.mla->qk_nope_head_dim == 16);
  CHECK(m.mla->qk_rope_head_dim == 8);
  CHECK(m.mla->v_head_dim == 16);
  CHECK(runs[0].plan.plan.ep == 4);
  CHECK(runs[0].plan.plan.etp == 2);  // null: Megatron-Core's default, etp = tp
  CHECK(parse_published_runs(run_yaml(kMoe, "null", "1"), "runs.yaml")[0].plan.plan.etp == 1);
}

TEST_CASE("dense rows: null moe and mla") {
  const auto runs = parse_published_runs(run_yaml("null", "null"), "runs.yaml");
  CHECK_FALSE(runs[0].moe);
  CHECK_FALSE(runs[0].model.moe.has_value());
  CHECK_FALSE(runs[0].model.mla.has_value());
}

TEST_CASE("bad moe / mla keys and values are named with file, line and key path") {
  const std::string typo = R"(
      experts: 8
      top_k: 2
      expert_ffn: 32)";
  CHECK_THROWS_WITH_AS(parse_published_runs(run_yaml(typo, "null"), "runs.yaml"),
                       "runs.yaml:16: r1.model.moe: missing required key 'r1.model.moe.expert_ffn_hidden'",
                       ConfigError);
  const std::string topk = R"(
      experts: 8
      top_k: 9
      expert_ffn_hidden: 32)";
  CHECK_THROWS_WITH_AS(parse_published_runs(run_yaml(topk, "null"), "runs.yaml"),
                       "runs.yaml:17: r1.model.moe.top_k: top_k (9) exceeds experts (8)", ConfigError);
  const std::string mla = R"(
      kv_lora_rank: 16
      qk_nope_head_dim: 16
      qk_rope_head_dim: 8
      v_head_dim: 16
      v_dim: 3)";
  CHECK_THROWS_WITH_AS(parse_published_runs(run_yaml("null", mla), "runs.yaml"),
                       "runs.yaml:21: unknown key 'r1.model.mla.v_dim'", ConfigError);
}

}
