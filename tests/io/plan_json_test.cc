#include "modeler/io/plan_json.h"

#include <doctest/doctest.h>

#include <set>

#include "modeler/io/emit.h"
#include "modeler/io/report_json.h"
#include "modeler/problems.h"
#include "tests/modeler/test_fixtures.h"

using namespace shardplan;

namespace {

/// A plan with every field away from its default, so a field the reader drops shows.
Plan unusual_plan() {
  Plan p = test::plan_of(2, 4, 2, 2, 2, 64, 8192);
  p.vpp = 3;
  p.ep = 4;
  p.etp = 1;
  p.zero = 2;
  p.sequence_parallel = true;
  p.tp_comm_overlap = true;
  p.ep_comm_overlap = true;
  p.cp_kind = CpKind::allgather;
  p.uneven_pipeline = true;
  p.recompute = Recompute::selective;
  p.recompute_modules = kRecomputeCoreAttn | kRecomputeMoe;
  p.precision = Dtype::fp4;
  p.moe_imbalance = 1.5;
  p.capacity_factor = 1.25;
  p.sdp_keep = 0.5;
  p.sdp_mask = SdpMask::backward;
  p.sdp_granularity = SdpGranularity::neuron;
  p.moe_dispatcher = MoeDispatcher::deepep;
  p.moe_max_nodes = 4;
  p.moe_fp8_dispatch = true;
  p.fp8_param_gather = false;
  p.optimizer_offload = 0.25;
  p.dp_shard = 2;
  p.zeropp.quantized_weights = true;
  p.zeropp.hpz_partition = 2;
  p.param_offload = true;
  p.offload_device = OffloadDevice::nvme;
  p.activation_offload_layers = 3;
  p.finetune = Finetune{Peft::qlora, 16, kLoraQ | kLoraV, 0.1, Optimizer::adamw8bit};
  return p;
}

std::string bare(const Plan& p) { return io::plan_json(p).dump(2); }

}  // namespace

TEST_SUITE("plan_json") {

TEST_CASE("every field plan_json writes is read back") {
  const Plan p = unusual_plan();
  const io::PlanFile f = io::parse_plan_json(bare(p), "p.json");
  CHECK(f.kind == "plan");
  const io::PlanFields& r = f.plan;
  CHECK(r.tp == 2);
  CHECK(r.pp == 4);
  CHECK(r.vpp == 3);
  CHECK(r.dp == 2);
  CHECK(r.cp == 2);
  CHECK(r.ep == 4);
  CHECK(r.etp == 1);
  CHECK(r.zero == 2);
  CHECK(r.sequence_parallel == true);
  CHECK(r.tp_comm_overlap == true);
  CHECK(r.ep_comm_overlap == true);
  CHECK(r.uneven_pipeline == true);
  CHECK(r.cp_kind == CpKind::allgather);
  CHECK(r.micro_batch == 2);
  CHECK(r.global_batch == 64);
  CHECK(r.seq_len == 8192);
  CHECK(r.recompute == Recompute::selective);
  CHECK(r.recompute_modules == (kRecomputeCoreAttn | kRecomputeMoe));
  CHECK(r.precision == "nvfp4");  // plan_json writes fp4, the flag's name is nvfp4
  CHECK(r.moe_imbalance == 1.5);
  CHECK(r.capacity_factor == 1.25);
  CHECK(r.sdp_keep == 0.5);
  CHECK(r.sdp_mask == SdpMask::backward);
  CHECK(r.sdp_granularity == SdpGranularity::neuron);
  CHECK(r.moe_dispatcher == "deepep");
  CHECK(r.moe_max_nodes == 4);
  CHECK(r.moe_fp8_dispatch == true);
  CHECK(r.fp8_param_gather == false);
  CHECK(r.optimizer_offload == 0.25);
  CHECK(r.dp_shard == 2);
  CHECK(r.zeropp == "qwz+hpz2");
  CHECK(r.param_offload == true);
  CHECK(r.offload_device == "nvme");
  CHECK(r.activation_offload_layers == 3);
  CHECK(r.peft == "qlora");
  CHECK(r.lora_rank == 16);
  CHECK(r.lora_targets == "q+v");
  CHECK(r.lora_dropout == 0.1);
  CHECK(r.optimizer == "adamw8bit");
  CHECK_FALSE(f.inputs);
  CHECK_FALSE(f.predicted);
}

TEST_CASE("plan_json writes exactly the keys of plan_keys(), the list the reader reads") {
  const nlohmann::json j = io::plan_json(unusual_plan());
  std::set<std::string> written, listed;
  for (const auto& [key, value] : j.items()) written.insert(key);
  for (const io::PlanKey& k : io::plan_keys()) CHECK_MESSAGE(listed.insert(k.name).second, "listed twice: " << k.name);
  CHECK(written == listed);
  // Unset choices are null (the framework's), so a file says which settings it leaves open.
  const nlohmann::json d = io::plan_json(Plan{});
  CHECK(d["moe_dispatcher"].is_null());
  CHECK(d["fp8_recipe"].is_null());
  CHECK(d["fp8_param_gather"].is_null());
  const io::PlanFile back = io::parse_plan_json(d.dump(), "d.json");
  CHECK_FALSE(back.plan.moe_dispatcher);
  CHECK_FALSE(back.plan.fp8_param_gather);
}

TEST_CASE("fp8_recipe: spelled into the precision it scales; a recipe that contradicts it is an error") {
  auto precision_of = [](const std::string& text) { return io::parse_plan_json(text, "p.json").plan.precision; };
  CHECK(precision_of(R"({"precision": "fp8", "fp8_recipe": "blockwise"})") == "fp8-blockwise");
  CHECK(precision_of(R"({"precision": "fp8", "fp8_recipe": "mxfp8"})") == "mxfp8");
  CHECK(precision_of(R"({"precision": "mxfp8", "fp8_recipe": "mxfp8"})") == "mxfp8");
  CHECK(precision_of(R"({"precision": "fp4", "fp8_recipe": "nvfp4"})") == "nvfp4");
  CHECK(precision_of(R"({"precision": "fp8-delayed", "fp8_recipe": "delayed"})") == "fp8-delayed");
  CHECK(precision_of(R"({"precision": "fp8", "fp8_recipe": null})") == "fp8");
  CHECK_THROWS_WITH_AS(io::parse_plan_json(R"({"precision": "bf16", "fp8_recipe": "delayed"})", "p.json"),
                       "p.json:1: fp8_recipe: \"delayed\" contradicts precision \"bf16\" (a recipe scales fp8 and fp4 "
                       "GEMMs)",
                       ConfigError);
  CHECK_THROWS_WITH_AS(io::parse_plan_json(R"({"precision": "mxfp8", "fp8_recipe": "blockwise"})", "p.json"),
                       "p.json:1: fp8_recipe: \"blockwise\" contradicts precision \"mxfp8\"", ConfigError);
  CHECK_THROWS_WITH_AS(io::parse_plan_json(R"({"precision": "fp8", "fp8_recipe": "nvfp4"})", "p.json"),
                       "p.json:1: fp8_recipe: nvfp4 scales fp4 GEMMs, and precision is fp8 (give precision \"nvfp4\")",
                       ConfigError);
  CHECK_THROWS_WITH_AS(io::parse_plan_json(R"({"precision": "fp8", "fp8_recipe": "rowwise"})", "p.json"),
                       "p.json:1: fp8_recipe: expected delayed, tensorwise, blockwise, mxfp8 or nvfp4, got \"rowwise\"",
                       ConfigError);
}

TEST_CASE("MoE dispatch keys: the dispatcher by name, the node limit and fp8 dispatch, each checked") {
  CHECK_THROWS_WITH_AS(
      io::parse_plan_json(R"({"moe_dispatcher": "deepp"})", "p.json"),
      "p.json:1: moe_dispatcher: expected one of alltoall, allgather, deepep, hybridep, got \"deepp\"; "
      "did you mean 'deepep'?",
      ConfigError);
  CHECK_THROWS_WITH_AS(io::parse_plan_json(R"({"moe_max_nodes": -1})", "p.json"),
                       "p.json:1: moe_max_nodes: expected at least 0, got -1", ConfigError);
  CHECK_THROWS_WITH_AS(io::parse_plan_json(R"({"moe_fp8_dispatch": 1})", "p.json"),
                       "p.json:1: moe_fp8_dispatch: expected true or false, got 1", ConfigError);
  CHECK_THROWS_WITH_AS(io::parse_plan_json(R"({"fp8_param_gather": "on"})", "p.json"),
                       "p.json:1: fp8_param_gather: expected true or false, got \"on\"", ConfigError);
}

TEST_CASE("an emitted plan gives back its inputs, its plan and its predicted numbers") {
  Estimate e;
  e.plan = test::plan_of(2, 2, 4, 1, 1, 64, 4096);
  e.time.compute = Seconds(2.5);
  e.tokens_per_s_per_gpu = 1234.5;
  e.mfu = 0.5;
  e.memory.weights = GiB(10);
  const System sys = test::synthetic_system(16);
  io::PlanInputs in;
  in.model = "llama-3-8b";
  in.framework = "megatron-lm";
  in.gpu = "h100-sxm5-80gb";
  in.gpus = 16;
  in.nic_gbps = 400;
  io::EmitInput ei{e, sys, "llama-3-8b", "megatron-lm", 32};
  ei.inputs = &in;
  const io::PlanFile f = io::parse_plan_json(io::emit_plan(io::EmitFormat::json, ei), "e.json");
  CHECK(f.kind == "shardplan-plan");
  REQUIRE(f.inputs);
  CHECK(f.inputs->model == "llama-3-8b");
  CHECK(f.inputs->gpu == "h100-sxm5-80gb");
  CHECK(f.inputs->system.empty());
  CHECK(f.inputs->gpus == 16);
  CHECK(f.inputs->nic_gbps == 400);
  CHECK(f.inputs->gpus_per_node == 0);
  CHECK(f.plan.tp == 2);
  CHECK(f.plan.dp == 4);
  REQUIRE(f.predicted);
  CHECK(f.predicted->step_s == e.time.step().v);
  CHECK(f.predicted->tokens_per_s_per_gpu == 1234.5);
  CHECK(f.predicted->memory_bytes == e.memory.total().v);
}

TEST_CASE("a predict report is read through its plan, inputs and reported numbers") {
  Estimate e;
  e.plan = test::plan_of(1, 1, 8);
  e.time.compute = Seconds(1);
  e.tokens_per_s_per_gpu = 100;
  io::ReportContext ctx{"predict", "tiny.yaml", "dgx-h100", "h100", 8, "megatron-lm", "defaults"};
  nlohmann::json j = io::predict_json(ctx, e);
  io::PlanInputs in{"tiny.yaml", "megatron-lm", "dgx-h100", "", 8, 0, 0, 0, 0};
  j["inputs"] = io::inputs_json(in);
  j["model"] = io::model_json(test::tiny_model());
  const io::PlanFile f = io::parse_plan_json(j.dump(2), "r.json");
  CHECK(f.kind == "predict report");
  REQUIRE(f.inputs);
  CHECK(f.inputs->system == "dgx-h100");
  REQUIRE(f.predicted);
  CHECK(f.predicted->step_s == 1.0);
  CHECK(f.predicted->tokens_per_s_per_gpu == 100);
}

TEST_CASE("unknown keys name the file, the line and the key path, with a suggestion") {
  CHECK_THROWS_WITH_AS(io::parse_plan_json("{\n  \"tp\": 8,\n  \"sequence_paralel\": true\n}\n", "p.json"),
                       "p.json:3: sequence_paralel: unknown key, did you mean 'sequence_parallel'?", ConfigError);
  CHECK_THROWS_WITH_AS(io::parse_plan_json("{\"tp\": 8, \"mbs\": 2}", "p.json"),
                       "p.json:1: mbs: unknown key, did you mean 'micro_batch'?", ConfigError);
  const std::string emitted =
      "{\n \"schema_version\": 1,\n \"kind\": \"shardplan-plan\",\n \"model\": \"m\",\n \"plan\": {\n  \"tp\": 2,\n"
      "  \"zeor\": 1\n }\n}\n";
  CHECK_THROWS_WITH_AS(io::parse_plan_json(emitted, "e.json"), "e.json:7: plan.zeor: unknown key, did you mean 'zero'?",
                       ConfigError);
  const std::string top = "{\"schema_version\": 1, \"kind\": \"shardplan-plan\", \"plan\": {}, \"predictd\": {}}";
  CHECK_THROWS_WITH_AS(io::parse_plan_json(top, "e.json"), "e.json:1: predictd: unknown key, did you mean 'predicted'?",
                       ConfigError);
}

TEST_CASE("bad values, contradictions and other documents are errors naming them") {
  CHECK_THROWS_WITH_AS(io::parse_plan_json("{\"tp\": 0}", "p.json"), "p.json:1: tp: expected at least 1, got 0",
                       ConfigError);
  CHECK_THROWS_WITH_AS(io::parse_plan_json("{\"zero\": 4}", "p.json"), "p.json:1: zero: expected 0 to 3, got 4",
                       ConfigError);
  CHECK_THROWS_WITH_AS(io::parse_plan_json("{\"recompute\": \"ful\"}", "p.json"),
                       "p.json:1: recompute: expected one of none, selective, full, got \"ful\"; did you mean 'full'?",
                       ConfigError);
  CHECK_THROWS_WITH_AS(
      io::parse_plan_json("{\"dp\": 4, \"micro_batch\": 2, \"global_batch\": 64, \"microbatches_per_step\": 4}",
                          "p.json"),
      "p.json:1: microbatches_per_step: 4 contradicts global_batch / (micro_batch x dp) = 64 / (2 x 4) = 8",
      ConfigError);
  // The product micro_batch x dp in 64 bits: two degrees near 2^31 do not overflow the check.
  CHECK_THROWS_WITH_AS(io::parse_plan_json(R"({"dp": 2000000000, "micro_batch": 2000000000, "global_batch": 1,
                                              "microbatches_per_step": 1})",
                                           "p.json"),
                       "p.json:2: microbatches_per_step: 1 contradicts global_batch / (micro_batch x dp) = 1 / "
                       "(2000000000 x 2000000000) = 0",
                       ConfigError);
  CHECK_THROWS_WITH_AS(io::parse_plan_json("{\"recompute\": \"full\", \"recompute_modules\": [\"mlp\"]}", "p.json"),
                       "p.json:1: recompute_modules: modules apply to selective recompute, not recompute \"full\"",
                       ConfigError);
  CHECK_THROWS_WITH_AS(
      io::parse_plan_json("{\"schema_version\": 2, \"kind\": \"shardplan-plan\", \"plan\": {}}", "e.json"),
      "e.json:1: schema_version: this shardplan reads schema 1, got 2 (written by a newer shardplan)", ConfigError);
  CHECK_THROWS_WITH_AS(io::parse_plan_json("{\"schema_version\": 1, \"context\": {\"command\": \"search\"}}", "s.json"),
                       "s.json:1: context: a search report is not one plan: give a predict --json report, a search "
                       "--emit json plan or a plan object (docs/plan-json.md)",
                       ConfigError);
  CHECK_THROWS_AS(io::parse_plan_json("{\"name\": \"x\"}", "x.json"), ConfigError);
  CHECK_THROWS_AS(io::parse_plan_json("[1, 2]", "x.json"), ConfigError);
  try {
    io::parse_plan_json("{\n  \"tp\": 8,\n  \"pp\" 2\n}", "bad.json");
    FAIL("expected a ConfigError");
  } catch (const ConfigError& e) {
    CHECK(std::string(e.what()).rfind("bad.json:3: not valid JSON: ", 0) == 0);
  }
  // A number beyond double's range (fuzz_plan_json finding: it escaped as nlohmann's out_of_range).
  CHECK_THROWS_WITH_AS(io::parse_plan_json("{\n  \"tp\": 8,\n  \"bubble_s\": 0.1E7162947142\n}", "big.json"),
                       "big.json:3: bubble_s: number 0.1E7162947142 is out of range (beyond +-1.8e308)", ConfigError);
}

TEST_CASE("inputs: one of system and gpu; the standard-node overrides only with gpu") {
  const std::string both =
      "{\"schema_version\": 1, \"kind\": \"shardplan-plan\", \"plan\": {}, \"inputs\": {\"model\": \"m\", \"gpus\": "
      "8, \"system\": \"dgx-h100\", \"gpu\": \"h100-sxm5-80gb\"}}";
  CHECK_THROWS_WITH_AS(io::parse_plan_json(both, "e.json"),
                       "e.json:1: inputs: give one of 'inputs.system' (a cluster) and 'inputs.gpu' (a GPU)",
                       ConfigError);
  const std::string nic =
      "{\"schema_version\": 1, \"kind\": \"shardplan-plan\", \"plan\": {}, \"inputs\": {\"model\": \"m\", \"gpus\": "
      "8, \"system\": \"dgx-h100\", \"nic_gbps\": 400}}";
  CHECK_THROWS_AS(io::parse_plan_json(nic, "e.json"), ConfigError);
  io::PlanInputs in{"m", "nemo", "", "b200", 16, 4, 0, 800, 0};
  const nlohmann::json j = io::inputs_json(in);
  CHECK(j["system"].is_null());
  CHECK(j["gpus_per_node"] == 4);
  CHECK(j["nvlink_domain"].is_null());
}

}  // TEST_SUITE
