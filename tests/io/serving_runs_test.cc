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

namespace {
// kRow with a FlexGen policy, block 48 x 3 = 144, on a named offload machine.
std::string flexgen_row(const std::string& policy_extra = "", const std::string& batch = "144") {
  std::string t = kRow;
  t.replace(t.find("{gpu: h100-sxm5-80gb, gpus: 2, gpus_per_node: 8, host: null}"), 60,
            "{gpu: t4, gpus: 1, gpus_per_node: 1, machine: gcp-n1-highmem-32-t4, host: null}");
  t.replace(t.find("offload: null}"), 14,
            "offload: {weights_gpu_percent: 20.0, kv_gpu_percent: 0.0, activations_gpu_percent: 0.0,\n"
            "    flexgen_policy: {gpu_batch_size: 48, num_gpu_batches: 3, w_gpu_percent: 20, w_cpu_percent: 80,\n"
            "      cache_gpu_percent: 0, cache_cpu_percent: 100, act_gpu_percent: 0, act_cpu_percent: 100,\n"
            "      cpu_cache_compute: true, compress_weight: false, compress_cache: false" +
                policy_extra + "}}}");
  t.replace(t.find("concurrency: 8, batch_size: null"), 32, "concurrency: null, batch_size: " + batch);
  return t;
}
}  // namespace

TEST_CASE("a FlexGen row reads its policy, with FlexGen's defaults for overlap and pin_weight") {
  const auto runs = io::parse_serving_runs(flexgen_row(), "runs.yaml");
  REQUIRE(runs[0].offload);
  REQUIRE(runs[0].offload->flexgen_policy);
  const serving::FlexgenPolicy& p = *runs[0].offload->flexgen_policy;
  CHECK(p.block_size() == 144);
  CHECK(p.w_cpu_percent == 80);
  CHECK(p.cpu_cache_compute);
  CHECK(p.overlap);
  CHECK(p.pin_weight);
  CHECK(runs[0].machine == "gcp-n1-highmem-32-t4");
  const auto off = io::parse_serving_runs(flexgen_row(", overlap: false, pin_weight: false"), "runs.yaml");
  CHECK_FALSE(off[0].offload->flexgen_policy->overlap);
  CHECK_FALSE(off[0].offload->flexgen_policy->pin_weight);
  CHECK_FALSE(p.debug_fewer_batch);
  const auto dbg = io::parse_serving_runs(flexgen_row(", debug_mode: fewer_batch"), "runs.yaml");
  CHECK(dbg[0].offload->flexgen_policy->debug_fewer_batch);
  CHECK_THROWS_WITH_AS(io::parse_serving_runs(flexgen_row(", debug_mode: breakdown"), "runs.yaml"),
                       doctest::Contains("flexgen_policy.debug_mode"), ConfigError);
}

TEST_CASE("FlexGen policy errors name the file, line and key") {
  std::string missing = flexgen_row();
  missing.replace(missing.find("cpu_cache_compute: true, "), 25, "");
  CHECK_THROWS_WITH_AS(io::parse_serving_runs(missing, "runs.yaml"),
                       doctest::Contains("row1.plan.offload.flexgen_policy.cpu_cache_compute"), ConfigError);
  std::string range = flexgen_row();
  range.replace(range.find("w_cpu_percent: 80"), 17, "w_cpu_percent: 180");
  CHECK_THROWS_WITH_AS(io::parse_serving_runs(range, "runs.yaml"), doctest::Contains("runs.yaml:"), ConfigError);
  std::string sum = flexgen_row();
  sum.replace(sum.find("w_cpu_percent: 80"), 17, "w_cpu_percent: 90");
  CHECK_THROWS_WITH_AS(io::parse_serving_runs(sum, "runs.yaml"), doctest::Contains("exceeds 100"), ConfigError);
  std::string disagree = flexgen_row();
  disagree.replace(disagree.find("weights_gpu_percent: 20.0"), 25, "weights_gpu_percent: 30.0");
  CHECK_THROWS_WITH_AS(io::parse_serving_runs(disagree, "runs.yaml"), doctest::Contains("weights_gpu_percent"),
                       ConfigError);
  CHECK_THROWS_WITH_AS(io::parse_serving_runs(flexgen_row("", "100"), "runs.yaml"),
                       doctest::Contains("row1.workload.batch_size"), ConfigError);
  std::string typo = flexgen_row();
  typo.replace(typo.find("compress_cache"), 14, "compres_cache");
  CHECK_THROWS_WITH_AS(io::parse_serving_runs(typo, "runs.yaml"), doctest::Contains("did you mean"), ConfigError);
}

TEST_CASE("plan.offload.n_ubatch: optional, at least 1") {
  std::string text = kRow;
  text.replace(text.find("offload: null}"), 14, "offload: {gpu_layers: 3, n_ubatch: 2048}}");
  const auto runs = io::parse_serving_runs(text, "runs.yaml");
  REQUIRE(runs[0].offload);
  CHECK(*runs[0].offload->n_ubatch == 2048);
  std::string bad = kRow;
  bad.replace(bad.find("offload: null}"), 14, "offload: {gpu_layers: 3, n_ubatch: 0}}");
  CHECK_THROWS_WITH_AS(io::parse_serving_runs(bad, "runs.yaml"), doctest::Contains("n_ubatch"), ConfigError);
}

TEST_CASE("engine_build_date: optional YYYY-MM-DD, anything else refused naming the key") {
  CHECK(!io::parse_serving_runs(kRow, "runs.yaml")[0].engine_build_date);
  std::string text = kRow;
  text.replace(text.find("engine_version: null"), 20, "engine_version: null\n  engine_build_date: '2026-07-16'");
  CHECK(*io::parse_serving_runs(text, "runs.yaml")[0].engine_build_date == "2026-07-16");
  for (const char* bad : {"2026-7-16", "2026-13-01", "July 2026", "2026-07-00"}) {
    std::string b = kRow;
    b.replace(b.find("engine_version: null"), 20, std::string("engine_version: null\n  engine_build_date: '") + bad + "'");
    CHECK_THROWS_WITH_AS(io::parse_serving_runs(b, "runs.yaml"), doctest::Contains("row1.engine_build_date"),
                         ConfigError);
  }
}

TEST_CASE("deployment: optional aic_generator or sweep (null: unstated); another value is refused at its line") {
  CHECK(io::parse_serving_runs(kRow, "runs.yaml")[0].deployment == io::Deployment::unstated);
  const auto with = [](const std::string& value) {
    std::string t = kRow;
    t.replace(t.find("trust: high"), 11, "trust: high\n  deployment: " + value);
    return t;
  };
  CHECK(io::parse_serving_runs(with("aic_generator"), "runs.yaml")[0].deployment == io::Deployment::aic_generator);
  CHECK(io::parse_serving_runs(with("sweep"), "runs.yaml")[0].deployment == io::Deployment::sweep);
  CHECK(io::parse_serving_runs(with("null"), "runs.yaml")[0].deployment == io::Deployment::unstated);
  CHECK_THROWS_WITH_AS(io::parse_serving_runs(with("generator"), "runs.yaml"),
                       doctest::Contains("runs.yaml:5: row1.deployment: expected one of aic_generator, sweep"),
                       ConfigError);
}

namespace {
// kRow on a host that names its machine (host.machine) and states its CPU.
std::string host_row(const std::string& cpu, const std::string& machine) {
  std::string t = kRow;
  const std::string sys = "{gpu: h100-sxm5-80gb, gpus: 2, gpus_per_node: 8, host: null}";
  t.replace(t.find(sys), sys.size(),
            "\n    gpu: rtx-4080\n    gpus: 1\n    gpus_per_node: 1\n    host:\n      cpu: " + cpu +
                "\n      cores: 16\n      machine: " + machine + "\n");
  return t;
}
}  // namespace

TEST_CASE("host.machine: optional, a named machine of the table whose CPU agrees with host.cpu") {
  CHECK(io::parse_serving_runs(host_row("AMD Ryzen 9 7950X", "null"), "runs.yaml")[0].host->machine.empty());
  const auto runs = io::parse_serving_runs(host_row("AMD Ryzen 9 7950X", "ikawrakow-ryzen9-7950x"), "runs.yaml");
  REQUIRE(runs[0].host);
  CHECK(runs[0].host->machine == "ikawrakow-ryzen9-7950x");
  CHECK(runs[0].host->cpu == "AMD Ryzen 9 7950X");
  // An unknown machine: file, line (the key's: line 30 of the text) and key, with a suggestion.
  CHECK_THROWS_WITH_AS(io::parse_serving_runs(host_row("AMD Ryzen 9 7950X", "ikawrakow-ryzen9-7950"), "runs.yaml"),
                       doctest::Contains("runs.yaml:30: row1.system.host.machine: expected one of"), ConfigError);
  CHECK_THROWS_WITH_AS(io::parse_serving_runs(host_row("AMD Ryzen 9 7950X", "ikawrakow-ryzen9-7950"), "runs.yaml"),
                       doctest::Contains("did you mean 'ikawrakow-ryzen9-7950x'?"), ConfigError);
  // A machine whose CPU is not the row's.
  CHECK_THROWS_WITH_AS(io::parse_serving_runs(host_row("Intel Core i9-10900X", "ikawrakow-ryzen9-7950x"), "runs.yaml"),
                       doctest::Contains("row1.system.host.machine: machine 'ikawrakow-ryzen9-7950x' has CPU 'AMD "
                                         "Ryzen 9 7950X', the row's host.cpu is 'Intel Core i9-10900X'"),
                       ConfigError);
}
