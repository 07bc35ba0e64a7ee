#include <doctest/doctest.h>

#include "modeler/collectives.h"
#include "modeler/time_model.h"
#include "tests/modeler/test_fixtures.h"

using namespace shardplan;

namespace {
test::Setup with_tp(int tp, bool sp = false, const ModelDesc& m = test::tiny_model()) {
  Plan p = test::plan_of(tp, 1, 1, 1, 2, 2, 128);
  p.sequence_parallel = sp;
  return test::Setup(m, p);
}
Seconds total_time(const System& sys, const std::vector<CommOp>& ops) {
  Seconds t;
  for (const CommOp& op : ops) t += collective_time(sys, op) * op.count;
  return t;
}
}  // namespace

TEST_SUITE("tensor_parallel") {

TEST_CASE("divisibility problems, with codes and actual values") {
  // tiny: 4 heads, 4 kv heads, ffn 256. tp 3 divides none of them.
  Problems ps = with_tp(3).problems(tensor_parallel());
  CHECK(test::codes(ps) == "tp_divides_heads,tp_divides_kv_heads,tp_divides_ffn");
  REQUIRE(ps.size() == 3);
  CHECK(ps[0].message == "tp (3) does not divide heads (4)");
  CHECK(ps[1].message == "tp (3) does not divide kv_heads (4)");
  CHECK(ps[2].message == "tp (3) does not divide ffn_hidden (256)");
  // GQA with 2 K/V heads: tp 4 splits the queries but not the K/V heads (Megatron-Core refuses).
  ps = with_tp(4, false, test::tiny_gqa_gated()).problems(tensor_parallel());
  REQUIRE(ps.size() == 1);
  CHECK(ps[0].message == "tp (4) does not divide kv_heads (2)");
  ps = with_tp(0).problems(tensor_parallel());
  REQUIRE(ps.size() == 1);
  CHECK(ps[0].code == "tp_range");
  CHECK(ps[0].message == "tp (0) must be at least 1");
  CHECK(with_tp(4).problems(tensor_parallel()).empty());
}

TEST_CASE("shard: heads, K/V heads, MLP width, vocabulary and weights over tp; tokens only under SP") {
  for (bool sp : {false, true}) {
    CAPTURE(sp);
    const Sharding sh = with_tp(4, sp).sharding();
    CHECK(sh.heads == 1);
    CHECK(sh.kv_heads == 1);
    CHECK(sh.ffn == 64);
    CHECK(sh.vocab == 32);
    CHECK(sh.weight_shard == 4);
    CHECK(sh.tokens == 256);
    CHECK(sh.norm_tokens == (sp ? 64 : 256));
  }
}

TEST_CASE("tp 1 adds no communication") {
  for (bool sp : {false, true}) {
    const CommPlan c = with_tp(1, sp).comm();
    CHECK(c.layer_forward.empty());
    CHECK(c.layer_backward.empty());
  }
}

TEST_CASE("without SP: two all-reduces of the [tokens x h] activation per layer, forward and backward") {
  const test::Setup su = with_tp(4);
  const CommPlan c = su.comm();
  REQUIRE(c.layer_forward.size() == 1);
  REQUIRE(c.layer_backward.size() == 1);
  const CommOp& f = c.layer_forward[0];
  CHECK(f.kind == CommKind::tp);
  CHECK(f.collective == Collective::all_reduce);
  CHECK(f.bytes.v == 256.0 * 64 * 2);  // T x h x 2 bytes
  CHECK(f.group == 4);
  CHECK(f.stride == 1);  // tp is innermost
  CHECK(f.count == 2);   // after attention and after the MLP
  CHECK(f.window == Window::exposed);
  CHECK(c.layer_backward[0].collective == Collective::all_reduce);
  CHECK(c.layer_backward[0].count == 2);
  // Per layer and direction each rank moves 2 x S x 2(t-1)/t: 2 x 32,768 x 1.5 bytes at 100 GB/s.
  CHECK(total_time(su.system, c.layer_forward).v == doctest::Approx(2 * 32768 * 1.5 / test::kNvlink).scale(0));
}

TEST_CASE("with SP: all-gather + reduce-scatter pairs move what the all-reduces moved") {
  const test::Setup sp = with_tp(4, true), ar = with_tp(4, false);
  const CommPlan c = sp.comm();
  // Forward: all-gather before QKV, reduce-scatter after proj, all-gather before FC1, reduce-scatter after FC2.
  REQUIRE(c.layer_forward.size() == 4);
  const Collective order[] = {Collective::all_gather, Collective::reduce_scatter, Collective::all_gather,
                              Collective::reduce_scatter};
  for (int i = 0; i < 4; ++i) {
    CHECK(c.layer_forward[i].collective == order[i]);
    CHECK(c.layer_forward[i].count == 1);
    CHECK(c.layer_forward[i].window == Window::exposed);
  }
  CHECK(c.layer_forward[0].bytes.v == 256.0 * 64 * 2);  // the gathered [T x h], nccl-tests all_gather size
  CHECK(total_time(sp.system, c.layer_forward).v
      == doctest::Approx(total_time(ar.system, ar.comm().layer_forward).v).scale(0));
  // Backward: the conjugates exposed like forward (2 all-gathers, 2 reduce-scatters), plus the weight-gradient
  // input re-gathers behind the QKV and FC1 dgrad GEMMs (Megatron's async all-gather, NCCL's SMs).
  REQUIRE(c.layer_backward.size() == 6);
  int exposed = 0, regathers = 0;
  for (const CommOp& op : c.layer_backward) {
    if (op.window == Window::exposed) ++exposed;
    if (op.window != Window::gemm) continue;
    ++regathers;
    CHECK(op.collective == Collective::all_gather);
    CHECK((op.gemm == linear_slot(LinearGemm::qkv) || op.gemm == linear_slot(LinearGemm::fc1)));
    CHECK(op.overlap_sms == kCommunicationSms);
    CHECK(!op.sm_margin);
  }
  CHECK(exposed == 4);
  CHECK(regathers == 2);
}

TEST_CASE("Transformer Engine 1.x delayed scaling all-gathers the fp8 cast; the reduce-scatters stay 16-bit") {
  // TE v1.8 layernorm_linear.py gathers the fp8 norm output, base.py grad_output_preprocess the fp8 gradient,
  // initialize_ub makes every all-gather buffer uint8 under fp8.
  for (bool overlap : {false, true}) {
    CAPTURE(overlap);
    test::Setup su = with_tp(4, true);
    su.plan.tp_comm_overlap = overlap;
    su.framework.offers_tp_overlap = true;
    su.plan.precision = Dtype::fp8;
    su.framework.fp8_library = Fp8Library::transformer_engine_v1;
    auto bytes_of = [](const std::vector<CommOp>& ops, Collective c) {
      std::vector<double> b;
      for (const CommOp& op : ops)
        if (op.collective == c) b.push_back(op.bytes.v);
      return b;
    };
    const CommPlan c = su.comm();
    CHECK(bytes_of(c.layer_forward, Collective::all_gather) == std::vector<double>{256.0 * 64, 256.0 * 64});
    CHECK(bytes_of(c.layer_forward, Collective::reduce_scatter) == std::vector<double>{256.0 * 64 * 2, 256.0 * 64 * 2});
    CHECK(bytes_of(c.layer_backward, Collective::all_gather) == std::vector<double>(4, 256.0 * 64));
    CHECK(bytes_of(c.layer_backward, Collective::reduce_scatter) == std::vector<double>(2, 256.0 * 64 * 2));
    // Transformer Engine 2.x gathers fp8 too under per-tensor recipes (v2.7 distributed.py _all_gather_fp8), not
    // under blockwise scaling; bf16 plans gather 16 bits.
    su.framework.fp8_library = Fp8Library::transformer_engine;
    CHECK(bytes_of(su.comm().layer_forward, Collective::all_gather)[0] == 256.0 * 64);
    su.plan.fp8_recipe = Fp8Recipe::blockwise;
    CHECK(bytes_of(su.comm().layer_forward, Collective::all_gather)[0] == 256.0 * 64 * 2);
    su.plan.fp8_recipe.reset();
    su.framework.fp8_library = Fp8Library::transformer_engine_v1;
    su.plan.precision = Dtype::bf16;
    CHECK(bytes_of(su.comm().layer_backward, Collective::all_gather)[0] == 256.0 * 64 * 2);
  }
}

TEST_CASE("tp_comm_overlap pairs each collective with one GEMM, by Transformer Engine's methods") {
  test::Setup su = with_tp(2, true);
  su.plan.tp_comm_overlap = true;
  const CommPlan c = su.comm();
  REQUIRE(c.layer_forward.size() == 4);
  for (const CommOp& op : c.layer_forward) CHECK(op.window == Window::gemm);
  // Ring-exchange all-gathers into the QKV and FC1 fprop: copy engines, tp chunks (the last hides nothing).
  CHECK(c.layer_forward[0].gemm == linear_slot(LinearGemm::qkv));
  CHECK(c.layer_forward[0].overlap_sms == 0);
  CHECK(c.layer_forward[0].hide == doctest::Approx(0.5));
  // Pipelined reduce-scatters after the proj and FC2 fprop: 4 chunks, 16 SMs as an SM margin, a quarter trails.
  CHECK(c.layer_forward[1].gemm == linear_slot(LinearGemm::proj));
  CHECK(c.layer_forward[1].overlap_sms == 16);
  CHECK(c.layer_forward[1].sm_margin);
  CHECK(c.layer_forward[1].tail == doctest::Approx(0.25));
  CHECK(c.layer_forward[3].gemm == linear_slot(LinearGemm::fc2));
  // Backward: gradient all-gathers into proj/FC2 dgrad, dX reduce-scatters behind QKV/FC1 wgrad (bulk).
  REQUIRE(c.layer_backward.size() == 6);
  int wgrad = 0;
  for (const CommOp& op : c.layer_backward) {
    CHECK(op.window == Window::gemm);
    if (op.gemm >= 4) {
      ++wgrad;
      CHECK(op.collective == Collective::reduce_scatter);
      CHECK(op.hide == 1.0);
    }
  }
  CHECK(wgrad == 2);
}

TEST_CASE("AsyncTP (torchtitan) pairs the same way on copy engines, in tp chunks") {
  test::Setup su = with_tp(2, true);
  su.plan.tp_comm_overlap = true;
  su.framework = *find_framework("torchtitan");
  const CommPlan c = su.comm();
  for (const CommOp& op : c.layer_forward) {
    CHECK(op.overlap_sms == 0);
    CHECK(!op.sm_margin);
  }
  CHECK(c.layer_forward[1].tail == doctest::Approx(0.5));  // the last of tp = 2 chunks
}

TEST_CASE("AsyncTP leaves the backward's dX reduce-scatters unpaired and exposed") {
  // Inductor's micro_pipeline_tp matches a reduce-scatter of an mm's own output; torchtitan's dX is the sum of
  // the separate q, k, v (gate, up) dgrads.
  test::Setup su = with_tp(2, true);
  su.plan.tp_comm_overlap = true;
  su.framework = *find_framework("torchtitan");
  CHECK_FALSE(su.framework.tp_overlap_pairs_dx_reduce_scatter);
  CommPlan c = su.comm();
  int rs = 0, ag = 0;
  for (const CommOp& op : c.layer_backward) {
    if (op.collective == Collective::reduce_scatter) {
      ++rs;
      CHECK(op.window == Window::exposed);
    } else {
      ++ag;
      CHECK(op.window == Window::gemm);  // the gradient all-gathers into the proj and FC2 dgrad stay paired
    }
  }
  CHECK(rs == 2);
  // torchtitan saves the gathered linear inputs: no re-gather for the weight gradients without recompute.
  CHECK(ag == 2);
  // Op-level SAC saves no all-gather output, so the inputs are gathered again in backward.
  su.plan.recompute = Recompute::selective;
  c = su.comm();
  CHECK(c.layer_backward.size() == 6);
  // A framework whose overlap pairs them hides them behind the wgrad.
  su.framework.tp_overlap_pairs_dx_reduce_scatter = true;
  c = su.comm();
  for (const CommOp& op : c.layer_backward)
    if (op.collective == Collective::reduce_scatter) CHECK(op.gemm >= 4);
  // Without the overlap they are exposed either way.
  su.plan.tp_comm_overlap = false;
  for (const CommOp& op : su.comm().layer_backward)
    if (op.collective == Collective::reduce_scatter) CHECK(op.window == Window::exposed);
}

TEST_CASE("schedule is untouched by tp") {
  Schedule s;
  s.microbatches = 3;
  tensor_parallel().schedule(with_tp(4).ctx(), with_tp(4).sharding(), &s);
  CHECK(s.microbatches == 3);
  CHECK(s.bubble_fraction == 0);
  CHECK(s.in_flight == 1);
  CHECK(std::string(tensor_parallel().name()) == "tp");
}

}

TEST_CASE("TP overlap the framework does not offer is a problem") {
  test::Setup su(test::tiny_model(), test::plan_of(2, 1, 1));
  su.plan.tp_comm_overlap = true;
  su.framework.name = "llm-foundry";
  su.framework.offers_tp_overlap = false;
  Problems problems;
  tensor_parallel().validate(su.ctx(), &problems);
  REQUIRE(problems.size() == 1);
  CHECK(problems[0].code == "tp_overlap_unsupported");
  CHECK(problems[0].message == "llm-foundry does not overlap tensor-parallel collectives (--tp-overlap)");
  su.framework.offers_tp_overlap = true;
  problems.clear();
  tensor_parallel().validate(su.ctx(), &problems);
  CHECK(problems.empty());
}
