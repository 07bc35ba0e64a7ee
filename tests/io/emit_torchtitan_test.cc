#include <doctest/doctest.h>
#include <yaml-cpp/yaml.h>

#include <nlohmann/json.hpp>

#include "tests/io/emit_test_util.h"

using namespace shardplan;
using namespace shardplan::test::emit_util;

TEST_CASE("emit torchtitan-toml: v0.2.2 keys; FSDP for multi-dim plans; op-level selective AC; compile for async TP") {
  for (const Estimate& e : samples()) {
    CAPTURE(e.plan.tp);
    if (e.plan.zero == 1 || e.plan.precision == Dtype::fp16) {  // no optimizer-only sharding, no fp16 (below)
      CHECK_THROWS_AS(emit(io::EmitFormat::torchtitan_toml, e), ConfigError);
      continue;
    }
    for (const std::string& key : toml_keys(emit(io::EmitFormat::torchtitan_toml, e))) {
      INFO(key);
      CHECK(io::is_launcher_option("torchtitan-toml", key));
    }
  }
  const std::string t = emit(io::EmitFormat::torchtitan_toml, sample(1, 1, 1, 16, 3, Recompute::none, Dtype::bf16));
  CHECK(t.find("name = \"llama3\"\nflavor = \"8B\"") != std::string::npos);
  CHECK(t.find("data_parallel_shard_degree = 16\n") != std::string::npos);
  CHECK(t.find("mode = \"none\"\n") != std::string::npos);
  // DDP with tensor parallelism: torchtitan refuses it.
  CHECK_THROWS_WITH_AS(emit(io::EmitFormat::torchtitan_toml, sample(8, 1, 1, 2, 0, Recompute::none, Dtype::bf16)),
                       doctest::Contains("DDP has not supported > 1D parallelism"), ConfigError);
  Estimate sel = sample(2, 2, 1, 4, 2, Recompute::selective, Dtype::bf16);
  sel.plan.tp_comm_overlap = true;
  const std::string s = emit(io::EmitFormat::torchtitan_toml, sel);
  CHECK(s.find("mode = \"selective\"\nselective_ac_option = \"op\"\n") != std::string::npos);
  CHECK(s.find("enable_async_tensor_parallel = true\n") != std::string::npos);
  CHECK(s.find("[compile]\nenable = true\n") != std::string::npos);
  // Every stage's modules explicitly: the embedding in the first, norm and output in the last.
  CHECK(s.find("module_fqns_per_model_part = [[\"tok_embeddings\", \"layers.0\"") != std::string::npos);
  CHECK(s.find("\"layers.31\", \"norm\", \"output\"]]") != std::string::npos);
  // A model torchtitan has no flavor for is refused by name.
  CHECK_THROWS_WITH_AS(
      emit(io::EmitFormat::torchtitan_toml, sample(1, 1, 1, 16, 3, Recompute::none, Dtype::bf16), test::tiny_model()),
      doctest::Contains("torchtitan defines no model flavor matching tiny"), ConfigError);
}

TEST_CASE("emit torchtitan: main's Python config derived from the flavor's shipped config") {
  Estimate e = sample(2, 2, 2, 4, 3, Recompute::full, Dtype::bf16);
  e.plan.global_batch = 64;
  const std::string t = emit(io::EmitFormat::torchtitan, e);
  CHECK(t.find("# targets torchtitan main b5bcd76") != std::string::npos);
  CHECK(t.find("from torchtitan.models.llama3.config_registry import llama3_8b\n") != std::string::npos);
  CHECK(t.find("def shardplan_plan():\n    config = llama3_8b()\n") != std::string::npos);
  CHECK(t.find("    par.pipeline_parallel_schedule = \"Interleaved1F1B\"\n") != std::string::npos);
  CHECK(t.find("    par.num_pp_microbatches = 16\n") != std::string::npos);  // 64 / (1 x 4)
  CHECK(t.find("    config.activation_checkpoint = FullAC.Config()\n") != std::string::npos);
  CHECK(t.find("\"norm\", \"lm_head\"]") != std::string::npos);
  // Every attribute it sets is one of main's config fields.
  std::istringstream in(t);
  std::string line;
  int checked = 0;
  while (std::getline(in, line)) {
    std::smatch mm;
    static const std::regex attr(R"(^    (par|config)\.([a-z_.]+) = )");
    if (!std::regex_search(line, mm, attr)) continue;
    const std::string key = (mm[1] == "par" ? "parallelism." : "") + mm[2].str();
    INFO(key);
    CHECK(io::is_launcher_option("torchtitan", key));
    ++checked;
  }
  CHECK(checked > 10);
}

TEST_CASE("emit torchtitan, both forms: an fp16 plan is refused, not written as bfloat16") {
  // torchtitan's training.mixed_precision_param is Literal["bfloat16", "float32"] (v0.2.2 config/job_config.py,
  // main config/configs.py): it has no fp16 mixed precision.
  const Estimate fp16 = sample(2, 1, 1, 8, 3, Recompute::none, Dtype::fp16);
  for (const io::EmitFormat f : {io::EmitFormat::torchtitan_toml, io::EmitFormat::torchtitan}) {
    CAPTURE(io::to_string(f));
    CHECK_THROWS_WITH_AS(
        emit(f, fp16),
        (std::string("--emit ") + io::to_string(f) +
         ": torchtitan's training.mixed_precision_param takes bfloat16 or float32, not float16: "
         "predict with --precision bf16, or keep fp16 with --framework megatron-lm and --emit megatron")
            .c_str(),
        ConfigError);
    // The same plan in bf16 is written, with bfloat16 parameters.
    Estimate bf16 = fp16;
    bf16.plan.precision = Dtype::bf16;
    CHECK(emit(f, bf16).find("mixed_precision_param = \"bfloat16\"") != std::string::npos);
  }
}
