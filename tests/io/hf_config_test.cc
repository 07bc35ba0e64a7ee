#include "shardplan_source_dir.h"
#include "modeler/io/model_io.h"  // parse_hf_config, defined in hf_config.cc

#include <doctest/doctest.h>

#include <string>

#include "modeler/io/yaml_reader.h"  // read_file
#include "modeler/problems.h"

using namespace shardplan;
using namespace shardplan::io;

namespace {

const std::string kHf = std::string(SHARDPLAN_SOURCE_DIR) + "/tests/data/hf_configs/";
const std::string kServingHf = std::string(SHARDPLAN_SOURCE_DIR) + "/tests/validation/serving/hf_configs/";

std::string replace(std::string text, const std::string& from, const std::string& to) {
  const size_t p = text.find(from);
  REQUIRE(p != std::string::npos);
  return text.replace(p, from.size(), to);
}

std::string hf_error(const std::string& text, bool allow_moe = false) {
  try {
    parse_hf_config(text, "config.json", allow_moe);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST_CASE("Hugging Face config.json: Llama, Mistral, Qwen2, Qwen3") {
  const ModelDesc llama = load_model(kHf + "llama-3-8b.json");
  CHECK(llama.name == "llama-3-8b");
  CHECK(llama.kv_heads == 8);
  CHECK(llama.head_dim == 128);
  CHECK(llama.gated_mlp);
  CHECK(llama.norm == NormKind::rmsnorm);
  CHECK(llama.max_position == 8192);
  CHECK(total_params(llama) == total_params(load_model("llama-3-8b")));  // same model as the shipped YAML

  CHECK(total_params(load_model(kHf + "mistral-7b-v0.1.json")) == 7241732096.0);
  // Qwen2 biases q/k/v only (28 layers x 4608 parameters).
  const ModelDesc qwen2 = load_model(kHf + "qwen2-7b.json");
  CHECK(qwen2.qkv_bias);
  CHECK(!qwen2.linear_bias);
  CHECK(total_params(qwen2) == 7615616512.0);
  // Qwen3 states head_dim; its architecture implies per-head q/k RMSNorms (2 x 128 parameters per layer), which
  // Llama, Mistral and Qwen2 do not have.
  const ModelDesc qwen3 = load_model(kHf + "qwen3-8b.json");
  CHECK(qwen3.head_dim == 128);
  CHECK(qwen3.qk_norm == QkNorm::per_head);
  CHECK(llama.qk_norm == QkNorm::none);
  CHECK(qwen2.qk_norm == QkNorm::none);
  CHECK(total_params(qwen3) == doctest::Approx(8.19e9).epsilon(0.001));
  const ModelDesc small = load_model(kHf + "qwen3-0.6b.json");
  CHECK(small.head_dim == 128);  // not hidden / heads = 64
  CHECK(small.tied_embeddings);
  CHECK(non_embedding_params(small) == doctest::Approx(0.44e9).epsilon(0.01));  // model card: 0.44B
}

TEST_CASE("Hugging Face config.json errors") {
  CHECK(hf_error("{\n  \"hidden_size\": 4096,\n  \"num_hidden_layers\": }\n") ==
        "config.json:3:24: invalid JSON: syntax error while parsing value - unexpected '}'; expected '[', '{', or a "
        "literal");
  const std::string llama = read_file(kHf + "llama-3-8b.json");
  CHECK(hf_error(replace(llama, "\"hidden_size\": 4096,", "")) == "config.json: missing required key 'hidden_size'");
  CHECK(hf_error(replace(llama, "\"num_key_value_heads\": 8", "\"num_key_value_heads\": 5")) ==
        "config.json:17: num_key_value_heads: num_attention_heads (32) is not divisible by num_key_value_heads (5)");
  CHECK(hf_error(replace(llama, "\"hidden_size\": 4096", "\"hidden_size\": -4096")) ==
        "config.json:10: hidden_size: expected an integer in [1, 1048576], got -4096");
  CHECK(hf_error(replace(llama, "\"llama\"", "\"gpt2\"")) ==
        "config.json:14: model_type: unsupported model_type 'gpt2' (supported: llama, mistral, qwen2, qwen3)");
  CHECK(hf_error(read_file(kHf + "qwen3-235b-a22b-instruct-2507.json")) ==
        "config.json: MoE layers not supported yet (model_type 'qwen3_moe', 128 experts)");
  CHECK(hf_error(read_file(kHf + "deepseek-v3.json")) ==
        "config.json: MoE layers not supported yet (model_type 'deepseek_v3', 256 experts)");
}

TEST_CASE("quantization_config: block-scaled fp8 sets the checkpoint's block; per-tensor fp8 and others leave 0") {
  // The carried checkpoints of the serving rows: DeepSeek-V3 and Qwen3-235B-A22B-FP8 state
  // {quant_method: fp8, weight_block_size: [128, 128]}; Qwen3-32B (bf16) states none.
  CHECK(load_model(kServingHf + "deepseek-ai--DeepSeek-V3_config.json", true).checkpoint_fp8_block == 128);
  CHECK(load_model(kServingHf + "Qwen--Qwen3-235B-A22B-FP8_config.json", true).checkpoint_fp8_block == 128);
  CHECK(load_model(kServingHf + "Qwen--Qwen3-32B_config.json").checkpoint_fp8_block == 0);
  CHECK(load_model(kHf + "llama-3-8b.json").checkpoint_fp8_block == 0);

  const std::string ds = read_file(kHf + "deepseek-v3.json");
  CHECK(parse_hf_config(ds, "config.json", true).checkpoint_fp8_block == 128);
  const std::string block = "\"weight_block_size\": [\n      128,\n      128\n    ]";
  // fp8 without a block: per-tensor scales, the stated precision decides.
  CHECK(parse_hf_config(replace(ds, block, "\"weight_block_size\": null"), "config.json", true)
            .checkpoint_fp8_block == 0);
  CHECK(parse_hf_config(replace(ds, ",\n    " + block, ""), "config.json", true).checkpoint_fp8_block == 0);
  // Another method's block (mxfp8's [1, 32]) is not fp8 block scaling.
  CHECK(parse_hf_config(replace(replace(ds, "\"quant_method\": \"fp8\"", "\"quant_method\": \"mxfp8\""), block,
                                "\"weight_block_size\": [1, 32]"),
                        "config.json", true)
            .checkpoint_fp8_block == 0);
  const std::string llama = read_file(kHf + "llama-3-8b.json");
  CHECK(parse_hf_config(replace(llama, "{\n", "{\n  \"quantization_config\": null,\n"), "config.json")
            .checkpoint_fp8_block == 0);

  // Bad input names the key and the line where it is set (line 41: weight_block_size; 40: quant_method).
  CHECK(hf_error(replace(ds, block, "\"weight_block_size\": [128]"), true) ==
        "config.json:41: quantization_config.weight_block_size: expected [rows, columns], two integers in [1, "
        "1048576], got [128]");
  CHECK(hf_error(replace(ds, block, "\"weight_block_size\": [128, 0]"), true) ==
        "config.json:41: quantization_config.weight_block_size: expected [rows, columns], two integers in [1, "
        "1048576], got [128,0]");
  CHECK(hf_error(replace(ds, block, "\"weight_block_size\": \"128x128\""), true).find(
            "config.json:41: quantization_config.weight_block_size: expected [rows, columns]") == 0);
  CHECK(hf_error(replace(ds, block, "\"weight_block_size\": [1, 128]"), true) ==
        "config.json:41: quantization_config.weight_block_size: only square blocks are modelled (the engines' "
        "block-fp8 kernels take 128 x 128), got [1,128]");
  CHECK(hf_error(replace(ds, "\"quant_method\": \"fp8\"", "\"quant_method\": 8"), true) ==
        "config.json:40: quantization_config.quant_method: expected a string (the quantisation method, e.g. "
        "\"fp8\"), got 8");
  CHECK(hf_error(replace(ds, "\"quant_method\": \"fp8\",", ""), true) ==
        "config.json:37: quantization_config.quant_method: expected a string (the quantisation method, e.g. "
        "\"fp8\"), got nothing");
  CHECK(hf_error(replace(llama, "{\n", "{\n  \"quantization_config\": \"fp8\",\n")) ==
        "config.json:2: quantization_config: expected an object, got \"fp8\"");
}
