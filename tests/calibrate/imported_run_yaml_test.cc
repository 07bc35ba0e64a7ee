#include "calibrate/imported_run_yaml.h"

#include <doctest/doctest.h>

#include "modeler/io/published_runs.h"

using namespace shardplan;
using namespace shardplan::calibrate;

namespace {

// A run as build_run leaves it: a dense Llama-style model, every optional setting unstated.
ImportedRun dense_run() {
  ImportedRun r;
  r.id = "s";
  r.source = "shardplan calibrate import-log of s.log";
  r.framework = "megatron-lm";
  r.precision = "bf16";
  r.model.name = "from s.log";
  r.model.layers = 32;
  r.model.hidden = 4096;
  r.model.ffn_hidden = 14336;
  r.model.heads = 32;
  r.model.kv_heads = 8;
  r.model.head_dim = 128;
  r.model.vocab = 128256;
  r.model.gated_mlp = true;
  r.gpu = "h100-sxm5-80gb";
  r.gpus = 16;
  r.tp = 2;
  r.dp = 8;
  r.global_batch = 64;
  r.seq_len = 8192;
  r.step_time_s = 2.0;
  r.tokens_per_s_per_gpu = 64.0 * 8192 / (2.0 * 16);
  r.derived_from = "median of 3 steady-state step records";
  return r;
}

}  // namespace

TEST_CASE("runs_yaml: what is written is a runs file the validator reads back, unstated values as not stated") {
  const auto runs = io::parse_published_runs(runs_yaml({dense_run()}), "runs.yaml");
  REQUIRE(runs.size() == 1);
  const io::PublishedRun& p = runs[0];
  CHECK(p.id == "s");
  CHECK(p.framework == "megatron-lm");
  CHECK(p.model.layers == 32);
  CHECK(p.model.kv_heads == 8);
  CHECK(!p.moe);
  CHECK(p.plan.plan.tp == 2);
  CHECK(p.plan.plan.dp == 8);
  CHECK(*p.measured_step_time_s == doctest::Approx(2.0));
  CHECK(p.measured_tokens_per_s_per_gpu == doctest::Approx(16384.0));
  // Not stated in the log: null in the file, open in the run (the validator brackets them), never a default.
  CHECK(!p.plan.micro_batch);
  CHECK(!p.plan.sequence_parallel);
  CHECK(!p.plan.recompute);
  CHECK(!p.plan.tp_comm_overlap);
  CHECK(!p.measured_model_tflops_per_gpu);
  CHECK(!p.measured_peak_memory_gib);
}

TEST_CASE("runs_yaml: stated settings, MoE and the log's own TFLOP/s and memory survive the round trip") {
  ImportedRun r = dense_run();
  r.model.moe = MoeDesc{};
  r.model.moe->experts = 64;
  r.model.moe->top_k = 8;
  r.model.moe->expert_ffn_hidden = 1408;
  r.model.moe->shared_experts = 2;
  r.model.moe->dense_layers = 1;
  r.ep = 8;
  r.micro_batch = 2;
  r.sequence_parallel = true;
  r.tp_comm_overlap = true;
  r.recompute = "full";
  r.recompute_num_layers = 4;
  r.model_tflops_per_gpu = 412.5;
  r.peak_memory_gib = 61.25;
  const auto runs = io::parse_published_runs(runs_yaml({r, dense_run()}), "runs.yaml");
  REQUIRE(runs.size() == 2);
  const io::PublishedRun& p = runs[0];
  CHECK(p.moe);
  REQUIRE(p.model.moe);
  CHECK(p.model.moe->experts == 64);
  CHECK(p.model.moe->top_k == 8);
  CHECK(p.model.moe->shared_experts == 2);
  CHECK(p.plan.plan.ep == 8);
  CHECK(*p.plan.micro_batch == 2);
  CHECK(*p.plan.sequence_parallel);
  CHECK(*p.plan.tp_comm_overlap);
  CHECK(*p.plan.recompute == Recompute::full);
  CHECK(*p.plan.recompute_num_layers == 4);
  CHECK(*p.measured_model_tflops_per_gpu == doctest::Approx(412.5));
  CHECK(*p.measured_peak_memory_gib == doctest::Approx(61.25));
  CHECK(!runs[1].moe);
}
