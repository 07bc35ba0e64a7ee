#include "modeler/io/emit.h"

#include <doctest/doctest.h>
#include <yaml-cpp/yaml.h>

#include <nlohmann/json.hpp>

#include "tests/io/emit_test_util.h"

using namespace shardplan;
using namespace shardplan::test::emit_util;

TEST_CASE("emit json: a versioned plan with groups placed on the topology") {
  const nlohmann::json j =
      nlohmann::json::parse(emit(io::EmitFormat::json, sample(2, 2, 2, 4, 1, Recompute::selective, Dtype::bf16)));
  CHECK(j["schema_version"] == 1);
  CHECK(j["kind"] == "shardplan-plan");
  CHECK(j["plan"]["tp"] == 2);
  CHECK(j["rank_order"] == "tp-cp-dp-pp");
  CHECK(j["system"]["nodes"] == 2);
  // tp 2 at stride 1 and dp 4 at stride 2 stay inside an 8-GPU node; pp 2 at stride 8 crosses nodes.
  CHECK(j["groups"]["tp"]["within_node"] == true);
  CHECK(j["groups"]["dp"]["within_node"] == true);
  CHECK(j["groups"]["pp"]["within_node"] == false);
  CHECK(j["groups"]["pp"]["tier"] == "network");
}

TEST_CASE("emit: fp8 recipes, mxfp8 and nvfp4 in each framework's own keys") {
  System blackwell = test::synthetic_system(16);
  blackwell.gpu.peak[static_cast<int>(Dtype::fp4)] = blackwell.gpu.peak[static_cast<int>(Dtype::bf16)] * 4.0;
  Estimate mx = sample(1, 1, 1, 16, 3, Recompute::none, Dtype::fp8);
  mx.plan.fp8_recipe = Fp8Recipe::mxfp8;
  const std::string m = emit(io::EmitFormat::megatron, mx, test::llama3_8b(), blackwell);
  CHECK(flag_value(m, "--fp8-format") == "e4m3");
  CHECK(flag_value(m, "--fp8-recipe") == "mxfp8");
  const std::string toml = emit(io::EmitFormat::torchtitan_toml, mx, test::llama3_8b(), blackwell);
  CHECK(toml.find("converters = [\"quantize.linear.mx\"]") != std::string::npos);
  CHECK(toml.find("float8") == std::string::npos);  // mxfp8 is not emitted as fp8
  CHECK(emit(io::EmitFormat::torchtitan, mx, test::llama3_8b(), blackwell).find("MXFP8LinearConverter.Config(") !=
        std::string::npos);
  CHECK(YAML::Load(emit(io::EmitFormat::nemo, mx, test::llama3_8b(), blackwell))["mixed_precision"]["fp8_recipe"]
            .as<std::string>() == "mxfp8");
  // On a GPU without MX scaling no emitter writes it (framework_rules.cc mx_needs_blackwell).
  CHECK_THROWS_WITH_AS(emit(io::EmitFormat::megatron, mx), doctest::Contains("Blackwell"), ConfigError);

  Estimate fp4 = sample(1, 1, 1, 16, 3, Recompute::none, Dtype::fp4);
  const std::string m4 = emit(io::EmitFormat::megatron, fp4, test::llama3_8b(), blackwell);
  CHECK(flag_value(m4, "--fp4-format") == "e2m1");
  CHECK(flag_value(m4, "--fp4-recipe") == "nvfp4");
  CHECK(emit(io::EmitFormat::torchtitan, fp4, test::llama3_8b(), blackwell).find("NVFP4LinearConverter.Config(") !=
        std::string::npos);
  CHECK_THROWS_WITH_AS(emit(io::EmitFormat::torchtitan_toml, fp4, test::llama3_8b(), blackwell),
                       doctest::Contains("v0.2.2 has no fp4 converter"), ConfigError);

  Estimate block = sample(1, 1, 1, 16, 3, Recompute::none, Dtype::fp8);
  block.plan.fp8_recipe = Fp8Recipe::blockwise;
  CHECK(flag_value(emit(io::EmitFormat::megatron, block), "--fp8-recipe") == "blockwise");
  CHECK_THROWS_WITH_AS(emit(io::EmitFormat::torchtitan_toml, block), doctest::Contains("not blockwise"), ConfigError);
  // torchtitan's own default recipe is tensorwise.
  const std::string tw = emit(io::EmitFormat::torchtitan_toml, sample(1, 1, 1, 16, 3, Recompute::none, Dtype::fp8));
  CHECK(tw.find("[quantize.linear.float8]\nrecipe_name = \"tensorwise\"") != std::string::npos);
}

TEST_CASE("emit: a launch unit holds only its own framework profile's plan") {
  const Estimate e = sample(1, 1, 1, 16, 3, Recompute::none, Dtype::bf16);
  const ModelDesc m = test::llama3_8b();
  const System sys = test::synthetic_system(16);
  CHECK_THROWS_WITH_AS(
      io::emit_plan(io::EmitFormat::torchtitan, io::EmitInput{e, sys, "m", "megatron-lm", 32, false, &m}),
      doctest::Contains("writes plans of the torchtitan profile, and this plan was predicted with "
                        "megatron-lm"),
      ConfigError);
  CHECK(io::default_emit_format(*find_framework("torchtitan")) == io::EmitFormat::torchtitan);
  CHECK(io::default_emit_format(*find_framework("megatron-deepspeed")) == io::EmitFormat::deepspeed);
  CHECK(io::default_emit_format(*find_framework("llm-foundry")) == io::EmitFormat::json);
}

TEST_CASE("emit: a mixture-of-experts plan carries its expert parallelism") {
  ModelDesc moe = test::tiny_moe();
  Estimate e = sample(2, 1, 1, 8, 1, Recompute::none, Dtype::bf16);
  e.plan.ep = 8;
  e.plan.etp = 1;
  e.plan.capacity_factor = 1.25;
  const nlohmann::json j = nlohmann::json::parse(emit(io::EmitFormat::json, e, moe));
  CHECK(j["expert_rank_order"] == "etp-ep-edp-pp");
  CHECK(j["groups"]["ep"]["size"] == 8);
  const std::string m = emit(io::EmitFormat::megatron, e, moe);
  CHECK(m.find(" ep 8 etp 1 zero 1") != std::string::npos);  // the header names it too
  CHECK(flag_value(m, "--expert-model-parallel-size") == "8");
  CHECK(flag_value(m, "--expert-tensor-parallel-size") == "1");
  CHECK(flag_value(m, "--moe-expert-capacity-factor") == "1.25");
  CHECK(flag_value(m, "--num-experts") == "8");
  CHECK(flag_value(m, "--moe-layer-freq") == "([0]*1+[1]*1)");
  for (const std::string& flag : script_flags(m)) CHECK(io::is_launcher_option("megatron", flag));
  CHECK(YAML::Load(emit(io::EmitFormat::nemo, e, moe))["model"]["expert_model_parallel_size"].as<int>() == 8);
  CHECK_THROWS_WITH_AS(emit(io::EmitFormat::deepspeed, e, moe),
                       doctest::Contains("DeepSpeed sets expert parallelism in the model code"), ConfigError);
  // Expert with tensor parallelism but no sequence parallelism: Megatron-Core requires it.
  e.plan.sequence_parallel = false;
  CHECK_THROWS_WITH_AS(emit(io::EmitFormat::megatron, e, moe), doctest::Contains("must run with sequence parallelism"),
                       ConfigError);
  // A dense model's plan has none of it.
  CHECK(flag_value(emit(io::EmitFormat::megatron, sample(2, 1, 1, 8, 1, Recompute::none, Dtype::bf16)),
                   "--expert-model-parallel-size") == "<absent>");
}

TEST_CASE("emit: block recompute and recompute modules where the format has them") {
  Estimate e = sample(2, 2, 1, 4, 1, Recompute::full, Dtype::bf16);
  e.plan.recompute_layers = 2;
  const std::string m = emit(io::EmitFormat::megatron, e);
  CHECK(flag_value(m, "--recompute-method") == "block");
  CHECK(flag_value(m, "--recompute-num-layers") == "2");
  const YAML::Node n = YAML::Load(emit(io::EmitFormat::nemo, e));
  CHECK(n["model"]["recompute_method"].as<std::string>() == "block");
  CHECK(n["model"]["recompute_num_layers"].as<int>() == 2);
  Estimate s = sample(2, 2, 1, 4, 2, Recompute::full, Dtype::bf16);
  s.plan.recompute_layers = 2;
  CHECK_THROWS_WITH_AS(emit(io::EmitFormat::torchtitan_toml, s),
                       doctest::Contains("torchtitan checkpoints every k-th layer"), ConfigError);
  Estimate sel = sample(2, 2, 1, 4, 1, Recompute::selective, Dtype::bf16);
  sel.plan.recompute_modules = kRecomputeCoreAttn | kRecomputeMlp;
  CHECK(flag_value(emit(io::EmitFormat::megatron, sel), "--recompute-modules") == "core_attn mlp");
  CHECK(YAML::Load(emit(io::EmitFormat::nemo, sel))["model"]["recompute_modules"].size() == 2);
  CHECK_THROWS_WITH_AS(emit(io::EmitFormat::deepspeed, sel), doctest::Contains("no --recompute-modules"), ConfigError);
}

TEST_CASE("emit: plans no framework can launch (TSP, SDP) go to json only") {
  Estimate e = sample(1, 1, 1, 16, 1, Recompute::none, Dtype::bf16);
  e.plan.tsp = 4;
  CHECK_THROWS_WITH_AS(emit(io::EmitFormat::megatron, e),
                       doctest::Contains("folded tensor + sequence parallelism (tsp 4)"), ConfigError);
  const nlohmann::json tsp = nlohmann::json::parse(emit(io::EmitFormat::json, e));
  CHECK(tsp["plan"]["tsp"] == 4);
  CHECK(tsp["rank_order"] == "tp-tsp-cp-dp-pp");
  e.plan.tsp = 1;
  e.plan.sdp_keep = 0.5;
  CHECK_THROWS_WITH_AS(emit(io::EmitFormat::torchtitan, e),
                       doctest::Contains("subnetwork data parallelism (sdp keep 0.5)"), ConfigError);
}

TEST_CASE("emit: each format declares the context-parallel kinds it writes, and refuses the others") {
  CHECK(io::emit_cp_kinds(io::EmitFormat::torchtitan) == std::vector<CpKind>{CpKind::allgather});
  CHECK(io::emit_cp_kinds(io::EmitFormat::torchtitan_toml) == std::vector<CpKind>{CpKind::ring, CpKind::allgather});
  CHECK(io::emit_cp_kinds(io::EmitFormat::deepspeed).empty());
  CHECK_FALSE(io::emit_writes_cp_kind(io::EmitFormat::torchtitan, CpKind::ring));
  CHECK(io::emit_writes_cp_kind(io::EmitFormat::megatron, CpKind::allgather));
  for (const io::EmitFormat f : {io::EmitFormat::json, io::EmitFormat::megatron, io::EmitFormat::nemo,
                                 io::EmitFormat::deepspeed, io::EmitFormat::torchtitan,
                                 io::EmitFormat::torchtitan_toml}) {
    for (const CpKind k : {CpKind::ring, CpKind::allgather}) {
      CAPTURE(io::to_string(f));
      CAPTURE(to_string(k));
      // cp 2 x dp 8; torchtitan shards with FSDP under CP (framework_rules.cc torchtitan_cp_shards).
      Estimate e = sample(1, 1, 1, 8, std::string(profile_of(f)) == "torchtitan" ? 3 : 1, Recompute::none,
                          Dtype::bf16);
      e.plan.cp = 2;
      e.plan.cp_kind = k;
      if (io::emit_writes_cp_kind(f, k))
        CHECK_NOTHROW(emit(f, e));
      else
        CHECK_THROWS_AS(emit(f, e), ConfigError);
    }
  }
}

TEST_CASE("parse_emit_format") {
  CHECK(io::parse_emit_format("nemo") == io::EmitFormat::nemo);
  CHECK(io::parse_emit_format("torchtitan-toml") == io::EmitFormat::torchtitan_toml);
  CHECK_THROWS_WITH_AS(io::parse_emit_format("megatorn"),
                       "--emit: unknown format 'megatorn' (json, megatron, torchtitan, torchtitan-toml, deepspeed, "
                       "nemo), did you mean 'megatron'?",
                       ConfigError);
}

TEST_CASE("emit: user strings in the header cannot leave its comment lines") {
  // A model path with a newline (issue 12) and a GPU name with an escape character, both from the user's files.
  ModelDesc m = test::llama3_8b();
  m.name = "/tmp/x\nrm -rf ~\n/llama.yaml";
  System sys = test::synthetic_system(16);
  sys.gpu.name = "h100\x1b[2J\r";
  for (const io::EmitFormat f : {io::EmitFormat::megatron, io::EmitFormat::deepspeed, io::EmitFormat::torchtitan,
                                 io::EmitFormat::torchtitan_toml, io::EmitFormat::nemo}) {
    CAPTURE(io::to_string(f));
    const std::string text = emit(f, sample(1, 1, 1, 16, 3, Recompute::none, Dtype::bf16), m, sys);
    CHECK(text.find("plan for /tmp/x\\nrm -rf ~\\n/llama.yaml on 16 x h100\\x1b[2J\\r (framework") !=
          std::string::npos);
    CHECK(text.find("\nrm -rf") == std::string::npos);
    CHECK(text.find('\x1b') == std::string::npos);
    CHECK(text.find('\r') == std::string::npos);
  }
}
