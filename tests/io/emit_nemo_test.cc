#include <doctest/doctest.h>
#include <yaml-cpp/yaml.h>

#include <nlohmann/json.hpp>

#include "tests/io/emit_test_util.h"

using namespace shardplan;
using namespace shardplan::test::emit_util;

TEST_CASE("emit nemo: a Megatron-Bridge override YAML of known keys") {
  for (const Estimate& e : samples()) {
    if (e.plan.zero == 2) {
      CHECK_THROWS_AS(emit(io::EmitFormat::nemo, e), ConfigError);
      continue;
    }
    const YAML::Node n = YAML::Load(emit(io::EmitFormat::nemo, e));
    std::vector<std::string> keys;
    leaves(n, "", &keys);
    for (const std::string& k : keys) {
      INFO(k);
      CHECK(io::is_launcher_option("nemo", k));
    }
    CHECK(n["model"]["tensor_model_parallel_size"].as<int>() == e.plan.tp);
    CHECK(n["train"]["global_batch_size"].as<int>() == e.plan.global_batch);
    CHECK(n["ddp"]["overlap_param_gather"].as<bool>() <= n["ddp"]["use_distributed_optimizer"].as<bool>());
  }
}

TEST_CASE("emit nemo: per-head QK-norm sets model.qk_layernorm; a full-width one is refused") {
  const Estimate e = sample(2, 1, 1, 8, 1, Recompute::none, Dtype::bf16);
  CHECK_FALSE(YAML::Load(emit(io::EmitFormat::nemo, e))["model"]["qk_layernorm"].IsDefined());
  ModelDesc m = test::llama3_8b();
  m.qk_norm = QkNorm::per_head;
  CHECK(YAML::Load(emit(io::EmitFormat::nemo, e, m))["model"]["qk_layernorm"].as<bool>());
  m.qk_norm = QkNorm::full;
  CHECK_THROWS_WITH_AS(emit(io::EmitFormat::nemo, e, m), doctest::Contains("full width"), ConfigError);
}
