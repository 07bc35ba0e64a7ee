#include "shardplan_source_dir.h"
#include "modeler/io/model_io.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "modeler/io/paths.h"
#include "modeler/io/yaml_reader.h"
#include "modeler/problems.h"

using namespace shardplan;
using namespace shardplan::io;

namespace {

const std::string kHf = std::string(SHARDPLAN_SOURCE_DIR) + "/tests/data/hf_configs/";

// Line numbers in the expected messages below refer to this text.
const std::string kTiny =
    "schema_version: 1\n"             // 1
    "kind: model\n"                   // 2
    "name: tiny\n"                    // 3
    "source: \"hand-written\"\n"      // 4
    "layers: 2\n"                     // 5
    "hidden: 4\n"                     // 6
    "ffn_hidden: 8\n"                 // 7
    "heads: 2\n"                      // 8
    "vocab: 10\n"                     // 9
    "gated_mlp: false\n"              // 10
    "tied_embeddings: false\n"        // 11
    "linear_bias: true\n"             // 12
    "norm: layernorm\n"               // 13
    "position: learned\n"             // 14
    "max_position: 16\n";             // 15

std::string replace(std::string text, const std::string& from, const std::string& to) {
  const size_t p = text.find(from);
  REQUIRE(p != std::string::npos);
  return text.replace(p, from.size(), to);
}

std::string yaml_error(const std::string& text) {
  try {
    parse_model_yaml(text, "t.yaml");
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "(no error)";
}

std::string hf_error(const std::string& text) {
  try {
    parse_hf_config(text, "config.json");
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST_CASE("tiny YAML model parses with defaults for kv_heads and head_dim") {
  const ModelFile f = parse_model_file(kTiny, "t.yaml");
  const ModelDesc& m = f.model;
  CHECK(m.name == "tiny");
  CHECK(f.source == "hand-written");
  CHECK(!f.published_params);
  CHECK(m.kv_heads == 2);  // MHA by default
  CHECK(m.head_dim == 2);  // hidden / heads
  CHECK(m.norm == NormKind::layernorm);
  CHECK(m.position == PositionKind::learned);
  CHECK(m.max_position == 16);
  CHECK(total_params(m) == 496);  // as counted by hand in model_desc_test.cc
}

TEST_CASE("YAML model errors name file, line and key") {
  CHECK(yaml_error(replace(kTiny, "layers: 2", "layers: [2")) ==
        "t.yaml:6:7: invalid YAML: end of sequence flow not found");
  CHECK(yaml_error(kTiny + "kv_head: 2\n") == "t.yaml:16: unknown key 'kv_head', did you mean 'kv_heads'?");
  // A misspelled required key is reported as the typo, not as a missing key.
  CHECK(yaml_error(replace(kTiny, "hidden: 4", "hiden: 4")) == "t.yaml:6: unknown key 'hiden', did you mean 'hidden'?");
  CHECK(yaml_error(replace(kTiny, "vocab: 10\n", "")) == "t.yaml:1: missing required key 'vocab'");
  CHECK(yaml_error(replace(replace(kTiny, "vocab: 10\n", ""), "norm: layernorm\n", "")) ==
        "t.yaml:1: missing required keys 'vocab', 'norm'");
  CHECK(yaml_error(replace(kTiny, "layers: 2", "layers: -2")) ==
        "t.yaml:5: layers: expected an integer in [1, 10000], got -2");
  CHECK(yaml_error(replace(kTiny, "hidden: 4", "hidden: 0")) ==
        "t.yaml:6: hidden: expected an integer in [1, 1048576], got 0");
  CHECK(yaml_error(replace(kTiny, "vocab: 10", "vocab: 320000000")) ==
        "t.yaml:9: vocab: expected an integer in [1, 16777216], got 320000000");
  CHECK(yaml_error(replace(kTiny, "norm: layernorm", "norm: rmsnrom")) ==
        "t.yaml:13: norm: expected one of rmsnorm, layernorm, got \"rmsnrom\"; did you mean 'rmsnorm'?");
  CHECK(yaml_error(replace(kTiny, "schema_version: 1", "schema_version: 2")) ==
        "t.yaml:1: schema_version: unsupported schema_version 2 (this shardplan reads 1)");
  CHECK(yaml_error(replace(kTiny, "kind: model", "kind: gpu")) ==
        "t.yaml:2: kind: expected one of model, got \"gpu\"");
}

TEST_CASE("YAML model cross-field problems are reported together") {
  CHECK(yaml_error(kTiny + "kv_heads: 3\n") == "t.yaml:16: kv_heads: heads (2) is not divisible by kv_heads (3)");
  CHECK(yaml_error(replace(kTiny, "max_position: 16\n", "")) ==
        "t.yaml:14: position: learned positions need max_position (rows of the position table)");
  CHECK(yaml_error(replace(replace(kTiny, "max_position: 16\n", "kv_heads: 2\n"), "heads: 2\n", "heads: 3\n")) ==
        "t.yaml:15: kv_heads: heads (3) is not divisible by kv_heads (2)\n"
        "t.yaml:8: heads: hidden (4) is not divisible by heads (3); give head_dim explicitly\n"
        "t.yaml:14: position: learned positions need max_position (rows of the position table)");
}

TEST_CASE("YAML qk_norm: none by default, per_head or full; a bad value or MLA names file, line and key") {
  CHECK(parse_model_yaml(kTiny, "t.yaml").qk_norm == QkNorm::none);
  CHECK(parse_model_yaml(kTiny + "qk_norm: per_head\n", "t.yaml").qk_norm == QkNorm::per_head);
  CHECK(parse_model_yaml(kTiny + "qk_norm: full\n", "t.yaml").qk_norm == QkNorm::full);
  CHECK(parse_model_yaml(kTiny + "qk_norm: none\n", "t.yaml").qk_norm == QkNorm::none);
  CHECK(yaml_error(kTiny + "qk_norm: per-head\n") ==
        "t.yaml:16: qk_norm: expected one of none, per_head, full, got \"per-head\"; did you mean 'per_head'?");
  CHECK(yaml_error(kTiny + "qk_norm: per_head\nmla: {q_lora_rank: 0, kv_lora_rank: 4, qk_nope_head_dim: 2, "
                           "qk_rope_head_dim: 2, v_head_dim: 2}\n") ==
        "t.yaml:16: qk_norm: MLA's latent norms are part of mla; qk_norm applies to q/k/v heads only");
}

TEST_CASE("every shipped model parses, is named after its file and matches its published total") {
  const auto names = list_data_files("models", {".yaml"});
  CHECK(names.size() >= 20);
  for (const std::string& name : names) {
    CAPTURE(name);
    const std::string path = data_root() + "/models/" + name + ".yaml";
    const ModelFile f = parse_model_file(read_file(path), path);
    CHECK(f.model.name == name);
    CHECK(!f.source.empty());
    if (f.published_params) {
      const double err = total_params(f.model) / *f.published_params - 1.0;
      CAPTURE(total_params(f.model));
      CHECK(std::abs(err) < 0.01);
    }
    if (f.published_activated_params) {
      // Activated counts are published to two digits (37B, 3.3B): DeepSeek-V3 computes 37.55B and Qwen3-30B-A3B
      // 3.35B with embeddings counted, so the bound is 2%, not 1%.
      const double err = activated_params(f.model) / *f.published_activated_params - 1.0;
      CAPTURE(activated_params(f.model));
      CHECK(std::abs(err) < 0.02);
    }
    CHECK(load_model(name, /*allow_moe=*/true).name == name);
  }
}

TEST_CASE("exact parameter counts of well-known models") {
  // Counts of the released checkpoints (sum of tensor sizes).
  CHECK(total_params(load_model("llama-2-7b")) == 6738415616.0);
  CHECK(total_params(load_model("llama-2-70b")) == 68976648192.0);
  CHECK(total_params(load_model("llama-3-8b")) == 8030261248.0);
  CHECK(total_params(load_model("llama-3.1-405b")) == 405853388800.0);
}

TEST_CASE("the FlexGen paper's OPT models: Table 1 shapes of Zhang et al. 2022 and their hand-counted totals") {
  struct Opt {
    const char* name;
    int layers, hidden, heads;
  };
  for (const Opt& o : {Opt{"opt-6.7b", 32, 4096, 32}, Opt{"opt-30b", 48, 7168, 56}, Opt{"opt-175b", 96, 12288, 96}}) {
    CAPTURE(o.name);
    const ModelDesc m = load_model(o.name);
    CHECK(m.layers == o.layers);
    CHECK(m.hidden == o.hidden);
    CHECK(m.heads == o.heads);
    CHECK(m.kv_heads == o.heads);
    CHECK(m.head_dim == 128);
    CHECK(m.ffn_hidden == 4 * o.hidden);
    CHECK(m.vocab == 50272);
    CHECK(m.max_position == 2048);
    // Per block: q, k, v, o with biases, fc1 and fc2 with biases, two LayerNorms (scale + bias); then the tied
    // token embedding, 2048 learned positions and the final LayerNorm.
    const double h = o.hidden, f = 4 * h;
    const double block = 4 * h * h + 4 * h + 2 * h * f + f + h + 4 * h;
    CHECK(total_params(m) == o.layers * block + (50272 + 2048) * h + 2 * h);
  }
}

TEST_CASE("MoE models: YAML and config.json agree; refused unless allowed") {
  const ModelDesc ds = load_model(kHf + "deepseek-v3.json", /*allow_moe=*/true);
  REQUIRE(ds.moe);
  REQUIRE(ds.mla);
  CHECK(ds.moe->experts == 256);
  CHECK(ds.moe->shared_experts == 1);
  CHECK(ds.moe->dense_layers == 3);
  CHECK(ds.mla->q_lora_rank == 1536);
  CHECK(ds.head_dim == 192);
  CHECK(ds.mtp_layers == 1);  // num_nextn_predict_layers
  CHECK(load_model("deepseek-v3", true).mtp_layers == 1);
  CHECK(total_params(ds) == total_params(load_model("deepseek-v3", true)));
  CHECK(activated_params(ds) == activated_params(load_model("deepseek-v3", true)));

  const ModelDesc qwen = load_model(kHf + "qwen3-235b-a22b-instruct-2507.json", true);
  CHECK(total_params(qwen) == total_params(load_model("qwen3-235b-a22b", true)));
  CHECK(qwen.qk_norm == QkNorm::per_head);  // qwen3_moe, as the shipped YAML says
  CHECK(load_model("qwen3-235b-a22b", true).qk_norm == QkNorm::per_head);
  CHECK(ds.qk_norm == QkNorm::none);  // MLA's latent norms are its own
  const ModelDesc mix = load_model(kHf + "mixtral-8x7b.json", true);
  CHECK(mix.sliding_window == 0);  // "sliding_window": null
  CHECK(total_params(mix) == total_params(load_model("mixtral-8x7b", true)));

  const ModelDesc oss = load_model(kHf + "gpt-oss-120b.json", true);
  CHECK(oss.sliding_window == 128);
  CHECK(oss.full_attention_every == 2);
  CHECK(oss.attention_sinks);
  CHECK(oss.moe->expert_bias);
  CHECK(total_params(oss) == total_params(load_model("gpt-oss-120b", true)));
  CHECK(total_params(oss) == doctest::Approx(116.83e9).epsilon(0.001));
  // The gpt-oss card's 5.13B active parameters count the unembedding but not the input embedding table.
  CHECK(activated_params(oss) - 1.0 * oss.vocab * oss.hidden == doctest::Approx(5.13e9).epsilon(0.005));

  std::string err;
  try {
    load_model("mixtral-8x7b");
  } catch (const ConfigError& e) {
    err = e.what();
  }
  CHECK(err == data_root() + "/models/mixtral-8x7b.yaml: MoE layers not supported yet (8 experts)");
}

TEST_CASE("MoE and MLA YAML errors") {
  const std::string moe = kTiny + "moe:\n  experts: 4\n  top_k: 8\n  expert_ffn_hidden: 2\n";  // lines 16-19
  CHECK(yaml_error(moe) == "t.yaml:18: moe.top_k: top_k (8) exceeds experts (4)");
  CHECK(yaml_error(replace(moe, "top_k: 8", "topk: 2")) == "t.yaml:18: unknown key 'moe.topk', did you mean 'top_k'?");
  CHECK(yaml_error(replace(moe, "  experts: 4\n", "")) == "t.yaml:17: moe: missing required key 'moe.experts'");
  CHECK(yaml_error(replace(moe, "top_k: 8", "top_k: 2\n  dense_layers: 2")) ==
        "t.yaml:19: moe.dense_layers: dense_layers (2) leaves no MoE layer of 2");
  CHECK(yaml_error(kTiny + "mla:\n  q_lora_rank: 0\n  kv_lora_rank: 0\n  qk_nope_head_dim: 1\n  qk_rope_head_dim: 1\n"
                           "  v_head_dim: 2\n") ==
        "t.yaml:18: mla.kv_lora_rank: expected an integer in [1, 1048576], got 0");
  CHECK(yaml_error(kTiny + "full_attention_every: 2\n") ==
        "t.yaml:16: full_attention_every: needs sliding_window (the other layers' window)");
  CHECK(yaml_error(kTiny + "published_activated_params: 1e9\n") ==
        "t.yaml:16: published_activated_params: only MoE models have activated parameters");
}

TEST_CASE("moe.router_dtype: fp32 (Megatron-Core moe_router_dtype) or input, the default; other values named") {
  const std::string moe = kTiny + "moe:\n  experts: 4\n  top_k: 2\n  expert_ffn_hidden: 2\n";  // lines 16-19
  CHECK_FALSE(parse_model_yaml(moe, "t.yaml").moe->router_fp32);
  CHECK(parse_model_yaml(moe + "  router_dtype: fp32\n", "t.yaml").moe->router_fp32);
  CHECK_FALSE(parse_model_yaml(moe + "  router_dtype: input\n", "t.yaml").moe->router_fp32);
  CHECK(yaml_error(moe + "  router_dtype: fp64\n").find("t.yaml:20: moe.router_dtype") == 0);
}

TEST_CASE("issue 12: a number beyond double's range and a non-scalar key are input errors naming the place") {
  const std::string llama = read_file(kHf + "llama-3-8b.json");
  const std::string huge = replace(llama, "\"rope_theta\": 500000.0", "\"rope_theta\": 1e400");
  const size_t line = 1 + std::count(huge.begin(), huge.begin() + static_cast<long>(huge.find("1e400")), '\n');
  CHECK(hf_error(huge) == "config.json:" + std::to_string(line) +
                              ": rope_theta: number 1e400 is out of range (beyond +-1.8e308)");
  CHECK(yaml_error(kTiny + "[a, b]: 1\n") == "t.yaml:16: expected a plain key, got a list");
  CHECK(yaml_error(kTiny + "{a: 1}: 2\n") == "t.yaml:16: expected a plain key, got a mapping");
}
