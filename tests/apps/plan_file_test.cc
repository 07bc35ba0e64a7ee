#include "apps/plan_file.h"

#include <doctest/doctest.h>

#include <iterator>
#include <tuple>
#include <utility>

#include "modeler/io/report_json.h"
#include "modeler/problems.h"
#include "tests/modeler/test_fixtures.h"

using namespace shardplan;
using namespace shardplan::cli;

namespace {

/// predict's flag table parsed from `args`, then the plan file applied: what predict --plan FILE args... resolves.
struct Applied {
  std::string model;
  SystemFlags system;
  PlanFlags plan;
  std::vector<std::string> overridden;
  Plan resolved;
};

/// `args` parsed by `app` as a command line.
void parse(CLI::App* app, const std::vector<std::string>& args) {
  std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 takes arguments in reverse order
  app->parse(reversed);
}

/// The flags a bare plan file needs beside it, then `more`.
std::vector<std::string> model_system(std::vector<std::string> more = {}) {
  std::vector<std::string> args{"--model", "m", "--system", "s"};
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

Applied apply_flags(const io::PlanFile& file, std::vector<std::string> args, int gpus = 64) {
  CLI::App app;
  Applied a;
  app.add_option("--model", a.model);
  add_system_flags(&app, &a.system, false);
  add_plan_flags(&app, &a.plan);
  parse(&app, args);
  a.overridden = apply_plan_file(file, app, &a.model, &a.system, &a.plan);
  System sys;
  sys.gpus = a.system.gpus.value_or(gpus);
  a.resolved = resolve_plan(a.plan, sys);
  a.plan.app = nullptr;  // `app` ends here; what the file filled stays in from_file
  return a;
}

/// A bare plan file holding `p` (only the plan keys), read back as predict --plan reads it.
io::PlanFile bare_file(const Plan& p, const std::string& name = "plan.json") {
  return io::parse_plan_json(io::plan_json(p).dump(2), name);
}

/// An emitted plan file (kind shardplan-plan): `p` with the model, framework and system it was planned for on
/// 64 GPUs.
io::PlanFile emitted_file(const Plan& p, const std::string& model, const std::string& framework,
                          const std::string& name = "plan.json") {
  nlohmann::json j{{"schema_version", 1}, {"kind", "shardplan-plan"}, {"model", model}, {"plan", io::plan_json(p)}};
  j["inputs"] = io::inputs_json(io::PlanInputs{model, framework, "dgx-h100", "", 64, 0, 0, 0, 0});
  return io::parse_plan_json(j.dump(2), name);
}

/// An emitted-plan file for tp8 pp4 dp2 on 64 GPUs of dgx-h100.
io::PlanFile emitted() {
  Plan p = test::plan_of(8, 4, 2, 1, 1, 128, 8192);
  p.etp = 8;
  p.sequence_parallel = true;
  p.tp_comm_overlap = true;
  p.zero = 1;
  p.recompute = Recompute::selective;
  return emitted_file(p, "llama-3-70b", "torchtitan");
}

/// Every Plan field (and those of its member structs), in declaration order. A structured binding must name
/// every member, so this stops compiling when Plan gains a field: add the field here and to kPlanFieldNames, give
/// it a value off its default in every_field_set(), and write and read it (modeler/io/report_json.cc plan_keys(),
/// modeler/io/plan_json.cc read_plan, apps/plan_file.cc apply_plan_file) until the round trip below passes.
auto plan_fields(const Plan& p) {
  const auto& [tp, pp, vpp, dp, cp, ep, etp, tsp, zero, sequence_parallel, tp_comm_overlap, ep_comm_overlap, cp_kind,
               uneven_pipeline, pipeline_layout, mtp_layers, moe_imbalance, capacity_factor, moe_dispatcher,
               moe_max_nodes, moe_fp8_dispatch, sdp_keep, sdp_mask, sdp_granularity, micro_batch, global_batch, seq_len, recompute, recompute_layers,
               recompute_modules, precision, optimizer_offload, fp8_recipe, fp8_param_gather, dp_shard, zeropp,
               param_offload, offload_device, activation_offload_layers, finetune] = p;
  const auto& [quantized_weights, hpz_partition, quantized_gradients] = zeropp;
  const auto& [peft, lora_rank, lora_targets, lora_dropout, optimizer] = finetune;
  return std::tuple(tp, pp, vpp, dp, cp, ep, etp, tsp, zero, sequence_parallel, tp_comm_overlap, ep_comm_overlap,
                    cp_kind, uneven_pipeline, pipeline_layout, mtp_layers, moe_imbalance, capacity_factor, moe_dispatcher, moe_max_nodes,
                    moe_fp8_dispatch, sdp_keep, sdp_mask, sdp_granularity, micro_batch, global_batch, seq_len,
                    recompute, recompute_layers, recompute_modules, precision, optimizer_offload, fp8_recipe,
                    fp8_param_gather, dp_shard, quantized_weights, hpz_partition, quantized_gradients, param_offload,
                    offload_device, activation_offload_layers, peft, lora_rank, lora_targets, lora_dropout, optimizer);
}
constexpr const char* kPlanFieldNames[] = {
    "tp", "pp", "vpp", "dp", "cp", "ep", "etp", "tsp", "zero", "sequence_parallel", "tp_comm_overlap",
    "ep_comm_overlap", "cp_kind", "uneven_pipeline", "pipeline_layout", "mtp_layers", "moe_imbalance", "capacity_factor", "moe_dispatcher",
    "moe_max_nodes", "moe_fp8_dispatch", "sdp_keep", "sdp_mask", "sdp_granularity", "micro_batch", "global_batch",
    "seq_len", "recompute", "recompute_layers", "recompute_modules", "precision", "optimizer_offload", "fp8_recipe",
    "fp8_param_gather", "dp_shard", "zeropp.quantized_weights", "zeropp.hpz_partition", "zeropp.quantized_gradients",
    "param_offload", "offload_device", "activation_offload_layers", "finetune.peft", "finetune.lora_rank",
    "finetune.lora_targets", "finetune.lora_dropout", "finetune.optimizer"};
static_assert(std::tuple_size_v<decltype(plan_fields(Plan{}))> == std::size(kPlanFieldNames));

/// The names of the fields where `a` and `b` differ (equal: true) or agree (equal: false), joined by spaces.
template <size_t... I>
std::string fields_where(const Plan& a, const Plan& b, bool differ, std::index_sequence<I...>) {
  const auto x = plan_fields(a), y = plan_fields(b);
  std::string names;
  ((names += (std::get<I>(x) == std::get<I>(y)) != differ ? std::string(kPlanFieldNames[I]) + " " : ""), ...);
  return names;
}
std::string fields_where(const Plan& a, const Plan& b, bool differ) {
  return fields_where(a, b, differ, std::make_index_sequence<std::size(kPlanFieldNames)>());
}

/// A plan with every field off its default, each value one the flags can state.
Plan every_field_set() {
  Plan p;
  p.tp = 4;
  p.pp = 2;
  p.vpp = 3;
  p.dp = 2;
  p.cp = 2;
  p.ep = 2;
  p.etp = 2;
  p.tsp = 2;
  p.zero = 3;
  p.sequence_parallel = true;
  p.tp_comm_overlap = true;
  p.ep_comm_overlap = true;
  p.cp_kind = CpKind::allgather;
  p.uneven_pipeline = true;
  p.pipeline_layout = "Et|(tt|)*3mL";
  p.mtp_layers = 1;
  p.moe_imbalance = 1.5;
  p.capacity_factor = 1.25;
  p.moe_dispatcher = MoeDispatcher::hybridep;
  p.moe_max_nodes = 4;
  p.moe_fp8_dispatch = true;
  p.sdp_keep = 0.5;
  p.sdp_mask = SdpMask::backward;
  p.sdp_granularity = SdpGranularity::neuron;
  p.micro_batch = 2;
  p.global_batch = 96;
  p.seq_len = 8192;
  p.recompute = Recompute::selective;
  p.recompute_layers = 3;
  p.recompute_modules = kRecomputeMlp | kRecomputeMoeAct;
  p.precision = Dtype::fp8;
  p.optimizer_offload = 0.25;
  p.fp8_recipe = Fp8Recipe::blockwise;
  p.fp8_param_gather = false;
  p.dp_shard = 2;
  p.zeropp = ZeroPP{true, 2, true};
  p.param_offload = true;
  p.offload_device = OffloadDevice::nvme;
  p.activation_offload_layers = 5;
  p.finetune = Finetune{Peft::qlora, 16, kLoraQ | kLoraV, 0.05, Optimizer::adamw8bit};
  return p;
}
}  // namespace

TEST_SUITE("plan_file") {

TEST_CASE("every Plan field survives a plan file: written, read, applied to predict's flags and resolved") {
  const Plan p = every_field_set();
  REQUIRE(fields_where(p, Plan{}, /*differ=*/false) == "");  // each field is off its default, so a loss shows
  for (const bool emitted_form : {false, true}) {
    CAPTURE(emitted_form);
    // Inside an emitted plan the file carries the inputs predict needs; a bare one needs them from flags.
    const Applied a = emitted_form ? apply_flags(emitted_file(p, "m", "megatron-lm", "all.json"), {})
                                   : apply_flags(bare_file(p, "all.json"), model_system());
    CHECK(a.overridden.empty());
    CHECK(fields_where(a.resolved, p, /*differ=*/true) == "");
    // And again from what it resolved to: a plan file of a plan file is the same plan.
    CHECK(fields_where(apply_flags(bare_file(a.resolved, "again.json"), model_system()).resolved, p, true) == "");
  }
}

TEST_CASE("plan files: unset choices stay the framework's; fp4 GEMMs' nvfp4 recipe is their default") {
  const Applied a = apply_flags(bare_file(Plan{}, "d.json"), model_system());
  CHECK_FALSE(a.resolved.moe_dispatcher);
  CHECK_FALSE(a.resolved.fp8_recipe);
  CHECK_FALSE(a.resolved.fp8_param_gather);
  CHECK(a.plan.from_file.count("--fp8-param-gather") == 0);
  Plan fp4;
  fp4.precision = Dtype::fp4;
  fp4.fp8_recipe = Fp8Recipe::nvfp4;
  const Applied b = apply_flags(bare_file(fp4, "f.json"), model_system());
  CHECK(b.resolved.precision == Dtype::fp4);
  CHECK_FALSE(b.resolved.fp8_recipe);  // effective_fp8_recipe: nvfp4 for fp4 GEMMs, the same recipe
  // A flag beside the file replaces the file's fp8 parameter gather and is listed.
  Plan gather;
  gather.fp8_param_gather = true;
  const Applied c = apply_flags(bare_file(gather, "g.json"), model_system({"--no-fp8-param-gather"}));
  CHECK(c.overridden == std::vector<std::string>{"--no-fp8-param-gather"});
  CHECK(c.resolved.fp8_param_gather == false);
}

TEST_CASE("apply_plan_file: without flags the file's model, system, framework and plan come back") {
  const Applied a = apply_flags(emitted(), {});
  CHECK(a.model == "llama-3-70b");
  CHECK(a.system.system == "dgx-h100");
  CHECK(a.system.gpus == 64);
  CHECK(a.plan.framework == "torchtitan");
  CHECK(a.overridden.empty());
  CHECK(a.resolved.tp == 8);
  CHECK(a.resolved.pp == 4);
  CHECK(a.resolved.dp == 2);
  CHECK(a.resolved.etp == 8);
  CHECK(a.resolved.sequence_parallel);
  CHECK(a.resolved.tp_comm_overlap);
  CHECK(a.resolved.zero == 1);
  CHECK(a.resolved.global_batch == 128);
  CHECK(a.resolved.seq_len == 8192);
  CHECK(a.resolved.recompute == Recompute::selective);
}

TEST_CASE("apply_plan_file: a flag replaces its field and is listed; derived fields follow what they derive from") {
  const Applied a = apply_flags(emitted(), {"--mbs", "2", "--tp", "4", "--no-tp-overlap"});
  std::string replaced;
  for (const std::string& o : a.overridden) replaced += o + " ";
  CHECK(replaced == "--tp --no-tp-overlap --mbs ");
  CHECK(a.resolved.tp == 4);
  CHECK(a.resolved.dp == 4);   // gpus / (tp x pp) again, not the file's 2
  CHECK(a.resolved.etp == 4);  // follows tp, as the file's etp did
  CHECK(a.resolved.micro_batch == 2);
  CHECK(a.resolved.global_batch == 128);  // the training problem stays
  CHECK_FALSE(a.resolved.tp_comm_overlap);
  CHECK(a.resolved.sequence_parallel);  // the default at tp 4
  // Another system keeps the file's GPU count.
  const Applied b = apply_flags(emitted(), {"--system", "dgx-b200"});
  CHECK(b.system.system == "dgx-b200");
  CHECK(b.system.gpus == 64);
  CHECK(b.overridden == std::vector<std::string>{"--system"});
  CHECK(b.resolved.dp == 2);
}

TEST_CASE("apply_plan_file: a bare plan needs the model and system from flags") {
  const io::PlanFile bare = io::parse_plan_json("{\"tp\": 2}", "p.json");
  CHECK_THROWS_WITH_AS(apply_flags(bare, {}), "p.json: the plan names no model: give --model", ConfigError);
  CHECK_THROWS_WITH_AS(apply_flags(bare, {"--model", "m"}),
                       "p.json: the plan names no system: give --system CLUSTER or --gpu GPU --gpus N", ConfigError);
  const Applied a = apply_flags(bare, {"--model", "m", "--system", "dgx-h100", "--gpus", "8"});
  CHECK(a.resolved.tp == 2);
  CHECK(a.resolved.dp == 4);
}

TEST_CASE("check_flags_fit: flags that do not apply to the model or plan are errors naming why") {
  const ModelDesc dense = test::tiny_model();
  auto fit = [&](std::vector<std::string> args, const ModelDesc& m) {
    CLI::App app;
    PlanFlags f;
    add_plan_flags(&app, &f);
    parse(&app, args);
    System sys;
    sys.gpus = 8;
    check_flags_fit(f, m, resolve_plan(f, sys));
  };
  CHECK_NOTHROW(fit({"--tp", "2"}, dense));
  CHECK_THROWS_WITH_AS(fit({"--etp", "1"}, dense),
                       "--etp applies to mixture-of-experts models, and tiny is dense (no experts)", ConfigError);
  CHECK_THROWS_WITH_AS(fit({"--capacity-factor", "1.25", "--moe-imbalance", "1.2"}, dense),
                       "--capacity-factor applies to mixture-of-experts models, and tiny is dense (no experts)\n"
                       "--moe-imbalance applies to mixture-of-experts models, and tiny is dense (no experts)",
                       ConfigError);
  CHECK_THROWS_AS(fit({"--ep", "2"}, dense), ConfigError);
  CHECK_THROWS_AS(fit({"--ep-overlap"}, dense), ConfigError);
  CHECK_NOTHROW(fit({"--no-ep-overlap"}, dense));
  CHECK_THROWS_WITH_AS(fit({"--sp"}, dense),
                       "--sp needs tp > 1: sequence parallelism splits the norms and dropout over the tensor-parallel "
                       "group, and tp is 1",
                       ConfigError);
  CHECK_THROWS_AS(fit({"--tp-overlap"}, dense), ConfigError);
  CHECK_THROWS_AS(fit({"--cp-kind", "allgather"}, dense), ConfigError);
  CHECK_NOTHROW(fit({"--cp", "2", "--cp-kind", "allgather"}, dense));
  const ModelDesc moe = test::tiny_moe();
  CHECK_NOTHROW(fit({"--ep", "2", "--etp", "1", "--ep-overlap", "--capacity-factor", "1.25"}, moe));
  CHECK_THROWS_WITH_AS(fit({"--ep-overlap"}, moe),
                       "--ep-overlap hides the expert-parallel all-to-all, and ep is 1 (no all-to-all): give --ep N",
                       ConfigError);
}

TEST_CASE("check_flags_fit names the plan file's key when the value came from --plan") {
  const io::PlanFile f = io::parse_plan_json("{\"tp\": 1, \"tp_comm_overlap\": true}", "p.json");
  CHECK_THROWS_WITH_AS(
      [&] {
        const Applied a = apply_flags(f, model_system({"--gpus", "8"}));
        check_flags_fit(a.plan, test::tiny_model(), a.resolved);
      }(),
      "'tp_comm_overlap' of p.json needs tp > 1: with tp 1 there are no tensor-parallel collectives to overlap",
      ConfigError);
}

TEST_CASE("compare_with_file: now against the file's prediction, signed") {
  Estimate e;
  e.time.compute = Seconds(2.0);
  e.tokens_per_s_per_gpu = 1000;
  e.memory.weights = GiB(10);
  io::PredictedNumbers p;
  p.step_s = 2.0;
  p.tokens_per_s_per_gpu = 1100;
  p.memory_bytes = GiB(10).v;
  CHECK(compare_with_file(p, e) ==
        "step 2 s (file 2 s, +0.00%), 1,000 tokens/s/GPU (file 1,100, -9.09%), 10.00 GiB (file 10.00 GiB, +0.00%)");
}

}  // TEST_SUITE
