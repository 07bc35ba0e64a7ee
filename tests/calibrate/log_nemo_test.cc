#include <doctest/doctest.h>

#include "modeler/io/yaml_reader.h"
#include "shardplan_source_dir.h"
#include "tests/calibrate/log_render.h"
#include "tests/io/emit_test_util.h"

using namespace shardplan;
using calibrate::LogFramework;

namespace {

std::string fixture(const std::string& name) {
  return io::read_file(SHARDPLAN_SOURCE_DIR "/tests/data/logs/nemo/" + name);
}

}  // namespace

TEST_CASE("nemo log: Megatron-Bridge's configuration summary and iteration lines") {
  const auto log = calibrate::parse_log(LogFramework::nemo, fixture("llama3_8b_bridge_tp2_8gpu.log"), "b.log");
  const auto& s = log.settings;
  CHECK(s.tp->value == 2);
  CHECK(s.pp->value == 1);  // absent from the summary: Megatron-Core's default
  CHECK(s.cp->value == 1);
  CHECK(s.sequence_parallel->value);
  CHECK(s.zero->value == 1);
  CHECK(s.recompute->value == "selective");
  CHECK(s.precision->value == "bf16");
  CHECK(s.seq_len->value == 8192);  // [dataset] sequence_length
  CHECK(s.global_batch->value == 128);
  CHECK(!s.gpus);   // the summary does not print the world size: --gpus gives it
  CHECK(!s.vocab);  // nor the vocabulary (no TransformerConfig field): --model gives it
  CHECK(log.steps.size() == 30);
  calibrate::ImportOptions o;
  o.gpu = "h100-sxm5-80gb";
  CHECK_THROWS_WITH_AS(calibrate::build_run(log, o), "b.log: the log states no vocabulary size; pass --model NAME|FILE",
                       ConfigError);
  const ModelDesc m = test::llama3_8b();
  o.model = &m;
  o.model_name = "llama-3-8b";
  CHECK_THROWS_WITH_AS(calibrate::build_run(log, o),
                       "b.log: the log states neither the world size nor the data-parallel size; pass --gpus N",
                       ConfigError);
  o.gpus = 8;
  const auto r = calibrate::build_run(log, o);
  CHECK(r.dp == 4);
  ModelDesc other = m;
  other.hidden = 5120;
  o.model = &other;
  CHECK_THROWS_WITH_AS(calibrate::build_run(log, o),
                       doctest::Contains("b.log:21: hidden size 4096 in the log, but --model llama-3-8b has 5120"),
                       ConfigError);
}

TEST_CASE("nemo log: NeMo 1's OmegaConf dump and the progress bar's train_step_timing (carriage returns)") {
  const auto log = calibrate::parse_log(LogFramework::nemo, fixture("llama2_13b_nemo1_tp4_16gpu.log"), "n.log");
  const auto& s = log.settings;
  CHECK(s.gpus->value == 16);  // trainer.devices 8 x num_nodes 2
  CHECK(s.tp->value == 4);
  CHECK(s.zero->value == 1);  // optim.name distributed_fused_adam
  CHECK(s.gated_mlp->value);  // activation fast-swiglu
  CHECK(s.precision->value == "bf16");
  CHECK(s.recompute->value == "none");
  CHECK(s.vocab->value == 32000);
  CHECK(s.seq_len->value == 4096);
  REQUIRE(log.steps.size() == 40);
  CHECK(log.steps[0].step == 0);  // global_step counts from 0
  CHECK(log.steps[10].step_time_s == doctest::Approx(6.42).epsilon(0.02));
}

TEST_CASE("nemo log: a key stated twice with two values, and a log without any config") {
  CHECK_THROWS_WITH_AS(calibrate::parse_log(LogFramework::nemo,
                                            "model:\n  tensor_model_parallel_size: 2\n"
                                            "  micro_batch_size: 1\nmodel:\n  tensor_model_parallel_size: 4\n",
                                            "c.log"),
                       "c.log:5: tensor_model_parallel_size is '4' here but '2' at line 2", ConfigError);
  CHECK_THROWS_WITH_AS(calibrate::parse_log(LogFramework::nemo, "Training epoch 0, iteration 1/9 | x: 1\n", "e.log"),
                       doctest::Contains("e.log: no NeMo config dump"), ConfigError);
}

TEST_CASE("nemo log: a Megatron-Bridge run of shardplan's recipe override imports back to the same plan") {
  using test::emit_util::sample;
  const ModelDesc m = test::llama3_8b();
  std::vector<Estimate> plans = test::emit_util::samples();
  Estimate cp = sample(2, 1, 1, 4, 1, Recompute::full, Dtype::bf16);
  cp.plan.cp = 2;
  cp.plan.recompute_layers = 4;
  plans.push_back(cp);
  int round_trips = 0;
  for (const Estimate& e : plans) {
    CAPTURE(e.plan.tp);
    CAPTURE(e.plan.zero);
    if (e.plan.zero == 3) continue;  // FSDP2 is a DistributedInitConfig field, which the summary does not print
    std::string yaml;
    try {
      yaml = test::emit_util::emit(io::EmitFormat::nemo, e, m);
    } catch (const ConfigError& refused) {
      MESSAGE("emitter refused: " << std::string(refused.what()));
      continue;
    }
    calibrate::ImportOptions o;
    o.gpu = "h100-sxm5-80gb";
    o.model = &m;  // the summary names no vocabulary: the run's --model
    o.model_name = "llama-3-8b";
    o.gpus = e.plan.tp * e.plan.pp * e.plan.cp * e.plan.dp;  // nor the world size: --gpus
    const io::PublishedRun r = test::render::import_back(LogFramework::nemo, test::render::nemo_log(yaml), o);
    test::render::check_same_plan(r, e.plan, m);
    CHECK(r.framework == "nemo");
    ++round_trips;
  }
  CHECK(round_trips == 3);  // of 5: ZeRO-2 refused by the emitter, ZeRO-3 not visible in a summary
}
