#include "calibrate/log_megatron.h"

#include <doctest/doctest.h>

#include "modeler/io/yaml_reader.h"
#include "shardplan_source_dir.h"
#include "tests/calibrate/log_render.h"
#include "tests/io/emit_test_util.h"

using namespace shardplan;
using calibrate::LogFramework;

namespace {

std::string fixture(const std::string& name) {
  return io::read_file(SHARDPLAN_SOURCE_DIR "/tests/data/logs/megatron/" + name);
}

calibrate::ImportOptions opts() {
  calibrate::ImportOptions o;
  o.gpu = "h100-sxm5-80gb";
  o.gpus_per_node = 8;
  return o;
}

/// The plans the round trips emit: the emitter tests' samples and more (context parallelism, virtual stages,
/// block recompute, fp8 recipes; the synthetic system is no Blackwell, so no MXFP8 plan).
std::vector<Estimate> plans() {
  using test::emit_util::sample;
  std::vector<Estimate> v = test::emit_util::samples();
  Estimate cp = sample(2, 1, 1, 4, 1, Recompute::none, Dtype::bf16);
  cp.plan.cp = 2;
  cp.plan.seq_len = 16384;
  v.push_back(cp);
  Estimate block = sample(4, 2, 4, 2, 1, Recompute::full, Dtype::bf16);
  block.plan.recompute_layers = 2;
  v.push_back(block);
  Estimate tensorwise = sample(8, 1, 1, 2, 0, Recompute::selective, Dtype::fp8);
  tensorwise.plan.fp8_recipe = Fp8Recipe::tensorwise;
  tensorwise.plan.tp_comm_overlap = true;
  v.push_back(tensorwise);
  Estimate blockwise = sample(2, 2, 1, 4, 1, Recompute::none, Dtype::fp8);
  blockwise.plan.fp8_recipe = Fp8Recipe::blockwise;
  v.push_back(blockwise);
  return v;
}

}  // namespace

TEST_CASE("megatron log: the fixture's arguments, steps and memory report") {
  const auto log = calibrate::parse_log(LogFramework::megatron, fixture("llama3_8b_tp2_pp2_16gpu.log"), "m.log");
  const auto& s = log.settings;
  CHECK(s.tp->value == 2);
  CHECK(s.pp->value == 2);
  CHECK(s.dp->value == 4);
  CHECK(s.gpus->value == 16);
  CHECK(s.kv_heads->value == 8);
  CHECK(s.vocab->value == 128256);  // from the " > padded vocab" line
  CHECK(s.zero->value == 1);
  CHECK(s.recompute->value == "selective");
  CHECK(s.precision->value == "bf16");
  CHECK(s.tied_embeddings->value == false);
  CHECK(log.steps.size() == 40);
  CHECK(log.memory_gib.size() == 4);
  // max reserved of rank 10: 61440 + 640 MiB
  CHECK(std::max_element(log.memory_gib.begin(), log.memory_gib.end(), [](auto a, auto b) {
          return a.value < b.value;
        })->value == doctest::Approx((61440.0 + 640) / 1024));
  const calibrate::ImportedRun r = calibrate::build_run(log, opts());
  CHECK(r.warmup_dropped == 11);  // iteration 1 and the 10 after it
  CHECK(r.steps_kept == 29);
  CHECK(r.step_time_s == doctest::Approx(7.95).epsilon(0.01));
  CHECK(r.tokens_per_s_per_gpu == doctest::Approx(128.0 * 8192 / (r.step_time_s * 16)));
}

TEST_CASE("megatron log: an argument line with a 48-character name and an empty value") {
  const std::string name(48, 'x');
  const std::string text = "---- arguments ----\n  " + name +
                           "  7\n  tensor_model_parallel_size ... \n"
                           "---- end of arguments ----\n";
  const auto a = calibrate::megatron::read_arguments(calibrate::logtext::clean_lines(text), "a.log");
  CHECK(a.values.at(name).value == "7");
  CHECK(a.values.at("tensor_model_parallel_size").value == "");
  CHECK(a.start_line == 1);
}

TEST_CASE("megatron log: virtual stages from num_layers_per_virtual_pipeline_stage when vpp is not printed") {
  const std::string text =
      "--- arguments ---\n  num_layers .... 32\n  pipeline_model_parallel_size .... 4\n"
      "  num_layers_per_virtual_pipeline_stage .... 2\n--- end of arguments ---\n";
  calibrate::LogSettings s;
  std::vector<std::string> notes;
  calibrate::megatron::settings_from_arguments(
      calibrate::megatron::read_arguments(calibrate::logtext::clean_lines(text), "v.log"), "v.log", &s, &notes);
  CHECK(s.vpp->value == 4);  // 32 / (4 x 2)
}

TEST_CASE("megatron log: malformed logs name the file and line") {
  const auto parse = [](const std::string& name) {
    const auto log = calibrate::parse_log(LogFramework::megatron, fixture(name), name);
    return calibrate::build_run(log, opts());
  };
  CHECK_THROWS_WITH_AS(parse("bad_truncated_arguments.log"),
                       "bad_truncated_arguments.log:3: the arguments block opened here has no '-- end of arguments --' "
                       "line: the log is truncated",
                       ConfigError);
  CHECK_THROWS_WITH_AS(parse("bad_conflicting_arguments.log"),
                       "bad_conflicting_arguments.log:64: argument global_batch_size is '256' here but '128' at line "
                       "14 (two runs in one log?)",
                       ConfigError);
  CHECK_THROWS_WITH_AS(parse("bad_no_steady_state.log"),
                       doctest::Contains("bad_no_steady_state.log:56: no steady-state steps: the 3 logged steps are "
                                         "all warm-up"),
                       ConfigError);
  CHECK_THROWS_WITH_AS(parse("bad_no_iterations.log"),
                       doctest::Contains("bad_no_iterations.log: no training-step lines"), ConfigError);
  CHECK_THROWS_WITH_AS(calibrate::parse_log(LogFramework::megatron,
                                            "iteration 1/ 2 | elapsed time per iteration "
                                            "(ms): 5.0 |\n",
                                            "x.log"),
                       doctest::Contains("x.log: no Megatron-LM arguments block"), ConfigError);
  CHECK_THROWS_WITH_AS(
      calibrate::parse_log(LogFramework::megatron,
                           "--- arguments ---\n  num_layers .. 3\n--- end of arguments ---\n iteration "
                           "x | elapsed time per iteration (ms): 5.0 |\n",
                           "y.log"),
      "y.log:4: an iteration line without a readable iteration number and time", ConfigError);
}

TEST_CASE("megatron log: a run emitted by shardplan imports back to the same plan") {
  const ModelDesc m = test::llama3_8b();
  int round_trips = 0;
  for (const Estimate& e : plans()) {
    CAPTURE(e.plan.tp);
    CAPTURE(e.plan.pp);
    CAPTURE(e.plan.zero);
    std::string script;
    try {
      script = test::emit_util::emit(io::EmitFormat::megatron, e, m);
    } catch (const ConfigError& refused) {
      MESSAGE("emitter refused: " << std::string(refused.what()));
      continue;  // a plan Megatron-LM cannot run (ZeRO-2): the emitter refuses it, nothing to import
    }
    const io::PublishedRun r = test::render::import_back(
        LogFramework::megatron, test::render::megatron_log(script, e.plan.tp * e.plan.pp * e.plan.cp * e.plan.dp),
        opts());
    test::render::check_same_plan(r, e.plan, m);
    if (e.plan.precision == Dtype::fp8) {
      REQUIRE(r.plan.fp8_recipe);
      CHECK(*r.plan.fp8_recipe == (e.plan.fp8_recipe ? *e.plan.fp8_recipe : Fp8Recipe::delayed));
    }
    if (e.plan.tp_comm_overlap) CHECK(*r.plan.tp_comm_overlap);
    CHECK(r.framework == "megatron-lm");
    ++round_trips;
  }
  CHECK(round_trips == 7);  // 8 plans, ZeRO-2 refused by the emitter
}

TEST_CASE("megatron log: a mixture-of-experts run imports back with its experts and expert parallelism") {
  ModelDesc m = test::llama3_8b();  // Mixtral-shaped: 8 experts of the dense width, top-2
  m.name = "moe8b";
  MoeDesc e;
  e.experts = 8;
  e.top_k = 2;
  e.expert_ffn_hidden = 14336;
  m.moe = e;
  Estimate est = test::emit_util::sample(2, 1, 1, 8, 1, Recompute::none, Dtype::bf16);
  est.plan.ep = 4;
  est.plan.etp = 1;
  const std::string script = test::emit_util::emit(io::EmitFormat::megatron, est, m);
  const io::PublishedRun r =
      test::render::import_back(LogFramework::megatron, test::render::megatron_log(script, 16), opts());
  test::render::check_same_plan(r, est.plan, m);
  CHECK(r.moe);
  REQUIRE(r.model.moe);
  CHECK(r.model.moe->experts == 8);
  CHECK(r.model.moe->top_k == 2);
  CHECK(r.model.moe->expert_ffn_hidden == 14336);
  CHECK(r.plan.plan.ep == 4);
  REQUIRE(r.etp);
  CHECK(*r.etp == 1);
}
