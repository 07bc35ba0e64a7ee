#include "modeler/framework_rules.h"

#include <doctest/doctest.h>

#include <set>
#include <string>

#include "modeler/evaluate.h"
#include "tests/modeler/test_fixtures.h"

using namespace shardplan;

namespace {

/// The codes of the framework rules `p` breaks under `framework` on the tiny model (or `m`).
std::set<std::string> broken(const Plan& p, const std::string& framework, const ModelDesc& m = test::tiny_moe(),
                             const System& s = test::synthetic_system(16)) {
  Problems problems;
  check_framework_rules(m, s, p, *find_framework(framework), &problems);
  std::set<std::string> codes;
  for (const Problem& pr : problems) codes.insert(pr.code);
  return codes;
}

Plan plan(int tp, int pp, int dp, int zero) {
  Plan p = test::plan_of(tp, pp, dp, 1, 1, 64, 4096);
  p.zero = zero;
  p.sequence_parallel = tp > 1;
  return p;
}

}  // namespace

TEST_SUITE("framework_rules") {
  TEST_CASE("every rule names its launcher's source file and has a rejection label") {
    std::set<std::string> codes;
    for (const FrameworkRule& r : framework_rules()) {
      CAPTURE(r.code);
      CHECK(codes.insert(r.code).second);
      CHECK(std::string(r.source).find('/') != std::string::npos);
      CHECK(std::string(framework_rule_summary(r.code)) == r.summary);
    }
    CHECK(framework_rule_summary("tp_divides_heads") == nullptr);
  }

  TEST_CASE("Megatron: TP overlap needs sequence parallelism; expert x tensor parallelism needs it too") {
    Plan p = plan(2, 1, 8, 1);
    p.tp_comm_overlap = true;
    p.sequence_parallel = false;
    CHECK(broken(p, "megatron-lm", test::tiny_model()) == std::set<std::string>{"megatron_tp_overlap_needs_sp"});
    CHECK(broken(p, "nemo", test::tiny_model()).count("megatron_tp_overlap_needs_sp") == 1);
    p.sequence_parallel = true;
    CHECK(broken(p, "megatron-lm", test::tiny_model()).empty());
    Plan moe = plan(2, 1, 8, 1);
    moe.ep = 8;
    moe.sequence_parallel = false;
    CHECK(broken(moe, "megatron-lm").count("megatron_ep_tp_needs_sp") == 1);
    CHECK(broken(moe, "megatron-lm", test::tiny_model()).count("megatron_ep_tp_needs_sp") == 0);  // dense: no experts
  }

  TEST_CASE("Megatron: ZeRO-3 (FSDP2) refused with pp, ep, tied embeddings and fp16") {
    CHECK(broken(plan(1, 1, 16, 3), "megatron-lm", test::tiny_model()).empty());
    CHECK(broken(plan(1, 2, 8, 3), "megatron-lm", test::tiny_model()) == std::set<std::string>{"megatron_fsdp2_pp"});
    Plan ep = plan(1, 1, 16, 3);
    ep.ep = 4;
    CHECK(broken(ep, "megatron-lm").count("megatron_fsdp2_ep") == 1);
    ModelDesc tied = test::tiny_model();
    tied.tied_embeddings = true;
    CHECK(broken(plan(1, 1, 16, 3), "megatron-lm", tied).count("megatron_fsdp2_tied") == 1);
    Plan fp16 = plan(1, 1, 16, 3);
    fp16.precision = Dtype::fp16;
    CHECK(broken(fp16, "megatron-lm", test::tiny_model()).count("megatron_fsdp2_fp16") == 1);
    // The same plans are torchtitan's to run: FSDP2 with PP is its ZeRO-3.
    CHECK(broken(plan(1, 2, 8, 3), "torchtitan", test::tiny_model()).empty());
  }

  TEST_CASE("torchtitan: DDP only as the whole mesh; CP shards; the sequence divisor; etp; fp8 recipes") {
    CHECK(broken(plan(1, 1, 16, 0), "torchtitan", test::tiny_model()).empty());  // plain DDP runs
    CHECK(broken(plan(8, 1, 2, 0), "torchtitan", test::tiny_model()) ==
          std::set<std::string>{"torchtitan_ddp_multi_dim"});
    CHECK(broken(plan(8, 1, 2, 0), "megatron-lm", test::tiny_model()).empty());  // Megatron's DDP runs with tp
    Plan cp = plan(1, 1, 8, 0);
    cp.cp = 2;
    CHECK(broken(cp, "torchtitan", test::tiny_model()).count("torchtitan_cp_shards") == 1);
    Plan seq = plan(8, 1, 2, 3);
    seq.seq_len = 4100;  // 4100 % (8 x 2) != 0
    CHECK(broken(seq, "torchtitan", test::tiny_model()).count("torchtitan_seq_divisor") == 1);
    Plan etp = plan(4, 1, 4, 3);
    etp.ep = 4;
    etp.etp = 2;
    CHECK(broken(etp, "torchtitan").count("torchtitan_etp") == 1);
    etp.etp = 4;
    CHECK(broken(etp, "torchtitan").count("torchtitan_etp") == 0);
    Plan fp8 = plan(1, 1, 16, 3);
    fp8.precision = Dtype::fp8;
    CHECK(broken(fp8, "torchtitan", test::tiny_model()).empty());  // the default recipe: tensorwise
    fp8.fp8_recipe = Fp8Recipe::delayed;
    CHECK(broken(fp8, "torchtitan", test::tiny_model()).count("torchtitan_fp8_recipe") == 1);
    CHECK(broken(fp8, "megatron-lm", test::tiny_model()).empty());
  }

  TEST_CASE("mxfp8 needs Blackwell everywhere; with async TP torchtitan refuses it") {
    Plan mx = plan(2, 1, 8, 3);
    mx.precision = Dtype::fp8;
    mx.fp8_recipe = Fp8Recipe::mxfp8;
    mx.tp_comm_overlap = true;
    CHECK(broken(mx, "megatron-lm", test::tiny_model()).count("mx_needs_blackwell") == 1);
    System bw = test::synthetic_system(16);
    bw.gpu.peak[static_cast<int>(Dtype::fp4)] = bw.gpu.peak[static_cast<int>(Dtype::bf16)] * 4.0;
    CHECK(broken(mx, "megatron-lm", test::tiny_model(), bw).empty());
    CHECK(broken(mx, "torchtitan", test::tiny_model(), bw) == std::set<std::string>{"torchtitan_mxfp8_async_tp"});
  }

  TEST_CASE("DeepSpeed: ZeRO-2/3 with pipeline parallelism; no ring CP; no fp8 in the megatron-deepspeed profile") {
    CHECK(broken(plan(2, 2, 4, 1), "megatron-deepspeed", test::tiny_model()).empty());
    CHECK(broken(plan(2, 2, 4, 2), "megatron-deepspeed", test::tiny_model()) ==
          std::set<std::string>{"deepspeed_zero_pp"});
    CHECK(broken(plan(2, 1, 8, 3), "megatron-deepspeed", test::tiny_model()).empty());
    CHECK(broken(plan(1, 1, 16, 2), "megatron-deepspeed", test::tiny_model()).empty());  // ZeRO-2 without pp
    // The Hugging Face Trainer stacks parallelise by data only.
    CHECK(broken(plan(1, 1, 16, 3), "hf-deepspeed", test::tiny_model()).empty());
    CHECK(broken(plan(2, 1, 8, 3), "hf-deepspeed", test::tiny_model()).count("data_parallel_only") == 1);
    CHECK(broken(plan(1, 2, 8, 0), "hf-fsdp", test::tiny_model()).count("data_parallel_only") == 1);
    Plan vpp = plan(2, 2, 4, 1);
    vpp.vpp = 2;
    CHECK(broken(vpp, "megatron-deepspeed", test::tiny_model()) == std::set<std::string>{"deepspeed_no_interleaving"});
    Plan cp = plan(1, 1, 8, 1);
    cp.cp = 2;
    CHECK(broken(cp, "megatron-deepspeed", test::tiny_model()).count("megatron_deepspeed_cp") == 1);
    Plan fp8 = plan(1, 1, 16, 1);
    fp8.precision = Dtype::fp8;
    CHECK(broken(fp8, "megatron-deepspeed", test::tiny_model()).count("megatron_deepspeed_low_precision") == 1);
  }

  TEST_CASE("a broken rule makes the plan invalid: predict refuses it, the search counts it") {
    Plan p = plan(2, 1, 8, 1);
    p.tp_comm_overlap = true;
    p.sequence_parallel = false;
    const Estimate e = evaluate(test::tiny_model(), test::synthetic_system(16), p, *find_framework("megatron-lm"));
    REQUIRE_FALSE(e.feasible());
    CHECK(e.problems.front().code == "megatron_tp_overlap_needs_sp");
    CHECK(e.problems.front().message ==
          "megatron-lm: --tp-comm-overlap (tp 2) runs only with --sequence-parallel (NVIDIA/Megatron-LM "
          "megatron/training/arguments.py validate_args (d98e8a6))");
  }

}  // TEST_SUITE
