#include <doctest/doctest.h>

#include "modeler/io/yaml_reader.h"
#include "shardplan_source_dir.h"
#include "tests/calibrate/log_render.h"
#include "tests/io/emit_test_util.h"

using namespace shardplan;
using calibrate::LogFramework;

namespace {

std::string fixture(const std::string& name) {
  return io::read_file(SHARDPLAN_SOURCE_DIR "/tests/data/logs/llm-foundry/" + name);
}

/// MPT-7B as llm-foundry's mpt-7b.yaml builds it (d_model 4096, 32 heads and layers, expansion 4, vocab 50368).
ModelDesc mpt7b() {
  ModelDesc m = test::llama3_8b();
  m.name = "mpt7b";
  m.ffn_hidden = 16384;
  m.kv_heads = 32;
  m.vocab = 50368;
  m.gated_mlp = false;
  m.tied_embeddings = true;
  return m;
}

}  // namespace

TEST_CASE("llm-foundry log: the printed run config and Composer's console blocks") {
  const auto log = calibrate::parse_log(LogFramework::llm_foundry, fixture("mpt_7b_fsdp_16gpu.log"), "f.log");
  const auto& s = log.settings;
  CHECK(s.layers->value == 32);
  CHECK(s.ffn_hidden->value == 16384);  // d_model x expansion_ratio
  CHECK(!s.gated_mlp->value);
  CHECK(s.tied_embeddings->value);  // MPT's default
  CHECK(s.gpus->value == 16);
  CHECK(s.zero->value == 3);  // FULL_SHARD
  CHECK(s.recompute->value == "full");
  CHECK(s.precision->value == "bf16");
  CHECK(s.global_batch->value == 512);
  CHECK(s.micro_batch->value == 8);
  // Blocks 1-5 precede the speed monitor's first full window: no throughput, no step record.
  REQUIRE(log.steps.size() == 25);
  CHECK(log.steps[0].step == 5);
  CHECK(log.steps[0].step_time_s == doctest::Approx(9.48).epsilon(0.02));
  calibrate::ImportOptions o;
  o.gpu = "h100-sxm5-80gb";
  const auto r = calibrate::build_run(log, o);
  CHECK(r.dp == 16);
  CHECK(r.warmup_dropped == 11);
  CHECK(*r.peak_memory_gib == doctest::Approx(68.2e9 / (1 << 30)));  // GB (1e9) to GiB
}

TEST_CASE("llm-foundry log: an unknown sharding strategy and a log without the run config") {
  CHECK_THROWS_WITH_AS(
      calibrate::parse_log(LogFramework::llm_foundry,
                           "global_train_batch_size: 8\nfsdp_config:\n  sharding_strategy: ZERO9\n", "s.log"),
      "s.log:3: fsdp_config.sharding_strategy 'ZERO9' is not FULL_SHARD, SHARD_GRAD_OP, HYBRID_SHARD "
      "or NO_SHARD",
      ConfigError);
  CHECK_THROWS_WITH_AS(
      calibrate::parse_log(LogFramework::llm_foundry, "[batch=1/2]:\n\t Train time/batch: 0\n", "n.log"),
      doctest::Contains("n.log: no llm-foundry run config"), ConfigError);
}

TEST_CASE("llm-foundry log: a plan from shardplan's plan JSON, run as llm-foundry, imports back to the same plan") {
  using test::emit_util::sample;
  const ModelDesc m = mpt7b();
  // llm-foundry runs FSDP data parallelism (no tensor or pipeline parallelism in its configs).
  int round_trips = 0;
  for (const Estimate& e :
       {sample(1, 1, 1, 16, 3, Recompute::full, Dtype::bf16), sample(1, 1, 1, 16, 2, Recompute::none, Dtype::bf16),
        sample(1, 1, 1, 8, 3, Recompute::none, Dtype::fp16)}) {
    CAPTURE(e.plan.zero);
    const std::string json = test::emit_util::emit(io::EmitFormat::json, e, m);
    calibrate::ImportOptions o;
    o.gpu = "h100-sxm5-80gb";
    const io::PublishedRun r =
        test::render::import_back(LogFramework::llm_foundry, test::render::foundry_log(json, m), o);
    Plan p = e.plan;
    p.recompute_layers = 0;
    test::render::check_same_plan(r, p, m);
    CHECK(r.framework == "llm-foundry");
    ++round_trips;
  }
  CHECK(round_trips == 3);
}
