#include <doctest/doctest.h>

#include "modeler/io/yaml_reader.h"
#include "shardplan_source_dir.h"
#include "tests/calibrate/log_render.h"
#include "tests/io/emit_test_util.h"

using namespace shardplan;
using calibrate::LogFramework;

namespace {

std::string fixture(const std::string& name) {
  return io::read_file(SHARDPLAN_SOURCE_DIR "/tests/data/logs/deepspeed/" + name);
}

calibrate::ImportOptions opts() {
  calibrate::ImportOptions o;
  o.gpu = "h100-sxm5-80gb";
  return o;
}

}  // namespace

TEST_CASE("deepspeed log: Megatron-DeepSpeed arguments, the DeepSpeed config print and throughput-timer lines") {
  const auto log =
      calibrate::parse_log(LogFramework::deepspeed, fixture("gpt_1.3b_megatron_deepspeed_8gpu.log"), "d.log");
  CHECK(log.framework == "megatron-deepspeed");
  const auto& s = log.settings;
  CHECK(s.tp->value == 2);
  CHECK(s.dp->value == 4);  // DeepSpeed's world_size is the data-parallel world
  CHECK(s.global_batch->value == 256);
  CHECK(s.micro_batch->value == 4);
  CHECK(s.zero->value == 1);  // zero_optimization.stage, agreeing with --zero-stage
  CHECK(s.precision->value == "bf16");
  CHECK(s.vocab->value == 50304);
  REQUIRE(log.steps.size() == 25);
  // CurrSamplesPerSec = train_batch_size / step seconds (deepspeed/utils/timer.py)
  CHECK(log.steps[5].step_time_s == doctest::Approx(2.21).epsilon(0.02));
  CHECK(*log.steps[5].memory_gib == doctest::Approx(31.47));
  const auto r = calibrate::build_run(log, opts());
  CHECK(r.gpus == 8);
  CHECK(r.warmup_dropped == 11);
  CHECK(r.peak_memory_gib == doctest::Approx(31.47));
}

TEST_CASE("deepspeed log: the older 'E/N, RunningAvgSamplesPerSec' timer line and plain DeepSpeed") {
  const std::string text =
      "[2022-12-20 08:26:20,000] [INFO] [config.py:957:print] DeepSpeedEngine configuration:\n"
      "[2022-12-20 08:26:20,000] [INFO] [config.py:957:print]   world_size ................... 8\n"
      "[2022-12-20 08:26:20,000] [INFO] [config.py:961:print_user_config]   json = {\n"
      "    \"train_batch_size\":64,\n    \"train_micro_batch_size_per_gpu\":8,\n"
      "    \"zero_optimization\":{\n        \"stage\":2\n    },\n    \"fp16\":{\n        \"enabled\":true\n    }\n}\n"
      "[2022-12-20 08:26:26,101] [INFO] [timer.py:197:stop] 0/17, RunningAvgSamplesPerSec=158.3, "
      "CurrSamplesPerSec=159.6, MemAllocated=1.75GB, MaxMemAllocated=2.6GB\n";
  const auto log = calibrate::parse_log(LogFramework::deepspeed, text, "p.log");
  CHECK(log.framework == "other");
  CHECK(log.settings.zero->value == 2);
  CHECK(log.settings.precision->value == "fp16");
  CHECK(log.settings.dp->value == 8);
  REQUIRE(log.steps.size() == 1);
  CHECK(log.steps[0].step == 17);
  CHECK(log.steps[0].step_time_s == doctest::Approx(64 / 159.6));
  // Plain DeepSpeed states no architecture or sequence length: --model and --seq give them.
  CHECK_THROWS_WITH_AS(calibrate::build_run(log, opts()),
                       "p.log: the log states no layer count; pass --model NAME|FILE", ConfigError);
}

TEST_CASE("deepspeed log: --zero-stage contradicting the DeepSpeed config, and a truncated config") {
  CHECK_THROWS_WITH_AS(calibrate::parse_log(LogFramework::deepspeed, fixture("bad_zero_conflict.log"), "z.log"),
                       "z.log:44: zero_optimization.stage 1 contradicts 2 stated at line 28", ConfigError);
  CHECK_THROWS_WITH_AS(
      calibrate::parse_log(LogFramework::deepspeed,
                           "x\n[t] [INFO] [config.py:1:print_user_config]   json = {\n  \"a\": 1,\n", "t.log"),
      "t.log:2: the DeepSpeed config JSON opened here does not close: the log is truncated", ConfigError);
  // An attribute line whose value is only spaces (found by a mutation run under ASan/UBSan).
  CHECK_THROWS_WITH_AS(calibrate::parse_log(LogFramework::deepspeed,
                                            "DeepSpeedEngine configuration:\n[t] [INFO] [config.py:1:print]   "
                                            "world_size .....   \n",
                                            "w.log"),
                       "w.log:2: world_size: expected an integer, got ''", ConfigError);
  // A null or non-boolean "enabled" (found by fuzz_training_log: it escaped as nlohmann's type_error), and a stage
  // beyond 32 bits.
  const std::string cfg = "[t] [INFO] [config.py:1:print_user_config]   json = {";
  CHECK_THROWS_WITH_AS(calibrate::parse_log(LogFramework::deepspeed, cfg + "\"bf16\": {\"enabled\": null}}\n", "e.log"),
                       "e.log:1: bf16.enabled: expected true or false, got null", ConfigError);
  CHECK_THROWS_WITH_AS(
      calibrate::parse_log(LogFramework::deepspeed, cfg + "\"zero_optimization\": {\"stage\": 4294967299}}\n", "s.log"),
      "s.log:1: stage: expected an integer that fits 32 bits, got 4294967299", ConfigError);
  CHECK_THROWS_WITH_AS(calibrate::parse_log(LogFramework::deepspeed, "step 1\n", "n.log"),
                       doctest::Contains("n.log: no DeepSpeed configuration print"), ConfigError);
}

TEST_CASE("deepspeed log: a Megatron-DeepSpeed run emitted by shardplan imports back to the same plan") {
  using test::emit_util::sample;
  const ModelDesc m = test::emit_util::llama8b();
  std::vector<Estimate> plans = test::emit_util::samples();
  plans.push_back(sample(4, 2, 1, 2, 1, Recompute::full, Dtype::bf16));
  plans.push_back(sample(1, 1, 1, 16, 3, Recompute::selective, Dtype::fp16));
  int round_trips = 0;
  for (const Estimate& e : plans) {
    CAPTURE(e.plan.tp);
    CAPTURE(e.plan.pp);
    CAPTURE(e.plan.zero);
    std::string script;
    try {
      script = test::emit_util::emit(io::EmitFormat::deepspeed, e, m);
    } catch (const ConfigError& refused) {
      MESSAGE("emitter refused: " << std::string(refused.what()));
      continue;
    }
    const int gpus = e.plan.tp * e.plan.pp * e.plan.cp * e.plan.dp;
    const io::PublishedRun r =
        test::render::import_back(LogFramework::deepspeed, test::render::deepspeed_log(script, gpus, m.vocab), opts());
    test::render::check_same_plan(r, e.plan, m);
    CHECK(r.framework == "megatron-deepspeed");
    ++round_trips;
  }
  CHECK(round_trips == 5);  // of 6: the interleaved (vpp 2) fp8 sample is refused by the emitter
}
