#include "calibrate/log_import.h"

#include <doctest/doctest.h>

#include "modeler/io/published_runs.h"
#include "tests/io/emit_test_util.h"

using namespace shardplan;
using namespace shardplan::calibrate;

namespace {

ParsedLog steps_log(std::vector<long> steps, double t = 2.0) {
  ParsedLog log;
  log.file = "s.log";
  log.framework = "megatron-lm";
  int line = 1;
  for (long s : steps) {
    StepRecord r;
    r.line = line++;
    r.step = s;
    r.step_time_s = t;
    log.steps.push_back(r);
  }
  return log;
}

}  // namespace

TEST_CASE("steady state: the first logged step and the next warm-up iterations are dropped") {
  SteadyState s = steady_state(steps_log({1, 2, 3, 4, 5, 11, 12, 13}), 10, std::nullopt);
  CHECK(s.warmup_dropped == 6);  // 1 and 2..11
  REQUIRE(s.kept.size() == 2);
  CHECK(s.kept[0].step == 12);
  // A log interval of 100: only the first record (1..100) is warm-up.
  s = steady_state(steps_log({100, 200, 300}), 10, std::nullopt);
  CHECK(s.warmup_dropped == 1);
  CHECK(s.kept.size() == 2);
  // A restart appended to the log (the step number goes back) is warm-up again.
  s = steady_state(steps_log({1, 20, 30, 5, 8, 40}), 10, std::nullopt);
  CHECK(s.warmup_dropped == 3);  // 1; then 5 (the restart) and 8 (within 10 of it)
  REQUIRE(s.kept.size() == 3);   // 20, 30 and 40
  CHECK(s.kept[2].step == 40);
}

TEST_CASE("steady state: several ranks' lines of one step are merged; another global batch is dropped") {
  ParsedLog log = steps_log({1, 20, 20, 21});
  log.steps[1].memory_gib = 60;
  log.steps[2].memory_gib = 62;
  log.steps[2].step_time_s = 2.2;
  log.steps[3].global_batch = 64;
  SteadyState s = steady_state(log, 10, 128);
  REQUIRE(s.kept.size() == 1);
  CHECK(s.kept[0].step_time_s == 2.2);  // the slowest rank
  CHECK(*s.kept[0].memory_gib == 62);   // the largest peak
  CHECK(s.ramp_dropped == 1);
}

TEST_CASE("build_run: contradictions with the command line name the line") {
  ParsedLog log = steps_log({1, 20, 21, 22});
  LogSettings& st = log.settings;
  st.layers = Stated<int>{32, 3};
  st.hidden = Stated<int>{4096, 4};
  st.ffn_hidden = Stated<int>{14336, 5};
  st.heads = Stated<int>{32, 6};
  st.vocab = Stated<int>{128256, 7};
  st.gated_mlp = Stated<bool>{true, 8};
  st.seq_len = Stated<int>{8192, 9};
  st.tp = Stated<int>{2, 10};
  st.global_batch = Stated<int>{64, 11};
  st.precision = Stated<std::string>{"bf16", 12};
  st.gpus = Stated<int>{16, 13};
  st.dp = Stated<int>{4, 14};
  ImportOptions o;
  o.gpu = "h100-sxm5-80gb";
  CHECK_THROWS_WITH_AS(build_run(log, o),
                       "s.log:14: data-parallel size 4 x tp 2 x pp 1 x cp 1 is not the 16 GPUs of the run",
                       ConfigError);
  st.dp.reset();
  o.gpus = 32;
  CHECK_THROWS_WITH_AS(build_run(log, o), "s.log:13: the log's world size is 16 GPUs, but --gpus says 32", ConfigError);
  o.gpus = 0;
  o.seq_len = 4096;
  CHECK_THROWS_WITH_AS(build_run(log, o), "s.log:9: sequence length 8192 in the log, but --seq says 4096", ConfigError);
  o.seq_len = 0;
  const ImportedRun r = build_run(log, o);
  CHECK(r.dp == 8);
  CHECK(r.steps_kept == 3);
  CHECK(r.tokens_per_s_per_gpu == doctest::Approx(64.0 * 8192 / (2.0 * 16)));
  CHECK(r.id == "s");
  CHECK(r.step_time_s == doctest::Approx(2.0));
}

TEST_CASE("state: a value stated twice must agree") {
  std::optional<Stated<int>> slot;
  state(slot, 4, 10, "tp", "f.log");
  state(slot, 4, 20, "tp", "f.log");
  CHECK(slot->line == 10);
  CHECK_THROWS_WITH_AS(state(slot, 8, 30, "tp", "f.log"), "f.log:30: tp 8 contradicts 4 stated at line 10",
                       ConfigError);
}

TEST_CASE("framework names: unknown ones get a suggestion") {
  CHECK(parse_log_framework("llm-foundry") == LogFramework::llm_foundry);
  CHECK_THROWS_WITH_AS(parse_log_framework("torchtitian"),
                       "--framework: unknown framework 'torchtitian' (megatron, nemo, torchtitan, deepspeed, "
                       "llm-foundry), did you mean 'torchtitan'?",
                       ConfigError);
}
