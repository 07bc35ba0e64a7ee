#include "modeler/io/emit.h"

#include <doctest/doctest.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
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
  e.plan.tp_comm_overlap = false;
  e.plan.recompute = rec;
  e.plan.precision = prec;
  e.time.compute = Seconds(1);
  e.tokens_per_s_per_gpu = 1000;
  return e;
}

std::vector<Estimate> samples() {
  return {sample(1, 1, 1, 16, 3, Recompute::none, Dtype::bf16), sample(2, 4, 2, 2, 1, Recompute::selective, Dtype::fp8),
          sample(4, 4, 1, 1, 0, Recompute::full, Dtype::fp16), sample(2, 1, 1, 8, 2, Recompute::full, Dtype::bf16)};
}

/// A Llama-3-8B-shaped model (torchtitan's llama3 "8B" flavor: 32 layers, hidden 4096).
ModelDesc llama8b() {
  ModelDesc m = test::tiny_gqa_gated();
  m.name = "llama8b";
  m.layers = 32;
  m.hidden = 4096;
  m.ffn_hidden = 14336;
  m.heads = 32;
  m.kv_heads = 8;
  m.head_dim = 128;
  m.vocab = 128256;
  return m;
}

const char* profile_of(io::EmitFormat f) {
  const char* p = io::emit_profile(f);
  return p ? p : "megatron-lm";
}

std::string emit(io::EmitFormat f, const Estimate& e, const ModelDesc& m = llama8b(),
                 System sys = test::synthetic_system(16)) {
  return io::emit_plan(f, io::EmitInput{e, sys, m.name, profile_of(f), m.layers, m.moe.has_value(), &m});
}

/// The flags of a launch script's argument arrays (lines "    --flag ..." between NAME=( and )).
std::vector<std::string> script_flags(const std::string& text) {
  std::vector<std::string> flags;
  std::istringstream in(text);
  std::string line;
  bool inside = false;
  while (std::getline(in, line)) {
    if (line.size() > 2 && line.back() == '(' && line[line.size() - 2] == '=')
      inside = line != "LAUNCHER=(";
    else if (line == ")")
      inside = false;
    else if (inside && line.rfind("    --", 0) == 0)
      flags.push_back(line.substr(4, line.find(' ', 4) - 4));
  }
  return flags;
}

/// The value of `flag` in a script ("--tp \"2\"" -> "2"), "" for a bare flag, "<absent>" when missing.
std::string flag_value(const std::string& text, const std::string& flag) {
  const std::string key = "    " + flag;
  size_t at = 0;
  while ((at = text.find(key, at)) != std::string::npos) {
    const size_t end = text.find('\n', at);
    const std::string rest = text.substr(at + key.size(), end - at - key.size());
    if (rest.empty()) return "";
    if (rest[0] == ' ') {
      std::string v = rest.substr(1);
      v.erase(std::remove(v.begin(), v.end(), '"'), v.end());
      return v;
    }
    at = end;
  }
  return "<absent>";
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
  for (const auto& kv : n)
    leaves(kv.second, prefix.empty() ? kv.first.as<std::string>() : prefix + "." + kv.first.as<std::string>(), out);
}

/// A TOML syntax check for the subset the torchtitan emitter writes: comments, [table] headers, and
/// key = value lines with integers, booleans, basic strings and arrays of strings. Returns "table.key" names;
/// fails the test on any other line or a repeated key.
std::vector<std::string> toml_keys(const std::string& text) {
  static const std::regex table(R"(\[([A-Za-z0-9_.]+)\])");
  static const std::regex pair(R"(([A-Za-z0-9_]+) = (-?[0-9]+|true|false|"[^"\\]*"|\[("[^"\\]*"(, "[^"\\]*")*)?\]|)"
                               R"(\[\[("[^"\\]*"(, "[^"\\]*")*)?\](, \[("[^"\\]*"(, "[^"\\]*")*)?\])*\]))");
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

TEST_CASE("emit megatron: a torchrun script with the architecture and every plan flag a Megatron-LM argument") {
  for (const Estimate& e : samples()) {
    if (e.plan.zero == 2) {
      CHECK_THROWS_WITH_AS(emit(io::EmitFormat::megatron, e), doctest::Contains("Megatron-LM has no ZeRO-2"),
                           ConfigError);
      continue;
    }
    const std::string text = emit(io::EmitFormat::megatron, e);
    CHECK(text.rfind("#!/usr/bin/env bash\n", 0) == 0);
    CHECK(text.find("# targets Megatron-LM main d98e8a6") != std::string::npos);
    CHECK(text.find("NNODES=2\nGPUS_PER_NODE=8\n") != std::string::npos);
    CHECK(text.find("torchrun --nnodes \"$NNODES\" --nproc-per-node \"$GPUS_PER_NODE\"") != std::string::npos);
    for (const std::string& flag : script_flags(text)) {
      INFO(flag);
      CHECK(io::is_launcher_option("megatron", flag));
    }
    CHECK(flag_value(text, "--num-layers") == "32");
    CHECK(flag_value(text, "--num-query-groups") == "8");
    CHECK(flag_value(text, "--swiglu") == "");
    CHECK(flag_value(text, "--normalization") == "RMSNorm");
    CHECK(flag_value(text, "--tensor-model-parallel-size") == std::to_string(e.plan.tp));
    // --overlap-param-gather only with the distributed optimizer (arguments.py validate_args)
    if (flag_value(text, "--overlap-param-gather") == "") CHECK(flag_value(text, "--use-distributed-optimizer") == "");
  }
  const std::string t = emit(io::EmitFormat::megatron, sample(2, 4, 2, 2, 1, Recompute::selective, Dtype::fp8));
  CHECK(flag_value(t, "--num-layers-per-virtual-pipeline-stage") == "4");  // 32 layers / (4 x 2)
  CHECK(flag_value(t, "--fp8-format") == "hybrid");
  CHECK(flag_value(t, "--fp8-recipe") == "delayed");  // Megatron-Core's default recipe
  CHECK(flag_value(t, "--recompute-granularity") == "selective");
  CHECK(t.find("export CUDA_DEVICE_MAX_CONNECTIONS=1\n") != std::string::npos);
}

TEST_CASE("emit megatron: an uneven pipeline is written as a layout no stage of which exceeds the prediction's") {
  ModelDesc m = llama8b();
  m.layers = 126;  // Llama 3.1 405B's count, on pp 8 x vpp 8 = 64 stages
  Estimate e = sample(8, 8, 8, 1, 1, Recompute::none, Dtype::bf16);
  e.plan.uneven_pipeline = true;
  e.plan.global_batch = 64;
  System sys = test::synthetic_system(64);
  const std::string t = emit(io::EmitFormat::megatron, e, m, sys);
  CHECK(flag_value(t, "--num-layers-per-virtual-pipeline-stage") == "<absent>");
  const std::string layout = flag_value(t, "--pipeline-model-parallel-layout");
  REQUIRE(layout.size() > 2);
  CHECK(layout.front() == 'E');
  CHECK(layout.back() == 'L');
  int stages = 1, layers = 0, max_layers = 0;
  std::istringstream segs(layout);
  std::string seg;
  while (std::getline(segs, seg, '|')) {
    const size_t star = seg.find("t*");
    const int n = star != std::string::npos ? std::stoi(seg.substr(star + 2))
                                            : static_cast<int>(std::count(seg.begin(), seg.end(), 't'));
    layers += n;
    max_layers = std::max(max_layers, n);
  }
  stages = static_cast<int>(std::count(layout.begin(), layout.end(), '|')) + 1;
  CHECK(stages == 64);
  CHECK(layers == 126);
  CHECK(max_layers == 2);              // ceil(126 / 64), what pipeline_parallel.cc charges the busiest stage
  CHECK(layout.rfind("Et|", 0) == 0);  // the embedding's stage and the loss's take the single layers
  // NeMo writes the same layout as Megatron-Core's list form; torchtitan as explicit per-stage modules.
  const YAML::Node n = YAML::Load(emit(io::EmitFormat::nemo, e, m, sys));
  REQUIRE(n["model"]["pipeline_model_parallel_layout"].size() == 64);
  CHECK(n["model"]["pipeline_model_parallel_layout"][0][0].as<std::string>() == "embedding");
  CHECK(n["model"]["pipeline_model_parallel_layout"][63][1].as<std::string>() == "loss");
}

TEST_CASE("emit: fp8 recipes, mxfp8 and nvfp4 in each framework's own keys") {
  System blackwell = test::synthetic_system(16);
  blackwell.gpu.peak[static_cast<int>(Dtype::fp4)] = blackwell.gpu.peak[static_cast<int>(Dtype::bf16)] * 4.0;
  Estimate mx = sample(1, 1, 1, 16, 3, Recompute::none, Dtype::fp8);
  mx.plan.fp8_recipe = Fp8Recipe::mxfp8;
  const std::string m = emit(io::EmitFormat::megatron, mx, llama8b(), blackwell);
  CHECK(flag_value(m, "--fp8-format") == "e4m3");
  CHECK(flag_value(m, "--fp8-recipe") == "mxfp8");
  const std::string toml = emit(io::EmitFormat::torchtitan_toml, mx, llama8b(), blackwell);
  CHECK(toml.find("converters = [\"quantize.linear.mx\"]") != std::string::npos);
  CHECK(toml.find("float8") == std::string::npos);  // mxfp8 is not emitted as fp8
  CHECK(emit(io::EmitFormat::torchtitan, mx, llama8b(), blackwell).find("MXFP8LinearConverter.Config(") !=
        std::string::npos);
  CHECK(YAML::Load(emit(io::EmitFormat::nemo, mx, llama8b(), blackwell))["mixed_precision"]["fp8_recipe"]
            .as<std::string>() == "mxfp8");
  // On a GPU without MX scaling no emitter writes it (framework_rules.cc mx_needs_blackwell).
  CHECK_THROWS_WITH_AS(emit(io::EmitFormat::megatron, mx), doctest::Contains("Blackwell"), ConfigError);

  Estimate fp4 = sample(1, 1, 1, 16, 3, Recompute::none, Dtype::fp4);
  const std::string m4 = emit(io::EmitFormat::megatron, fp4, llama8b(), blackwell);
  CHECK(flag_value(m4, "--fp4-format") == "e2m1");
  CHECK(flag_value(m4, "--fp4-recipe") == "nvfp4");
  CHECK(emit(io::EmitFormat::torchtitan, fp4, llama8b(), blackwell).find("NVFP4LinearConverter.Config(") !=
        std::string::npos);
  CHECK_THROWS_WITH_AS(emit(io::EmitFormat::torchtitan_toml, fp4, llama8b(), blackwell),
                       doctest::Contains("v0.2.2 has no fp4 converter"), ConfigError);

  Estimate block = sample(1, 1, 1, 16, 3, Recompute::none, Dtype::fp8);
  block.plan.fp8_recipe = Fp8Recipe::blockwise;
  CHECK(flag_value(emit(io::EmitFormat::megatron, block), "--fp8-recipe") == "blockwise");
  CHECK_THROWS_WITH_AS(emit(io::EmitFormat::torchtitan_toml, block), doctest::Contains("not blockwise"), ConfigError);
  // torchtitan's own default recipe is tensorwise.
  const std::string tw = emit(io::EmitFormat::torchtitan_toml, sample(1, 1, 1, 16, 3, Recompute::none, Dtype::fp8));
  CHECK(tw.find("[quantize.linear.float8]\nrecipe_name = \"tensorwise\"") != std::string::npos);
}

TEST_CASE("emit megatron: ZeRO-3 is FSDP2, refused with pp, never with CUDA_DEVICE_MAX_CONNECTIONS=1") {
  const std::string t = emit(io::EmitFormat::megatron, sample(1, 1, 1, 16, 3, Recompute::none, Dtype::bf16));
  CHECK(flag_value(t, "--use-torch-fsdp2") == "");
  CHECK(flag_value(t, "--overlap-param-gather") == "<absent>");
  CHECK(flag_value(t, "--no-gradient-accumulation-fusion") == "");
  CHECK(t.find("unset CUDA_DEVICE_MAX_CONNECTIONS") != std::string::npos);
  CHECK_THROWS_WITH_AS(emit(io::EmitFormat::megatron, sample(2, 2, 1, 4, 3, Recompute::none, Dtype::bf16)),
                       doctest::Contains("not supported with pipeline parallelism (pp 2)"), ConfigError);
  Estimate ovl = sample(2, 1, 1, 8, 1, Recompute::none, Dtype::bf16);
  ovl.plan.tp_comm_overlap = true;
  ovl.plan.sequence_parallel = false;
  CHECK_THROWS_WITH_AS(emit(io::EmitFormat::megatron, ovl), doctest::Contains("runs only with --sequence-parallel"),
                       ConfigError);
  ovl.plan.sequence_parallel = true;
  CHECK(flag_value(emit(io::EmitFormat::megatron, ovl), "--tp-comm-overlap") == "");
}

TEST_CASE("emit torchtitan-toml: v0.2.2 keys; FSDP for multi-dim plans; op-level selective AC; compile for async TP") {
  for (const Estimate& e : samples()) {
    CAPTURE(e.plan.tp);
    if (e.plan.zero == 1) {  // torchtitan has no optimizer-only sharding
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

TEST_CASE("emit: a launch unit holds only its own framework profile's plan") {
  const Estimate e = sample(1, 1, 1, 16, 3, Recompute::none, Dtype::bf16);
  const ModelDesc m = llama8b();
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

TEST_CASE("parse_emit_format") {
  CHECK(io::parse_emit_format("nemo") == io::EmitFormat::nemo);
  CHECK(io::parse_emit_format("torchtitan-toml") == io::EmitFormat::torchtitan_toml);
  CHECK_THROWS_WITH_AS(io::parse_emit_format("megatorn"),
                       "--emit: unknown format 'megatorn' (json, megatron, torchtitan, torchtitan-toml, deepspeed, "
                       "nemo), did you mean 'megatron'?",
                       ConfigError);
}
