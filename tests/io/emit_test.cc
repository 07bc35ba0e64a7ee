#include "modeler/io/emit.h"

#include <doctest/doctest.h>
#include <yaml-cpp/yaml.h>

#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "modeler/io/launcher_options.h"
#include "modeler/problems.h"
#include "tests/modeler/test_fixtures.h"

using namespace shardplan;

namespace {

Estimate sample(int tp, int pp, int vpp, int dp, int zero, Recompute rec, Dtype prec) {
  Estimate e;
  e.plan = test::plan_of(tp, pp, dp, 1, 1, 64, 4096);
  e.plan.vpp = vpp;
  e.plan.zero = zero;
  e.plan.sequence_parallel = tp > 1;
  e.plan.tp_comm_overlap = tp > 1;
  e.plan.recompute = rec;
  e.plan.precision = prec;
  e.time.compute = Seconds(1);
  e.tokens_per_s_per_gpu = 1000;
  return e;
}

std::vector<Estimate> samples() {
  return {sample(1, 1, 1, 16, 3, Recompute::none, Dtype::bf16), sample(2, 2, 2, 4, 1, Recompute::selective, Dtype::fp8),
          sample(4, 4, 1, 1, 0, Recompute::full, Dtype::fp16), sample(2, 1, 1, 8, 2, Recompute::full, Dtype::bf16)};
}

std::string emit(io::EmitFormat f, const Estimate& e) {
  static const System sys = test::synthetic_system(16);
  return io::emit_plan(f, io::EmitInput{e, sys, "tiny", "megatron-lm", 8});
}

/// Dotted names of every leaf of a JSON/YAML tree.
void leaves(const nlohmann::json& j, const std::string& prefix, std::vector<std::string>* out) {
  if (!j.is_object()) {
    out->push_back(prefix);
    return;
  }
  for (const auto& [k, v] : j.items()) leaves(v, prefix.empty() ? k : prefix + "." + k, out);
}
void leaves(const YAML::Node& n, const std::string& prefix, std::vector<std::string>* out) {
  if (!n.IsMap()) {
    out->push_back(prefix);
    return;
  }
  for (const auto& kv : n) leaves(kv.second, prefix.empty() ? kv.first.as<std::string>() : prefix + "." + kv.first.as<std::string>(), out);
}

/// A TOML syntax check for the subset the torchtitan emitter writes: comments, [table] headers, and
/// key = value lines with integers, booleans, basic strings and arrays of strings. Returns "table.key" names;
/// fails the test on any other line or a repeated key.
std::vector<std::string> toml_keys(const std::string& text) {
  static const std::regex table(R"(\[([A-Za-z0-9_]+)\])");
  static const std::regex pair(R"(([A-Za-z0-9_]+) = (-?[0-9]+|true|false|"[^"\\]*"|\[("[^"\\]*"(, "[^"\\]*")*)?\]))");
  std::vector<std::string> keys;
  std::string current;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    std::smatch m;
    if (line.empty() || line[0] == '#') continue;
    if (std::regex_match(line, m, table)) {
      current = m[1];
      continue;
    }
    INFO("TOML line: " << line);
    REQUIRE(std::regex_match(line, m, pair));
    REQUIRE(!current.empty());
    const std::string key = current + "." + m[1].str();
    CHECK(std::find(keys.begin(), keys.end(), key) == keys.end());
    keys.push_back(key);
  }
  return keys;
}

}  // namespace

TEST_CASE("emit json: a versioned plan with groups placed on the topology") {
  const nlohmann::json j = nlohmann::json::parse(emit(io::EmitFormat::json, sample(2, 2, 2, 4, 1, Recompute::selective, Dtype::bf16)));
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

TEST_CASE("emit megatron: every flag is a Megatron-LM argument") {
  for (const Estimate& e : samples()) {
    const std::string text = emit(io::EmitFormat::megatron, e);
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line)) {
      if (line.empty() || line[0] == '#') continue;
      const std::string flag = line.substr(0, line.find(' '));
      INFO(flag);
      CHECK(io::is_launcher_option("megatron", flag));
    }
  }
  const std::string t = emit(io::EmitFormat::megatron, sample(2, 2, 2, 4, 1, Recompute::selective, Dtype::fp8));
  CHECK(t.find("--num-layers-per-virtual-pipeline-stage 2\n") != std::string::npos);  // 8 layers / (2 x 2)
  CHECK(t.find("--fp8-format hybrid\n") != std::string::npos);
  CHECK(t.find("--recompute-granularity selective\n") != std::string::npos);
}

TEST_CASE("emit torchtitan: TOML of known keys") {
  for (const Estimate& e : samples())
    for (const std::string& key : toml_keys(emit(io::EmitFormat::torchtitan, e))) {
      INFO(key);
      CHECK(io::is_launcher_option("torchtitan", key));
    }
  const std::string t = emit(io::EmitFormat::torchtitan, sample(1, 1, 1, 16, 3, Recompute::none, Dtype::bf16));
  CHECK(t.find("data_parallel_shard_degree = 16\n") != std::string::npos);
  CHECK(t.find("mode = \"none\"\n") != std::string::npos);
}

TEST_CASE("emit deepspeed: JSON of known keys; batch = micro x accumulation x dp") {
  for (const Estimate& e : samples()) {
    const nlohmann::json j = nlohmann::json::parse(emit(io::EmitFormat::deepspeed, e));
    std::vector<std::string> keys;
    leaves(j, "", &keys);
    for (const std::string& k : keys) {
      INFO(k);
      CHECK(io::is_launcher_option("deepspeed", k));
    }
    CHECK(j["train_batch_size"].get<int>() ==
          j["train_micro_batch_size_per_gpu"].get<int>() * j["gradient_accumulation_steps"].get<int>() * e.plan.dp);
  }
}

TEST_CASE("emit nemo: YAML of known keys") {
  for (const Estimate& e : samples()) {
    const YAML::Node n = YAML::Load(emit(io::EmitFormat::nemo, e));
    std::vector<std::string> keys;
    leaves(n, "", &keys);
    for (const std::string& k : keys) {
      INFO(k);
      CHECK(io::is_launcher_option("nemo", k));
    }
    CHECK(n["model"]["tensor_model_parallel_size"].as<int>() == e.plan.tp);
    CHECK(n["trainer"]["num_nodes"].as<int>() == 2);
  }
}

TEST_CASE("emit: a mixture-of-experts plan carries its expert parallelism in every launcher format") {
  Estimate e = sample(2, 1, 1, 8, 1, Recompute::none, Dtype::bf16);
  e.plan.ep = 8;
  e.plan.etp = 1;
  e.plan.capacity_factor = 1.25;
  static const System sys = test::synthetic_system(16);
  auto moe_emit = [&](io::EmitFormat f) {
    return io::emit_plan(f, io::EmitInput{e, sys, "tiny-moe", "megatron-lm", 8, true});
  };
  const nlohmann::json j = nlohmann::json::parse(moe_emit(io::EmitFormat::json));
  CHECK(j["expert_rank_order"] == "etp-ep-edp-pp");
  CHECK(j["groups"]["ep"]["size"] == 8);
  CHECK(j["groups"]["ep"]["stride"] == 1);
  CHECK(j["groups"]["ep"]["within_node"] == true);
  const std::string m = moe_emit(io::EmitFormat::megatron);
  CHECK(m.find(" ep 8 zero 1;") != std::string::npos);  // the header names it too
  CHECK(m.find("--expert-model-parallel-size 8\n") != std::string::npos);
  CHECK(m.find("--expert-tensor-parallel-size 1\n") != std::string::npos);
  CHECK(m.find("--moe-expert-capacity-factor 1.25\n") != std::string::npos);
  std::istringstream lines(m);
  std::string line;
  while (std::getline(lines, line))
    if (!line.empty() && line[0] != '#') CHECK(io::is_launcher_option("megatron", line.substr(0, line.find(' '))));
  const std::string t = moe_emit(io::EmitFormat::torchtitan);
  CHECK(t.find("expert_parallel_degree = 8\n") != std::string::npos);
  for (const std::string& key : toml_keys(t)) CHECK(io::is_launcher_option("torchtitan", key));
  const YAML::Node n = YAML::Load(moe_emit(io::EmitFormat::nemo));
  CHECK(n["model"]["expert_model_parallel_size"].as<int>() == 8);
  std::vector<std::string> keys;
  leaves(n, "", &keys);
  for (const std::string& k : keys) CHECK(io::is_launcher_option("nemo", k));
  CHECK_THROWS_WITH_AS(moe_emit(io::EmitFormat::deepspeed),
                       doctest::Contains("DeepSpeed sets expert parallelism in the model code"), ConfigError);
  // A dense model's plan has none of it.
  CHECK(emit(io::EmitFormat::megatron, e).find("expert") == std::string::npos);
}

TEST_CASE("emit: block recompute as Megatron and NeMo spell it; torchtitan cannot") {
  Estimate e = sample(2, 2, 1, 4, 1, Recompute::full, Dtype::bf16);
  e.plan.recompute_layers = 2;
  const std::string m = emit(io::EmitFormat::megatron, e);
  CHECK(m.find("--recompute-method block\n--recompute-num-layers 2\n") != std::string::npos);
  const YAML::Node n = YAML::Load(emit(io::EmitFormat::nemo, e));
  CHECK(n["model"]["activations_checkpoint_method"].as<std::string>() == "block");
  CHECK(n["model"]["activations_checkpoint_num_layers"].as<int>() == 2);
  CHECK_THROWS_WITH_AS(emit(io::EmitFormat::torchtitan, e),
                       doctest::Contains("torchtitan checkpoints every k-th layer"), ConfigError);
}

TEST_CASE("emit: recompute modules as Megatron spells them; the other launchers cannot say them") {
  Estimate e = sample(2, 2, 1, 4, 1, Recompute::selective, Dtype::bf16);
  CHECK(emit(io::EmitFormat::megatron, e).find("--recompute-modules") == std::string::npos);  // the default
  CHECK_NOTHROW(emit(io::EmitFormat::nemo, e));
  e.plan.recompute_modules = kRecomputeCoreAttn | kRecomputeMlp;
  const std::string m = emit(io::EmitFormat::megatron, e);
  CHECK(m.find("--recompute-granularity selective\n--recompute-modules core_attn mlp\n") != std::string::npos);
  for (io::EmitFormat f : {io::EmitFormat::nemo, io::EmitFormat::torchtitan, io::EmitFormat::deepspeed})
    CHECK_THROWS_WITH_AS(emit(f, e), doctest::Contains("recomputes Megatron-Core modules (core_attn+mlp)"),
                         ConfigError);
  CHECK(nlohmann::json::parse(emit(io::EmitFormat::json, e))["plan"]["recompute_modules"] ==
        nlohmann::json::array({"core_attn", "mlp"}));
}

TEST_CASE("emit: plans no framework can launch (TSP, SDP) go to json only") {
  Estimate e = sample(1, 1, 1, 16, 1, Recompute::none, Dtype::bf16);
  e.plan.tsp = 4;
  CHECK_THROWS_WITH_AS(emit(io::EmitFormat::megatron, e),
                       doctest::Contains("folded tensor + sequence parallelism (tsp 4)"), ConfigError);
  const nlohmann::json tsp = nlohmann::json::parse(emit(io::EmitFormat::json, e));
  CHECK(tsp["plan"]["tsp"] == 4);
  CHECK(tsp["rank_order"] == "tp-tsp-cp-dp-pp");
  CHECK(tsp["groups"]["tsp"]["size"] == 4);
  CHECK(tsp["groups"]["dp"]["stride"] == 4);  // data parallelism outside the tsp group
  e.plan.tsp = 1;
  e.plan.sdp_keep = 0.5;
  CHECK_THROWS_WITH_AS(emit(io::EmitFormat::torchtitan, e),
                       doctest::Contains("subnetwork data parallelism (sdp keep 0.5)"), ConfigError);
}

TEST_CASE("parse_emit_format") {
  CHECK(io::parse_emit_format("nemo") == io::EmitFormat::nemo);
  CHECK_THROWS_WITH_AS(io::parse_emit_format("megatorn"),
                       "--emit: unknown format 'megatorn' (json, megatron, torchtitan, deepspeed, nemo), did you mean "
                       "'megatron'?",
                       ConfigError);
}

TEST_CASE("launcher options each name a source") {
  for (const io::LauncherOption& o : io::launcher_options()) CHECK(std::string(o.source).size() > 10);
}
