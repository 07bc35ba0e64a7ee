#include "modeler/evaluate.h"

#include <doctest/doctest.h>

#include <cstdio>
#include <stdexcept>

#include "tests/modeler/test_fixtures.h"

using namespace shardplan;

namespace {
ModelDesc eight_layers() {
  ModelDesc m = test::tiny_model();
  m.layers = 8;
  return m;
}
Estimate run(const test::Setup& su) { return evaluate(su.model, su.system, su.plan, su.framework); }
std::string gib(Bytes b) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", to_GiB(b));
  return buf;
}
}  // namespace

TEST_SUITE("evaluate") {

TEST_CASE("a valid plan: throughput follows from the step; the step is the sum of its parts") {
  // 8 GPUs: tp 2, pp 2, dp 2; 16 sequences of 128 tokens per step.
  const test::Setup su(eight_layers(), test::plan_of(2, 2, 2, 1, 1, 16, 128));
  const Estimate e = run(su);
  REQUIRE(e.feasible());
  const TimeBreakdown& t = e.time;
  CHECK(t.step().v == doctest::Approx((t.compute + t.exposed_comm_total() + t.bubble + t.optimizer).v).scale(0));
  CHECK(e.tokens_per_s == doctest::Approx(16.0 * 128 / t.step().v));
  CHECK(e.tokens_per_s_per_gpu == doctest::Approx(e.tokens_per_s / 8));
  CHECK(e.model_flops_per_token == model_flops_per_token(su.model, 128));
  CHECK(e.mfu == doctest::Approx(e.model_flops_per_token * e.tokens_per_s / (8 * test::kPeak)));
  CHECK(e.mfu > 0);
  CHECK(e.mfu < 1);
  CHECK(e.hfu == doctest::Approx(e.mfu));  // no recompute
  // 1F1B: bubble = (p - 1) x one micro-batch's stage time on the busiest stage (its passes, exposed sends and
  // the compute its hidden traffic slows).
  CHECK(t.shape.stages == 2);
  CHECK(t.shape.microbatches == 8);
  CHECK(t.shape.microbatch_comm.v > 0);  // the pipeline send is exposed, so the bubble must count it
  CHECK(t.bubble.v == doctest::Approx(1.0 * (t.shape.forward + t.shape.backward + t.shape.microbatch_comm +
                                             t.shape.microbatch_contention)
                                                .v).scale(0)
                          .epsilon(1e-12));
  CHECK_NOTHROW(check_invariants(e));
}

TEST_CASE("interleaving divides the bubble by v") {
  test::Setup su(eight_layers(), test::plan_of(1, 4, 2, 1, 1, 16, 128));
  su.plan.vpp = 2;
  const Estimate e = run(su);
  REQUIRE(e.feasible());
  CHECK(e.time.shape.chunks == 2);
  const StepShape& s = e.time.shape;
  CHECK(e.time.bubble.v ==
        doctest::Approx(1.5 * (s.forward + s.backward + s.microbatch_comm + s.microbatch_contention).v)
            .epsilon(1e-12)
            .scale(0));
}

TEST_CASE("tp 1 has no tensor-parallel communication; pp 1 no bubble") {
  const Estimate e = run(test::Setup(eight_layers(), test::plan_of(1, 1, 8, 1, 1, 16, 128)));
  REQUIRE(e.feasible());
  CHECK(e.time.exposed_comm[static_cast<int>(CommKind::tp)].v == 0);
  CHECK(e.time.bubble.v == 0);
  CHECK(e.time.exposed_comm[static_cast<int>(CommKind::dp)].v > 0);  // tiny model: the one bucket is exposed
}

TEST_CASE("selective recompute: hardware FLOPs add the attention core's forward once more") {
  test::Setup su(eight_layers(), test::plan_of(2, 1, 4, 1, 1, 16, 128));
  su.plan.recompute = Recompute::selective;
  const Estimate e = run(su);
  REQUIRE(e.feasible());
  // Per token, the attention core forward is 2 s (a d + a d) = 4 s a d per layer (Megatron's count).
  const double extra = 4.0 * 128 * 4 * 16 * 8;
  CHECK(e.hfu == doctest::Approx(e.mfu * (1 + extra / e.model_flops_per_token)));
  CHECK(e.time.recompute.v > 0);
}

TEST_CASE("invalid plans come back with problems and no time") {
  test::Setup su(eight_layers(), test::plan_of(2, 1, 1, 1, 1, 8, 128));  // 2 GPUs' worth on an 8-GPU system
  su.system = test::synthetic_system(8);
  Estimate e = run(su);
  REQUIRE(e.problems.size() == 1);
  CHECK(e.problems[0].code == "gpus_product");
  CHECK(e.problems[0].message == "tp x pp x cp x dp (2 x 1 x 1 x 1 = 2) does not equal the GPU count (8)");
  CHECK_FALSE(e.feasible());
  CHECK(e.time.compute.v == 0);
  CHECK(e.tokens_per_s == 0);
  CHECK(e.plan.tp == 2);
  CHECK(validate_plan(su.model, su.system, su.plan, su.framework).size() == 1);

  // Every violated constraint is reported, basics first, then each strategy's.
  su.plan = test::plan_of(3, 1, 1, 1, 1, 8, 0);
  su.plan.precision = Dtype::fp8;
  e = run(su);
  CHECK(test::codes(e.problems) ==
        "seq_range,gpus_product,precision_unsupported,tp_divides_heads,tp_divides_kv_heads,tp_divides_ffn");
  CHECK(e.problems[0].message == "seq_len (0) must be at least 1");
  CHECK(e.problems[2].message == "precision fp8 is not supported by synthetic (no dense peak in its profile)");
}

TEST_CASE("block recompute: full recompute only, at most a chunk's layers, where the framework offers it") {
  test::Setup su(eight_layers(), test::plan_of(1, 2, 4, 1, 1, 8, 128));  // 8 layers on pp 2: 4 per chunk
  su.system = test::synthetic_system(8);
  su.plan.recompute_layers = 2;
  CHECK(test::codes(validate_plan(su.model, su.system, su.plan, su.framework)) == "recompute_layers_need_full");
  su.plan.recompute = Recompute::full;
  CHECK(validate_plan(su.model, su.system, su.plan, su.framework).empty());
  su.plan.recompute_layers = 5;
  const Problems over = validate_plan(su.model, su.system, su.plan, su.framework);
  REQUIRE(over.size() == 1);
  CHECK(over[0].message == "recompute layers (5) exceeds the layers of a pipeline chunk (4)");
  su.plan.recompute_layers = 2;
  su.framework.offers_block_recompute = false;
  su.framework.name = "eager";
  const Problems no = validate_plan(su.model, su.system, su.plan, su.framework);
  REQUIRE(no.size() == 1);
  CHECK(no[0].message == "eager does not recompute a block of N layers per chunk (--recompute-layers)");
  su.plan.recompute_layers = -1;
  CHECK(test::codes(validate_plan(su.model, su.system, su.plan, su.framework)) == "recompute_layers_range");
}

TEST_CASE("recompute modules: selective only, where the framework offers them, for parts the model has") {
  test::Setup su(eight_layers(), test::plan_of(1, 1, 8, 1, 1, 8, 128));
  su.system = test::synthetic_system(8);
  su.plan.recompute_modules = kRecomputeCoreAttn | kRecomputeMlp;
  const Problems none = validate_plan(su.model, su.system, su.plan, su.framework);
  REQUIRE(none.size() == 1);
  CHECK(none[0].code == "recompute_modules_need_selective");
  CHECK(none[0].message == "recompute modules (core_attn+mlp) apply to selective recompute; the plan recomputes none");
  su.plan.recompute = Recompute::selective;
  CHECK(validate_plan(su.model, su.system, su.plan, su.framework).empty());
  su.plan.recompute_modules = kRecomputeMoeAct | kRecomputeMlaUpProj;
  CHECK(test::codes(validate_plan(su.model, su.system, su.plan, su.framework)) ==
        "recompute_modules_need_moe,recompute_modules_need_mla");
  su.plan.recompute_modules = 0;
  CHECK(test::codes(validate_plan(su.model, su.system, su.plan, su.framework)) == "recompute_modules_empty");
  su.plan.recompute_modules = kRecomputeLayernorm;
  su.framework.offers_recompute_modules = false;
  su.framework.name = "eager";
  const Problems no = validate_plan(su.model, su.system, su.plan, su.framework);
  REQUIRE(no.size() == 1);
  CHECK(no[0].message == "eager does not choose modules to recompute (--recompute-modules)");
  // The default (the attention core) needs nothing.
  su.plan.recompute_modules = kRecomputeCoreAttn;
  CHECK(validate_plan(su.model, su.system, su.plan, su.framework).empty());
  // An MoE model without shared experts has none to recompute.
  test::Setup moe(test::tiny_moe(), test::plan_of(1, 1, 8, 1, 1, 8, 128));
  moe.system = test::synthetic_system(8);
  moe.plan.recompute = Recompute::selective;
  moe.plan.recompute_modules = kRecomputeMoe | kRecomputeSharedExperts;
  CHECK(validate_plan(moe.model, moe.system, moe.plan, moe.framework).empty());
  moe.model.moe->shared_experts = 0;
  CHECK(test::codes(validate_plan(moe.model, moe.system, moe.plan, moe.framework)) == "recompute_modules_need_moe");
}

TEST_CASE("a plan that does not fit is fully evaluated and names its largest memory item") {
  // GPT-3 175B on 8 GPUs at tp 8: 175e9 / 8 x 12 bytes of optimizer state ~ 245 GiB per GPU.
  const test::Setup su(test::gpt3_175b(), test::plan_of(8, 1, 1, 1, 1, 1, 2048));
  const Estimate e = run(su);
  REQUIRE(e.problems.size() == 1);
  CHECK(e.problems[0].code == "oom_optimizer");
  CHECK(e.problems[0].message == "out of memory: " + gib(e.memory.total()) +
                                     " GiB needed of 80.0 GiB (largest item: optimizer " + gib(e.memory.optimizer) +
                                     " GiB)");
  CHECK(e.memory.optimizer.v == doctest::Approx(total_params(su.model) / 8 * 12).epsilon(0.01));
  CHECK(e.time.compute.v > 0);
  CHECK(e.tokens_per_s > 0);
  CHECK_NOTHROW(check_invariants(e));
}

TEST_CASE("check_invariants rejects physically impossible estimates") {
  Estimate e;
  e.time.compute = Seconds(1);
  e.memory.weights = GiB(1);
  CHECK_NOTHROW(check_invariants(e));
  Estimate no_compute = e;
  no_compute.time.compute = Seconds(0);
  CHECK_THROWS_AS(check_invariants(no_compute), std::logic_error);
  Estimate tp_comm = e;
  tp_comm.time.exposed_comm[static_cast<int>(CommKind::tp)] = Seconds(1);
  CHECK_THROWS_AS(check_invariants(tp_comm), std::logic_error);
  tp_comm.plan.tp = 2;
  CHECK_NOTHROW(check_invariants(tp_comm));
  Estimate bubble = e;
  bubble.time.bubble = Seconds(1);
  CHECK_THROWS_AS(check_invariants(bubble), std::logic_error);
  Estimate recompute = e;
  recompute.time.recompute = Seconds(2);
  CHECK_THROWS_AS(check_invariants(recompute), std::logic_error);
}

}

TEST_SUITE("evaluate 16-bit peak") {

TEST_CASE("an fp16-only GPU (V100-like) predicts an fp16 plan under every framework; MFU divides by fp16") {
  test::Setup su(eight_layers(), test::plan_of(2, 2, 2, 1, 1, 16, 128));
  Gpu& g = su.system.gpu;
  g.peak[static_cast<int>(Dtype::fp16)] = g.peak[static_cast<int>(Dtype::bf16)];
  g.peak[static_cast<int>(Dtype::bf16)] = FlopsPerSec(0);
  su.plan.precision = Dtype::fp16;
  CHECK(g.sixteen_bit() == Dtype::fp16);
  for (const std::string& name : framework_names()) {
    CAPTURE(name);
    const Framework* f = find_framework(name);
    REQUIRE(f != nullptr);
    Plan p = su.plan;
    if (!f->offers_model_parallel) {  // the Hugging Face Trainer stacks: data parallelism only
      p.tp = p.pp = 1;
      p.dp = 8;
    }
    p.zero = f->zero_default(p.pp);  // a stage the framework runs with this plan (torchtitan: no DDP with pp)
    const Estimate e = evaluate(su.model, su.system, p, *f);
    REQUIRE(e.feasible());
    CHECK(e.time.compute.v > 0);
    CHECK(e.mfu == doctest::Approx(e.model_flops_per_token * e.tokens_per_s / (8 * test::kPeak)));
  }
  // A bf16 plan on it is a plan problem (exit 2 at the CLI), not an internal error.
  su.plan.precision = Dtype::bf16;
  const Estimate bf16 = run(su);
  REQUIRE(bf16.problems.size() == 1);
  CHECK(bf16.problems[0].code == "precision_unsupported");
}

TEST_CASE("a GPU with no 16-bit peak at all: every plan is a plan problem naming what is missing") {
  test::Setup su(eight_layers(), test::plan_of(2, 2, 2, 1, 1, 16, 128));
  Gpu& g = su.system.gpu;
  g.peak[static_cast<int>(Dtype::fp8)] = g.peak[static_cast<int>(Dtype::bf16)];
  g.peak[static_cast<int>(Dtype::bf16)] = FlopsPerSec(0);
  su.plan.precision = Dtype::fp8;
  const Estimate e = run(su);
  REQUIRE(e.problems.size() == 1);
  CHECK(e.problems[0].message ==
        "synthetic states neither a bf16 nor an fp16 peak; attention and the LM head need a 16-bit peak");
}


TEST_CASE("a custom pipeline layout: the slowest rank sets the step, the fullest the memory") {
  test::Setup even(eight_layers(), test::plan_of(1, 2, 1, 1, 1, 16, 128));
  test::Setup front = even, back = even;
  front.plan.pipeline_layout = "Et*7|tL";  // rank 0: 7 layers
  back.plan.pipeline_layout = "Et|t*7L";   // rank 1: 7 layers and the loss
  const Estimate e = run(even), f = run(front), b = run(back);
  REQUIRE(f.problems.empty());
  REQUIRE(b.problems.empty());
  CHECK(f.time.step() > e.time.step());
  CHECK(b.time.step() > f.time.step());  // 7 layers with the LM head and loss
  CHECK(f.memory.total() > e.memory.total());
}

TEST_CASE("a custom pipeline layout: the strategies after pp shard every rank load (SDP's block dropping)") {
  // Rank 0 holds the embedding only; rank 1 all 8 layers and the loss. SDP's block dropping runs rho of each rank's
  // own layers: half of rank 1's, whatever rank 0 holds.
  test::Setup full(eight_layers(), test::plan_of(1, 2, 2, 1, 1, 16, 128));
  full.plan.pipeline_layout = "E|t*8L";
  test::Setup half = full;
  half.plan.sdp_keep = 0.5;
  const Estimate f = run(full), h = run(half);
  REQUIRE(f.problems.empty());
  REQUIRE(h.problems.empty());
  CHECK(h.time.compute.v < 0.75 * f.time.compute.v);  // 4 layers and the LM head against 8 and the head
  CHECK(h.memory.activations.v == doctest::Approx(0.5 * f.memory.activations.v));
  CHECK(h.mfu <= 1.0);
}

TEST_CASE("multi-token prediction: one more layer, eh_proj and LM head on the last rank; only when the plan runs it") {
  ModelDesc m = eight_layers();
  m.mtp_layers = 1;
  test::Setup off(m, test::plan_of(1, 2, 1, 1, 1, 16, 128)), on = off;
  on.plan.mtp_layers = 1;
  const Estimate a = run(off), b = run(on);
  REQUIRE(b.problems.empty());
  CHECK(b.time.step() > a.time.step());
  // The model defines it; the plan's 0 leaves the step as a model without MTP has it.
  test::Setup none(eight_layers(), test::plan_of(1, 2, 1, 1, 1, 16, 128));
  CHECK(run(none).time.step() == a.time.step());
}

}
