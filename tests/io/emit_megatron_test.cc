#include <doctest/doctest.h>
#include <yaml-cpp/yaml.h>

#include <nlohmann/json.hpp>

#include "tests/io/emit_test_util.h"

using namespace shardplan;
using namespace shardplan::test::emit_util;

TEST_CASE("emit megatron: a torchrun script with the architecture and every plan flag a Megatron-LM argument") {
  for (const Estimate& e : samples()) {
    if (e.plan.zero == 2) {
      CHECK_THROWS_WITH_AS(emit(io::EmitFormat::megatron, e), doctest::Contains("Megatron-LM has no ZeRO-2"),
                           ConfigError);
      continue;
    }
    const std::string text = emit(io::EmitFormat::megatron, e);
    CHECK(text.rfind("#!/usr/bin/env bash\n", 0) == 0);
    CHECK(text.find("# targets Megatron-LM main d98e8a6") != std::string::npos);
    CHECK(text.find("NNODES=2\nGPUS_PER_NODE=8\n") != std::string::npos);
    CHECK(text.find("torchrun --nnodes \"$NNODES\" --nproc-per-node \"$GPUS_PER_NODE\"") != std::string::npos);
    for (const std::string& flag : script_flags(text)) {
      INFO(flag);
      CHECK(io::is_launcher_option("megatron", flag));
    }
    CHECK(flag_value(text, "--num-layers") == "32");
    CHECK(flag_value(text, "--num-query-groups") == "8");
    CHECK(flag_value(text, "--swiglu") == "");
    CHECK(flag_value(text, "--normalization") == "RMSNorm");
    CHECK(flag_value(text, "--tensor-model-parallel-size") == std::to_string(e.plan.tp));
    // --overlap-param-gather only with the distributed optimizer (arguments.py validate_args)
    if (flag_value(text, "--overlap-param-gather") == "") CHECK(flag_value(text, "--use-distributed-optimizer") == "");
  }
  const std::string t = emit(io::EmitFormat::megatron, sample(2, 4, 2, 2, 1, Recompute::selective, Dtype::fp8));
  CHECK(flag_value(t, "--num-layers-per-virtual-pipeline-stage") == "4");  // 32 layers / (4 x 2)
  CHECK(flag_value(t, "--fp8-format") == "hybrid");
  CHECK(flag_value(t, "--fp8-recipe") == "delayed");  // Megatron-Core's default recipe
  CHECK(flag_value(t, "--recompute-granularity") == "selective");
  CHECK(t.find("export CUDA_DEVICE_MAX_CONNECTIONS=1\n") != std::string::npos);
}

TEST_CASE("emit megatron: an uneven pipeline is written as a layout no stage of which exceeds the prediction's") {
  ModelDesc m = test::llama3_8b();
  m.layers = 126;  // Llama 3.1 405B's count, on pp 8 x vpp 8 = 64 stages
  Estimate e = sample(8, 8, 8, 1, 1, Recompute::none, Dtype::bf16);
  e.plan.uneven_pipeline = true;
  e.plan.global_batch = 64;
  System sys = test::synthetic_system(64);
  const std::string t = emit(io::EmitFormat::megatron, e, m, sys);
  CHECK(flag_value(t, "--num-layers-per-virtual-pipeline-stage") == "<absent>");
  const std::string layout = flag_value(t, "--pipeline-model-parallel-layout");
  REQUIRE(layout.size() > 2);
  CHECK(layout.front() == 'E');
  CHECK(layout.back() == 'L');
  int stages = 1, layers = 0, max_layers = 0;
  std::istringstream segs(layout);
  std::string seg;
  while (std::getline(segs, seg, '|')) {
    const size_t star = seg.find("t*");
    const int n = star != std::string::npos ? std::stoi(seg.substr(star + 2))
                                            : static_cast<int>(std::count(seg.begin(), seg.end(), 't'));
    layers += n;
    max_layers = std::max(max_layers, n);
  }
  stages = static_cast<int>(std::count(layout.begin(), layout.end(), '|')) + 1;
  CHECK(stages == 64);
  CHECK(layers == 126);
  CHECK(max_layers == 2);              // ceil(126 / 64), what pipeline_parallel.cc charges the busiest stage
  CHECK(layout.rfind("Et|", 0) == 0);  // the embedding's stage and the loss's take the single layers
  // NeMo writes the same layout as Megatron-Core's list form; torchtitan as explicit per-stage modules.
  const YAML::Node n = YAML::Load(emit(io::EmitFormat::nemo, e, m, sys));
  REQUIRE(n["model"]["pipeline_model_parallel_layout"].size() == 64);
  CHECK(n["model"]["pipeline_model_parallel_layout"][0][0].as<std::string>() == "embedding");
  CHECK(n["model"]["pipeline_model_parallel_layout"][63][1].as<std::string>() == "loss");
}

TEST_CASE("emit megatron: ZeRO-3 is FSDP2, refused with pp, never with CUDA_DEVICE_MAX_CONNECTIONS=1") {
  const std::string t = emit(io::EmitFormat::megatron, sample(1, 1, 1, 16, 3, Recompute::none, Dtype::bf16));
  CHECK(flag_value(t, "--use-torch-fsdp2") == "");
  CHECK(flag_value(t, "--overlap-param-gather") == "<absent>");
  CHECK(flag_value(t, "--no-gradient-accumulation-fusion") == "");
  CHECK(t.find("unset CUDA_DEVICE_MAX_CONNECTIONS") != std::string::npos);
  CHECK_THROWS_WITH_AS(emit(io::EmitFormat::megatron, sample(2, 2, 1, 4, 3, Recompute::none, Dtype::bf16)),
                       doctest::Contains("not supported with pipeline parallelism (pp 2)"), ConfigError);
  Estimate ovl = sample(2, 1, 1, 8, 1, Recompute::none, Dtype::bf16);
  ovl.plan.tp_comm_overlap = true;
  ovl.plan.sequence_parallel = false;
  CHECK_THROWS_WITH_AS(emit(io::EmitFormat::megatron, ovl), doctest::Contains("runs only with --sequence-parallel"),
                       ConfigError);
  ovl.plan.sequence_parallel = true;
  CHECK(flag_value(emit(io::EmitFormat::megatron, ovl), "--tp-comm-overlap") == "");
}


TEST_CASE("emit megatron: the plan's MTP modules and pipeline layout, as Megatron-LM's flags and NeMo's keys") {
  ModelDesc m = test::llama3_8b();
  m.mtp_layers = 1;
  Estimate e = sample(1, 4, 2, 1, 1, Recompute::none, Dtype::bf16);
  e.plan.mtp_layers = 1;
  e.plan.pipeline_layout = "Et*5|(t*4|)*6,t*3mL";  // 32 layers over pp 4 x vpp 2
  const System sys = test::synthetic_system(16);
  const std::string t = emit(io::EmitFormat::megatron, e, m, sys);
  CHECK(flag_value(t, "--mtp-num-layers") == "1");
  CHECK(flag_value(t, "--pipeline-model-parallel-layout").find("Et*5|(t*4|)*6,t*3mL") != std::string::npos);
  CHECK(flag_value(t, "--num-layers-per-virtual-pipeline-stage") == "<absent>");  // the layout sets vpp
  const YAML::Node n = YAML::Load(emit(io::EmitFormat::nemo, e, m, sys));
  CHECK(n["model"]["mtp_num_layers"].as<int>() == 1);
  const YAML::Node layout = n["model"]["pipeline_model_parallel_layout"];
  REQUIRE(layout.size() == 8);
  CHECK(layout[0].size() == 6);  // embedding + 5 decoders
  CHECK(layout[7][3].as<std::string>() == "mtp");
  CHECK(layout[7][4].as<std::string>() == "loss");
  // Without a layout, an uneven split's layout puts the MTP module on the last stage, before the loss.
  e.plan.pipeline_layout.clear();
  m.layers = 30;
  e.plan.uneven_pipeline = true;
  const std::string u = emit(io::EmitFormat::megatron, e, m, sys);
  const std::string l = flag_value(u, "--pipeline-model-parallel-layout");
  CHECK(l.substr(l.size() - 2) == "mL");
}

TEST_CASE("emit megatron: per-head QK-norm is --qk-layernorm; a full-width one is refused") {
  const Estimate e = sample(2, 1, 1, 8, 1, Recompute::none, Dtype::bf16);
  CHECK(emit(io::EmitFormat::megatron, e).find("--qk-layernorm") == std::string::npos);
  ModelDesc m = test::llama3_8b();
  m.qk_norm = QkNorm::per_head;
  CHECK(flag_value(emit(io::EmitFormat::megatron, e, m), "--qk-layernorm") == "");
  m.qk_norm = QkNorm::full;
  CHECK_THROWS_WITH_AS(emit(io::EmitFormat::megatron, e, m), doctest::Contains("full width"), ConfigError);
}
