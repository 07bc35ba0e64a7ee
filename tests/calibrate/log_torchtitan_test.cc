#include <doctest/doctest.h>

#include "modeler/io/yaml_reader.h"
#include "shardplan_source_dir.h"
#include "tests/calibrate/log_render.h"
#include "tests/io/emit_test_util.h"

using namespace shardplan;
using calibrate::LogFramework;

namespace {

std::string fixture(const std::string& name) {
  return io::read_file(SHARDPLAN_SOURCE_DIR "/tests/data/logs/torchtitan/" + name);
}

}  // namespace

TEST_CASE("torchtitan log: the config dump and the coloured step lines of every rank prefix") {
  const auto log = calibrate::parse_log(LogFramework::torchtitan, fixture("llama3_8b_fsdp_8gpu.log"), "t.log");
  const auto& s = log.settings;
  CHECK(s.tp->value == 1);
  CHECK(!s.dp);               // data_parallel_shard_degree -1: the GPUs left over, from --gpus
  CHECK(s.zero->value == 3);  // FSDP, reshard "default" without pipelining
  CHECK(s.local_batch->value == 1);
  CHECK(!s.global_batch);  // global_batch_size -1: local x dp
  CHECK(s.seq_len->value == 8192);
  CHECK(s.recompute->value == "selective");
  CHECK(s.precision->value == "bf16");
  CHECK(s.model_hint->value == "llama-3-8b");
  REQUIRE(log.steps.size() == 30);
  CHECK(log.steps[4].step == 5);
  CHECK(*log.steps[4].memory_gib == doctest::Approx(62.84));
  CHECK(log.steps[4].step_time_s == 0);  // the line gives tps only
  calibrate::ImportOptions o;
  o.gpu = "h100-sxm5-80gb";
  const ModelDesc m = test::emit_util::llama8b();
  o.model = &m;
  o.model_name = "llama8b";
  o.gpus = 8;
  const auto r = calibrate::build_run(log, o);
  CHECK(r.dp == 8);
  CHECK(r.global_batch == 8);
  // step = global_batch x seq / (tps x GPUs): 8 x 8192 / (4267 x 8) = 1.92 s
  CHECK(r.step_time_s == doctest::Approx(1.92).epsilon(0.01));
  CHECK(*r.peak_memory_gib == doctest::Approx(62.84));
}

TEST_CASE("torchtitan log: main's dump (model_spec, token counts, activation_checkpoint null)") {
  const std::string text =
      "[titan] INFO - Running with configs: {\n  \"model_spec\": {\"name\": \"llama3\", \"flavor\": \"70B\"},\n"
      "  \"parallelism\": {\"tensor_parallel_degree\": 8, \"data_parallel_shard_degree\": 4,\n"
      "    \"enable_sequence_parallel\": true},\n"
      "  \"training\": {\"num_tokens_per_microbatch_per_dp_rank\": 8192, \"num_tokens_per_train_step\": 262144,\n"
      "    \"max_context_length\": 8192},\n  \"activation_checkpoint\": null\n}\n"
      "[titan] INFO - step:  1  loss: 9  memory: 70.00GiB(88.50%)  tps: 900  tflops: 1.00  mfu: 1.00%\n";
  const auto log = calibrate::parse_log(LogFramework::torchtitan, text, "m.log");
  const auto& s = log.settings;
  CHECK(s.model_hint->value == "llama-3-70b");
  CHECK(s.tp->value == 8);
  CHECK(s.dp->value == 4);
  CHECK(s.sequence_parallel->value);
  CHECK(s.global_batch->value == 32);  // 262144 tokens / 8192
  CHECK(s.micro_batch->value == 1);
  CHECK(s.seq_len->value == 8192);
  CHECK(s.recompute->value == "none");
  CHECK(s.recompute->line == 7);
}

TEST_CASE("torchtitan log: a truncated or unreadable config dump, and a log without one") {
  CHECK_THROWS_WITH_AS(calibrate::parse_log(LogFramework::torchtitan,
                                            "a\n[titan] INFO - Running with configs: {\n  \"training\": {\n", "t.log"),
                       "t.log:2: the config dump opened here does not close: the log is truncated", ConfigError);
  CHECK_THROWS_WITH_AS(calibrate::parse_log(LogFramework::torchtitan, "Running with configs: {\"a\": 1,}\n", "j.log"),
                       doctest::Contains("j.log:1: the config dump is not JSON"), ConfigError);
  CHECK_THROWS_WITH_AS(calibrate::parse_log(LogFramework::torchtitan,
                                            "Running with configs: {\"parallelism\": {\"tensor_parallel_degree\": "
                                            "\"2\"}}\n",
                                            "k.log"),
                       "k.log:1: parallelism.tensor_parallel_degree: expected an integer that fits 32 bits, got \"2\"",
                       ConfigError);
  CHECK_THROWS_WITH_AS(calibrate::parse_log(LogFramework::torchtitan,
                                            "Running with configs: {\"parallelism\": {\"tensor_parallel_degree\": "
                                            "4294967298}}\n",
                                            "h.log"),
                       "h.log:1: parallelism.tensor_parallel_degree: expected an integer that fits 32 bits, got "
                       "4294967298",
                       ConfigError);
  CHECK_THROWS_WITH_AS(calibrate::parse_log(LogFramework::torchtitan,
                                            "Running with configs: {\"parallelism\": {\"enable_sequence_parallel\": "
                                            "1}}\n",
                                            "b.log"),
                       "b.log:1: parallelism.enable_sequence_parallel: expected true or false, got 1", ConfigError);
  CHECK_THROWS_WITH_AS(calibrate::parse_log(LogFramework::torchtitan, "step:  1  loss: 3  tps: 100\n", "n.log"),
                       doctest::Contains("n.log: no torchtitan config dump"), ConfigError);
}

TEST_CASE("torchtitan log: a run of shardplan's TOML job config imports back to the same plan") {
  using test::emit_util::sample;
  const ModelDesc m = test::emit_util::llama8b();
  std::vector<Estimate> plans = test::emit_util::samples();
  plans.push_back(sample(2, 2, 1, 4, 3, Recompute::selective, Dtype::bf16));  // FSDP + TP + PP
  plans.push_back(sample(4, 1, 1, 4, 2, Recompute::full, Dtype::fp8));        // FSDP without reshard, float8
  plans.push_back(sample(2, 4, 2, 2, 3, Recompute::none, Dtype::bf16));       // interleaved pipeline
  int round_trips = 0;
  for (const Estimate& e : plans) {
    CAPTURE(e.plan.tp);
    CAPTURE(e.plan.pp);
    CAPTURE(e.plan.zero);
    // The TOML emitter writes mixed_precision_param "bfloat16" for an fp16 plan (torchtitan has no fp16 mixed
    // precision), so such a run imports as bf16: the emitter should refuse the plan instead (reported).
    if (e.plan.precision == Dtype::fp16) continue;
    std::string toml;
    try {
      toml = test::emit_util::emit(io::EmitFormat::torchtitan_toml, e, m);
    } catch (const ConfigError& refused) {
      MESSAGE("emitter refused: " << std::string(refused.what()));
      continue;
    }
    calibrate::ImportOptions o;
    o.gpu = "h100-sxm5-80gb";
    o.model = &m;  // the dump names the flavour (llama3 8B); the CLI loads models/llama-3-8b for it
    o.model_name = "llama8b";
    const int gpus = e.plan.tp * e.plan.pp * e.plan.cp * e.plan.dp;
    o.gpus = gpus;
    const io::PublishedRun r =
        test::render::import_back(LogFramework::torchtitan, test::render::torchtitan_log(toml, gpus), o);
    test::render::check_same_plan(r, e.plan, m);
    if (e.plan.precision == Dtype::fp8) CHECK(*r.plan.fp8_recipe == Fp8Recipe::tensorwise);
    ++round_trips;
  }
  CHECK(round_trips == 5);  // of 7: ZeRO-1 refused by the emitter, the fp16 plan skipped (above)
  MESSAGE("torchtitan round trips: " << round_trips << " of " << plans.size());
}
