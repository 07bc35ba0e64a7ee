#include <doctest/doctest.h>
#include <yaml-cpp/yaml.h>

#include <nlohmann/json.hpp>

#include "tests/io/emit_test_util.h"

using namespace shardplan;
using namespace shardplan::test::emit_util;

TEST_CASE("emit deepspeed: a Megatron-DeepSpeed script with tp, pp, recompute and a DeepSpeed config that adds up") {
  for (const Estimate& e : samples()) {
    CAPTURE(e.plan.tp);
    if (e.plan.precision == Dtype::fp8 || e.plan.vpp > 1) {
      CHECK_THROWS_AS(emit(io::EmitFormat::deepspeed, e), ConfigError);
      continue;
    }
    const std::string text = emit(io::EmitFormat::deepspeed, e);
    for (const std::string& flag : script_flags(text)) {
      INFO(flag);
      CHECK(io::is_launcher_option("megatron-deepspeed", flag));
    }
    CHECK(flag_value(text, "--tensor-model-parallel-size") == std::to_string(e.plan.tp));
    CHECK(flag_value(text, "--pipeline-model-parallel-size") == std::to_string(e.plan.pp));
    if (e.plan.recompute == Recompute::full) CHECK(flag_value(text, "--recompute-granularity") == "full");
    const size_t a = text.find("<<'EOF'\n") + 8, b = text.find("\nEOF\n");
    const nlohmann::json j = nlohmann::json::parse(text.substr(a, b - a));
    std::vector<std::string> keys;
    leaves(j, "", &keys);
    for (const std::string& k : keys) {
      INFO(k);
      CHECK(io::is_launcher_option("deepspeed", k));
    }
    CHECK(j["train_batch_size"].get<int>() ==
          j["train_micro_batch_size_per_gpu"].get<int>() * j["gradient_accumulation_steps"].get<int>() * e.plan.dp);
    CHECK(j["zero_optimization"]["stage"] == e.plan.zero);
  }
  CHECK_THROWS_WITH_AS(emit(io::EmitFormat::deepspeed, sample(2, 2, 1, 4, 2, Recompute::none, Dtype::bf16)),
                       doctest::Contains("incompatible with DeepSpeed's pipeline engine"), ConfigError);
  CHECK_THROWS_WITH_AS(emit(io::EmitFormat::deepspeed, sample(4, 4, 1, 1, 1, Recompute::none, Dtype::fp8)),
                       doctest::Contains("Transformer Engine"), ConfigError);
}
