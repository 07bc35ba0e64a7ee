#include "modeler/io/serving_runs.h"

#include <doctest/doctest.h>

#include "modeler/problems.h"

using namespace shardplan;

namespace {
const char* kRow = R"(- id: row1
  source: test
  url: null
  trust: high
  engine: vllm
  engine_version: null
  model:
    name: tiny
    layers: 2
    hidden: 64
    ffn_hidden: 256
    heads: 4
    kv_heads: 2
    head_dim: 16
    vocab: 128
    gated_mlp: true
    tied_embeddings: false
    moe: null
    mla: null
  weights_precision: fp8
  weights_gib: null
  kv_precision: null
  system: {gpu: h100-sxm5-80gb, gpus: 2, gpus_per_node: 8, host: null}
  plan: {mode: aggregated, tp: 2, pp: 1, attention_dp: 1, moe_tp: null, moe_ep: null, max_batch: 8, offload: null}
  workload: {input_len: 1024, output_len: 128, concurrency: 8, batch_size: null, request_rate: null,
             context_depth: null, dataset: null}
  measured: {ttft_ms: 100.0, tpot_ms: 10.0}
  notes: ''
)";
}  // namespace

TEST_CASE("a serving-runs row parses into model, plan, workload and measurements") {
  const auto runs = io::parse_serving_runs(kRow, "runs.yaml");
  REQUIRE(runs.size() == 1);
  const io::ServingRun& r = runs[0];
  CHECK(r.id == "row1");
  CHECK(r.model.kv_heads == 2);
  CHECK(r.agg.tp == 2);
  CHECK(*r.agg.batch == 8);
  CHECK(r.moe_weights_precision == "fp8");  // defaults to weights_precision
  CHECK_FALSE(r.kv_precision);
  CHECK(*r.ttft_ms == 100.0);
  CHECK(*r.concurrency == 8);
  CHECK(r.line == 1);
}

TEST_CASE("a misspelled key names the row and suggests the key") {
  std::string text = kRow;
  text.replace(text.find("  trust:"), 8, "  trusst:");
  try {
    io::parse_serving_runs(text, "runs.yaml");
    FAIL("no error");
  } catch (const ConfigError& e) {
    const std::string msg = e.what();
    CHECK(msg.find("runs.yaml:") != std::string::npos);
    CHECK(msg.find("row1.trusst") != std::string::npos);
  }
}

TEST_CASE("an unknown precision and a throughput without its scope are errors") {
  std::string bad = kRow;
  bad.replace(bad.find("weights_precision: fp8"), 22, "weights_precision: fp7");
  CHECK_THROWS_AS(io::parse_serving_runs(bad, "runs.yaml"), ConfigError);
  std::string scope = kRow;
  scope.replace(scope.find("{ttft_ms: 100.0, tpot_ms: 10.0}"), 31, "{throughput_tokens_per_s: 5.0}");
  CHECK_THROWS_WITH_AS(io::parse_serving_runs(scope, "runs.yaml"), doctest::Contains("throughput_scope"),
                       ConfigError);
}
