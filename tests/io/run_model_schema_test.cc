#include "modeler/io/run_model_schema.h"

#include <doctest/doctest.h>

#include "modeler/problems.h"

using namespace shardplan;

namespace {
ModelDesc read(const std::string& text) {
  const YAML::Node n = io::parse_yaml(text, "m.yaml");
  io::MapReader r(n, "m.yaml", "row");
  ModelDesc m;
  io::read_run_model_shape(r, &m);
  if (auto e = r.opt_map("moe")) m.moe = io::read_run_model_moe(*e, m);
  if (auto a = r.opt_map("mla")) m.mla = io::read_run_model_mla(*a);
  io::check_run_model_heads(r, m);
  r.finish();
  return m;
}
const char* kShape = "{layers: 4, hidden: 64, heads: 8, vocab: 100, gated_mlp: true, tied_embeddings: false";
}  // namespace

TEST_CASE("the shared run-model reader fills the shape with its defaults") {
  const ModelDesc m = read(std::string(kShape) + "}");
  CHECK(m.kv_heads == 8);
  CHECK(m.head_dim == 8);
  const ModelDesc moe = read(std::string(kShape) + ", moe: {experts: 8, top_k: 2, expert_ffn_hidden: 32}}");
  REQUIRE(moe.moe);
  CHECK(moe.moe->dense_layers == 0);
  const ModelDesc mla = read(std::string(kShape) +
                             ", mla: {kv_lora_rank: 16, qk_nope_head_dim: 8, "
                             "qk_rope_head_dim: 4, v_head_dim: 8}}");
  REQUIRE(mla.mla);
  CHECK(mla.mla->q_lora_rank == 0);
}

TEST_CASE("the shared run-model reader names the key of each inconsistency") {
  CHECK_THROWS_WITH_AS(read(std::string(kShape) + ", kv_heads: 3}"), doctest::Contains("row.kv_heads"), ConfigError);
  CHECK_THROWS_WITH_AS(read(std::string(kShape) + ", moe: {experts: 2, top_k: 4, expert_ffn_hidden: 32}}"),
                       doctest::Contains("top_k (4) exceeds experts (2)"), ConfigError);
  CHECK_THROWS_WITH_AS(
      read(std::string(kShape) + ", moe: {experts: 8, top_k: 2, expert_ffn_hidden: 32, dense_layers: 9}}"),
      doctest::Contains("dense_layers (9) exceeds layers (4)"), ConfigError);
  CHECK_THROWS_WITH_AS(read("{layers: 4, hidden: 4, heads: 8, vocab: 100, gated_mlp: true, tied_embeddings: false}"),
                       doctest::Contains("give head_dim"), ConfigError);
  CHECK_THROWS_WITH_AS(read(std::string(kShape) + ", mla: {kv_lora_rank: 16}}"), doctest::Contains("qk_nope_head_dim"),
                       ConfigError);
}

TEST_CASE("model.moe.router_dtype: fp32 sets the fp32 router, input (the default) does not") {
  const std::string moe = std::string(kShape) + ", moe: {experts: 8, top_k: 2, expert_ffn_hidden: 32";
  CHECK_FALSE(read(moe + "}}").moe->router_fp32);
  CHECK(read(moe + ", router_dtype: fp32}}").moe->router_fp32);
  CHECK_FALSE(read(moe + ", router_dtype: input}}").moe->router_fp32);
  CHECK_THROWS_WITH_AS(read(moe + ", router_dtype: bf16}}"), doctest::Contains("row.moe.router_dtype"), ConfigError);
}

TEST_CASE("model.qk_norm: none unless stated; per_head and full; bad values and MLA name the key") {
  CHECK(read(std::string(kShape) + "}").qk_norm == QkNorm::none);
  CHECK(read(std::string(kShape) + ", qk_norm: per_head}").qk_norm == QkNorm::per_head);
  CHECK(read(std::string(kShape) + ", qk_norm: full}").qk_norm == QkNorm::full);
  CHECK_THROWS_WITH_AS(read(std::string(kShape) + ", qk_norm: true}"), doctest::Contains("row.qk_norm"), ConfigError);
  CHECK_THROWS_WITH_AS(read(std::string(kShape) + ", qk_norm: per_head, mla: {kv_lora_rank: 16, qk_nope_head_dim: 8, "
                                                  "qk_rope_head_dim: 4, v_head_dim: 8}}"),
                       doctest::Contains("row.qk_norm"), ConfigError);
}
