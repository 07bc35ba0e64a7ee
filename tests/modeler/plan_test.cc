#include "modeler/plan.h"

#include <doctest/doctest.h>

using namespace shardplan;

TEST_SUITE("plan") {

TEST_CASE("gpus is tp x pp x cp x dp; expert parallelism folds into them") {
  Plan p;
  CHECK(p.gpus() == 1);
  p.tp = 8;
  p.pp = 4;
  p.cp = 2;
  p.dp = 3;
  p.ep = 16;  // folded with dp x cp: not a separate factor
  p.etp = 2;
  CHECK(p.gpus() == 192);
}

TEST_CASE("micro-batches per step = global / (micro x dp)") {
  Plan p;
  p.global_batch = 512;
  p.micro_batch = 2;
  p.dp = 16;
  CHECK(p.num_microbatches() == 16);
  p.micro_batch = 1;
  p.dp = 512;
  CHECK(p.num_microbatches() == 1);
}

TEST_CASE("names as the CLI and JSON spell them") {
  CHECK(std::string(to_string(Recompute::none)) == "none");
  CHECK(std::string(to_string(Recompute::selective)) == "selective");
  CHECK(std::string(to_string(Recompute::full)) == "full");
  CHECK(std::string(to_string(CpKind::ring)) == "ring");
  CHECK(std::string(to_string(CpKind::allgather)) == "allgather");
  CHECK(std::string(to_string(Dtype::fp32)) == "fp32");
  CHECK(std::string(to_string(Dtype::tf32)) == "tf32");
  CHECK(std::string(to_string(Dtype::bf16)) == "bf16");
  CHECK(std::string(to_string(Dtype::fp16)) == "fp16");
  CHECK(std::string(to_string(Dtype::fp8)) == "fp8");
  CHECK(std::string(to_string(Dtype::fp4)) == "fp4");
}

TEST_CASE("defaults: one GPU, bf16, no recompute, ring CP, no SP") {
  const Plan p;
  CHECK(p.precision == Dtype::bf16);
  CHECK(p.recompute == Recompute::none);
  CHECK(p.cp_kind == CpKind::ring);
  CHECK_FALSE(p.sequence_parallel);
  CHECK(p.zero == 0);
  CHECK(p.num_microbatches() == 1);
}

TEST_CASE("recompute modules: Megatron-Core's names joined by +, parsed from + or , lists") {
  CHECK(Plan{}.recompute_modules == kRecomputeCoreAttn);
  CHECK(recompute_modules_string(kRecomputeCoreAttn) == "core_attn");
  CHECK(recompute_modules_string(kRecomputeMlaUpProj | kRecomputeMlp | kRecomputeCoreAttn) ==
        "core_attn+mlp+mla_up_proj");
  CHECK(recompute_modules_string(0).empty());
  std::string unknown;
  CHECK(parse_recompute_modules("core_attn+mlp", &unknown) == (kRecomputeCoreAttn | kRecomputeMlp));
  CHECK(parse_recompute_modules("moe,layernorm", &unknown) == (kRecomputeMoe | kRecomputeLayernorm));
  CHECK(parse_recompute_modules("mlp+mlp", &unknown) == kRecomputeMlp);
  CHECK_FALSE(parse_recompute_modules("core_attn+attn", &unknown).has_value());
  CHECK(unknown == "attn");
  CHECK_FALSE(parse_recompute_modules("+,", &unknown).has_value());
  CHECK(unknown.empty());
  for (const RecomputeModuleName& m : kRecomputeModuleNames) {
    CAPTURE(m.name);
    CHECK(parse_recompute_modules(m.name, nullptr) == m.bit);
    CHECK(recompute_modules_string(m.bit) == m.name);
  }
}

TEST_CASE("plan_limit_violation: degree products and batches are bounded before any arithmetic (issue 12)") {
  Plan p;
  CHECK(plan_limit_violation(p).empty());
  p.tp = 65536;
  p.pp = 65536;  // 2^32: wrapped to 0 in int and then divided by
  CHECK(plan_limit_violation(p) == "tp x tsp x pp x cp x dp (65536 x 1 x 65536 x 1 x 1) must be at most 2^24 GPUs");
  p = Plan{};
  p.pp = 65536;
  p.vpp = 65536;
  CHECK(plan_limit_violation(p) == "pp x vpp (65536 x 65536) must be at most 2^24");
  p = Plan{};
  p.tp = 1 << 25;
  CHECK(plan_limit_violation(p) == "tp (33554432) must be at most 2^24");
  p = Plan{};
  p.micro_batch = 2147483647;
  CHECK(plan_limit_violation(p) == "micro_batch (2147483647) and global_batch (1) must be at most 2^24 sequences");
  p = Plan{};
  p.seq_len = 1 << 27;
  CHECK(plan_limit_violation(p) == "seq_len (134217728) must be at most 2^26 tokens");
  p = Plan{};
  p.tp = 0;  // below 1 is the strategies' to report, with their own messages
  CHECK(plan_limit_violation(p).empty());
}

TEST_CASE("num_microbatches is computed in 64 bits") {
  Plan p;
  p.dp = 65536;
  p.micro_batch = 65536;  // 2^32 in int is 0
  p.global_batch = 4;
  CHECK(p.num_microbatches() == 0);
}
}
