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

TEST_CASE("optional recipe keys: absent or null is 'not stated', stated values are kept") {
  const PublishedRun plain = parse_published_runs(run_yaml("null", "null"), "runs.yaml").at(0);
  CHECK(plain.framework_version.empty());
  CHECK(plain.date.empty());
  CHECK_FALSE(plain.plan.compiled.has_value());
  CHECK_FALSE(plain.plan.tp_comm_overlap.has_value());
  CHECK_FALSE(plain.plan.recompute_num_layers.has_value());
  CHECK_FALSE(plain.plan.fp8_recipe.has_value());
  CHECK_FALSE(plain.plan.fp8_param_gather.has_value());
  std::string text = run_yaml("null", "null");
  auto put = [&text](const std::string& after, const std::string& keys) {
    text.insert(text.find('\n', text.find(after)) + 1, keys);
  };
  put("  framework: nemo",
      "  framework_version: '25.09'\n  date: 2025-09\n  compiled: null\n  fp8_recipe: blockwise\n");
  put("    global_batch: 8", "    tp_comm_overlap: true\n    recompute: full\n    recompute_num_layers: 2\n"
                            "    fsdp_fp8_all_gather: false\n");
  text.replace(text.find("precision: bf16"), 15, "precision: fp8");
  const PublishedRun r = parse_published_runs(text, "runs.yaml").at(0);
  CHECK(r.framework_version == "25.09");
  CHECK(r.date == "2025-09");
  CHECK_FALSE(r.plan.compiled.has_value());
  CHECK(*r.plan.fp8_recipe == Fp8Recipe::blockwise);
  CHECK(*r.plan.tp_comm_overlap);
  CHECK(*r.plan.recompute_num_layers == 2);
  CHECK_FALSE(*r.plan.fp8_param_gather);
  CHECK(r.precision_name == "fp8");
}

TEST_CASE("precision mxfp8 states its recipe; bad recipe keys name the file, line and key") {
  std::string text = run_yaml("null", "null");
  text.replace(text.find("precision: bf16"), 15, "precision: mxfp8");
  CHECK(*parse_published_runs(text, "runs.yaml").at(0).plan.fp8_recipe == Fp8Recipe::mxfp8);
  const std::string bf16 = run_yaml("null", "null");
  std::string bad = bf16;
  bad.insert(bad.find("  model:"), "  fp8_recipe: tensorwise\n");
  CHECK_THROWS_WITH_AS(parse_published_runs(bad, "runs.yaml"),
                       "runs.yaml:4: r1.fp8_recipe: fp8_recipe 'tensorwise' needs precision fp8, mxfp8 or nvfp4",
                       ConfigError);
  bad = bf16;
  bad.insert(bad.find("  model:"), "  date: last year\n");
  CHECK_THROWS_WITH_AS(parse_published_runs(bad, "runs.yaml"),
                       "runs.yaml:4: r1.date: expected YYYY or YYYY-MM, got 'last year'", ConfigError);
  bad = bf16;
  bad.insert(bad.find("    global_batch"), "    recompute: selective\n    recompute_num_layers: 1\n");
  CHECK_THROWS_WITH_AS(
      parse_published_runs(bad, "runs.yaml"),
      "runs.yaml:28: r1.plan.recompute_num_layers: recompute_num_layers needs recompute full (or null)", ConfigError);
}

TEST_CASE("activation_offload_layers: the recipe's CPU offload, which implies no recompute") {
  const std::string plain = run_yaml("null", "null");
  CHECK(parse_published_runs(plain, "runs.yaml").at(0).plan.plan.activation_offload_layers == 0);
  CHECK_FALSE(parse_published_runs(plain, "runs.yaml").at(0).plan.recompute.has_value());
  std::string text = plain;
  text.insert(text.find("    global_batch"), "    activation_offload_layers: 3\n");
  const PublishedRun r = parse_published_runs(text, "runs.yaml").at(0);
  CHECK(r.plan.plan.activation_offload_layers == 3);
  CHECK(*r.plan.recompute == Recompute::none);  // Megatron-Core refuses recompute with CPU offloading
  std::string bad = plain;
  bad.insert(bad.find("    global_batch"), "    recompute: full\n    activation_offload_layers: 3\n");
  CHECK_THROWS_WITH_AS(
      parse_published_runs(bad, "runs.yaml"),
      "runs.yaml:28: r1.plan.activation_offload_layers: activation_offload_layers needs recompute none (or null)",
      ConfigError);
}

TEST_CASE("recompute_modules: a recipe's selective-recompute modules, stated, imply recompute selective") {
  const std::string plain = run_yaml("{experts: 8, top_k: 2, expert_ffn_hidden: 32}", "null");
  CHECK_FALSE(parse_published_runs(plain, "runs.yaml").at(0).plan.recompute_modules_given);
  std::string text = plain;
  text.insert(text.find("    global_batch"), "    recompute_modules: layernorm+moe_act\n");
  const PublishedRun r = parse_published_runs(text, "runs.yaml").at(0);
  CHECK(r.plan.recompute_modules_given);
  CHECK(*r.plan.recompute == Recompute::selective);
  CHECK(r.plan.plan.recompute_modules == (kRecomputeLayernorm | kRecomputeMoeAct));
  std::string full = plain;
  full.insert(full.find("    global_batch"), "    recompute: full\n    recompute_modules: mlp\n");
  CHECK_THROWS_WITH_AS(parse_published_runs(full, "runs.yaml"),
                       doctest::Contains("r1.plan.recompute_modules: recompute_modules needs recompute selective"),
                       ConfigError);
  std::string unknown = plain;
  unknown.insert(unknown.find("    global_batch"), "    recompute_modules: mlp+attn\n");
  CHECK_THROWS_WITH_AS(parse_published_runs(unknown, "runs.yaml"),
                       doctest::Contains("r1.plan.recompute_modules: unknown recompute module 'attn'"), ConfigError);
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

TEST_CASE("mtp_layers and pipeline_layout: the model's MTP modules, the recipe's MTP and layout; bad layouts named") {
  std::string text = run_yaml("null", "null");
  text.insert(text.find("    moe: "), "    mtp_layers: 1\n");
  text.insert(text.find("    global_batch"), "    mtp_layers: 1\n    pipeline_layout: 'Et*4mL'\n");
  const PublishedRun r = parse_published_runs(text, "runs.yaml").at(0);
  CHECK(r.model.mtp_layers == 1);
  CHECK(r.plan.plan.mtp_layers == 1);
  CHECK(r.plan.plan.pipeline_layout == "Et*4mL");
  CHECK(parse_published_runs(run_yaml("null", "null"), "runs.yaml").at(0).plan.plan.mtp_layers == 0);
  std::string bad = run_yaml("null", "null");
  bad.insert(bad.find("    global_batch"), "    pipeline_layout: 'Et*4|(t|L'\n");
  CHECK_THROWS_WITH_AS(parse_published_runs(bad, "runs.yaml"),
                       doctest::Contains("r1.plan.pipeline_layout: 'Et*4|(t|L': '(' without ')'"), ConfigError);
}

}
