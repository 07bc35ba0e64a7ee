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

TEST_CASE("issue 12: plan limits, a head dimension of 0, non-scalar keys and out-of-range numbers are named") {
  auto err = [](const std::string& text) {
    try {
      parse_published_runs(text, "runs.yaml");
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  const std::string run = run_yaml("null", "null");
  auto replaced = [&](const std::string& from, const std::string& to) {
    std::string t = run;
    t.replace(t.find(from), from.size(), to);
    return t;
  };
  CHECK(err(replaced("    pp: 1\n", "    pp: 65536\n    vpp: 65536\n")) ==
        "runs.yaml:22: r1.plan: pp x vpp (65536 x 65536) must be at most 2^24");
  std::string no_head_dim = replaced("    head_dim: 16\n", "");
  no_head_dim.replace(no_head_dim.find("hidden: 64"), 10, "hidden: 8");
  no_head_dim.replace(no_head_dim.find("heads: 4\n    kv_heads: 4"), 24, "heads: 32\n    kv_heads: 32");
  CHECK(err(no_head_dim) == "runs.yaml:8: r1.model.heads: hidden / heads (8 / 32) leaves no head dimension; give "
                            "head_dim");
  CHECK(err(replaced("    gpus: 8\n", "    gpus: 8\n    nic_gbps_per_gpu: 1e-308\n")) ==
        "runs.yaml:20: r1.system.nic_gbps_per_gpu: expected a number in [0.1, 1e+06], got 1e-308");
  CHECK(err(replaced("    gpus: 8\n", "    gpus: 8\n    power_limit_w: 1e300\n")) ==
        "runs.yaml:20: r1.system.power_limit_w: expected a number in [1, 100000], got 1e300");
  CHECK(err(replaced("  precision: bf16\n", "  precision: bf16\n  [a, b]: 1\n")) ==
        "runs.yaml:21: r1: expected a plain key, got a list");
}
}
