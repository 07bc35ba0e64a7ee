#include <doctest/doctest.h>

#include "tests/modeler/test_fixtures.h"

using namespace shardplan;

namespace {
test::Setup with_cp(int cp, int tp = 1, int seq = 128, const ModelDesc& m = test::tiny_model()) {
  return test::Setup(m, test::plan_of(tp, 1, 1, cp, 2, 2, seq));
}
}  // namespace

TEST_SUITE("context_parallel") {

TEST_CASE("2 x cp must divide the sequence for the load-balanced causal split") {
  Problems ps = with_cp(4, 1, 100).problems(context_parallel());
  REQUIRE(ps.size() == 1);
  CHECK(ps[0].code == "cp_divides_seq");
  CHECK(ps[0].message == "2 x cp (8) does not divide the sequence length (100) for the load-balanced split");
  CHECK(with_cp(4, 1, 128).problems(context_parallel()).empty());
  CHECK(with_cp(1, 1, 101).problems(context_parallel()).empty());  // no split, any length
  ps = with_cp(0).problems(context_parallel());
  REQUIRE(ps.size() == 1);
  CHECK(ps[0].message == "cp (0) must be at least 1");
}

TEST_CASE("shard: queries and tokens over cp; every query block still attends over the whole sequence") {
  const Sharding sh = with_cp(4).sharding();
  CHECK(sh.seq_q == 32);
  CHECK(sh.seq_kv == 128);
  CHECK(sh.tokens == 64);  // 2 sequences x 32
  CHECK(sh.norm_tokens == 64);
  CHECK(sh.heads == 4);
  // With tp 2 and SP the norm region is split over both.
  test::Setup su = with_cp(2, 2);
  su.plan.sequence_parallel = true;
  CHECK(su.sharding().norm_tokens == 256.0 / 4);
}

TEST_CASE("ring: cp - 1 K/V sends per layer forward, K/V plus dK/dV backward, behind attention") {
  const test::Setup su = with_cp(4, 2, 128, test::tiny_gqa_gated());
  const CommPlan c = su.comm();
  // K and V of the rank's 64 tokens, local K/V heads 2 / tp 2 = 1, d 16, 2 bytes: 2 x 64 x 1 x 16 x 2 = 4,096.
  const CommOp* f = nullptr;
  for (const CommOp& op : c.layer_forward)
    if (op.kind == CommKind::cp) f = &op;
  REQUIRE(f != nullptr);
  CHECK(f->collective == Collective::send_recv);
  CHECK(f->bytes.v == 4096);
  CHECK(f->count == 3);
  CHECK(f->group == 4);
  CHECK(f->stride == 2);  // cp ranks sit outside tp
  CHECK(f->window == Window::attention);
  const CommOp* b = nullptr;
  for (const CommOp& op : c.layer_backward)
    if (op.kind == CommKind::cp) b = &op;
  REQUIRE(b != nullptr);
  CHECK(b->bytes.v == 8192);
  CHECK(b->count == 3);
  CHECK(b->window == Window::attention);
}

TEST_CASE("ring backward: dK/dV travel at the framework's accumulation precision") {
  test::Setup su = with_cp(4, 2, 128, test::tiny_gqa_gated());
  su.framework.cp_grad_kv_bytes = 4.0;  // PyTorch: fp32 partial sums
  int found = 0;
  for (const CommOp& op : su.comm().layer_backward) {
    if (op.kind != CommKind::cp) continue;
    ++found;
    CHECK(op.bytes.v == 4096 * 3);  // K/V in bf16 plus dK/dV in fp32
  }
  CHECK(found == 1);
}

TEST_CASE("PyTorch's ring: the repeated K/V travel, and the last dK/dV transfer is exposed") {
  test::Setup su = with_cp(4, 2, 128, test::tiny_gqa_gated());
  su.framework.cp_grad_kv_bytes = 4.0;
  su.framework.cp_last_grad_kv_exposed = true;
  auto cp_ops = [](const std::vector<CommOp>& ops) {
    std::vector<CommOp> out;
    for (const CommOp& op : ops)
      if (op.kind == CommKind::cp) out.push_back(op);
    return out;
  };
  // Unrepeated: 4,096 bytes of K/V (the ring test above); the dK/dV of the last step in fp32, once, exposed.
  std::vector<CommOp> b = cp_ops(su.comm().layer_backward);
  REQUIRE(b.size() == 2);
  CHECK(b[0].bytes.v == 4096 * 3);
  CHECK(b[0].window == Window::attention);
  CHECK(b[1].bytes.v == 4096 * 2);
  CHECK(b[1].count == 1);
  CHECK(b[1].window == Window::exposed);
  // Repeated to the 4 / tp 2 = 2 local query heads: twice the bytes, forward and backward.
  su.framework.gqa_repeats_kv = true;
  const std::vector<CommOp> f = cp_ops(su.comm().layer_forward);
  REQUIRE(f.size() == 1);
  CHECK(f[0].bytes.v == 8192);
  CHECK(f[0].count == 3);
  b = cp_ops(su.comm().layer_backward);
  REQUIRE(b.size() == 2);
  CHECK(b[0].bytes.v == 8192 * 3);
  CHECK(b[1].bytes.v == 8192 * 2);
  // Transformer Engine's defaults: nothing exposed.
  su.framework.cp_last_grad_kv_exposed = false;
  CHECK(cp_ops(su.comm().layer_backward).size() == 1);
}

TEST_CASE("all-gather variant: K/V gathered once per layer, gradients reduce-scattered, exposed") {
  test::Setup su = with_cp(4);
  su.plan.cp_kind = CpKind::allgather;
  const CommPlan c = su.comm();
  REQUIRE(c.layer_forward.size() == 1);
  // The gathered K/V of all 4 ranks: 4 x (2 x 64 x 4 x 16 x 2) = 65,536 bytes.
  CHECK(c.layer_forward[0].collective == Collective::all_gather);
  CHECK(c.layer_forward[0].bytes.v == 65536);
  CHECK(c.layer_forward[0].count == 1);
  CHECK(c.layer_forward[0].window == Window::exposed);
  REQUIRE(c.layer_backward.size() == 1);
  CHECK(c.layer_backward[0].collective == Collective::reduce_scatter);
  CHECK(c.layer_backward[0].bytes.v == 65536);
}

TEST_CASE("PyTorch's all-gather rotater: one gather per pass behind the first step's kernel, dK/dV by the ring") {
  // Tiny model, cp 4, tp 1, 2 sequences of 128: 64 tokens per rank, 4 heads of 16. Local K/V 2 x 64 x 4 x 16 x 2 =
  // 16,384 bytes; the gather's output cp x that = 65,536, which the 100 GB/s domain moves in 65,536 x 3/4 / 1e11 =
  // 491.52 ns. Step 0's kernel: 4 x 2 x 32 x 128 / 2 x 4 x 16 FLOPs / cp 4 = 262,144 at 100 TFLOP/s = 2.62144 ns
  // forward, 2.5x that backward: hidden; the rest, 488.9 ns forward and 485.0 ns backward, exposed.
  test::Setup su = with_cp(4);
  su.plan.cp_kind = CpKind::allgather;
  su.framework.cp_allgather_runs_ring_loop = true;
  su.framework.cp_grad_kv_bytes = 4.0;
  su.framework.cp_last_grad_kv_exposed = true;
  const CommPlan c = su.comm();
  const double t = 65536 * 0.75 / test::kNvlink, step = 262144 / test::kPeak;
  REQUIRE(c.layer_forward.size() == 2);
  const CommOp& fh = c.layer_forward[0];
  const CommOp& fe = c.layer_forward[1];
  CHECK(fh.collective == Collective::all_gather);
  CHECK(fh.window == Window::attention);
  CHECK(fh.fixed_s == doctest::Approx(step).scale(0));
  CHECK(fe.window == Window::exposed);
  CHECK(fe.fixed_s == doctest::Approx(t - step).scale(0));
  CHECK(fh.count == 1);
  CHECK(fe.count == 1);
  CHECK(fh.bytes.v + fe.bytes.v == doctest::Approx(65536));
  CHECK(fh.bytes.v == doctest::Approx(65536 * step / t));
  // Backward: the gather again behind the first backward step, then dK/dV in fp32 (16,384 x 2 bytes) sent after
  // every step, cp - 1 behind the next step's kernel and the last after the loop; no reduce-scatter.
  REQUIRE(c.layer_backward.size() == 4);
  CHECK(c.layer_backward[0].window == Window::attention);
  CHECK(c.layer_backward[0].fixed_s == doctest::Approx(2.5 * step).scale(0));
  CHECK(c.layer_backward[1].window == Window::exposed);
  CHECK(c.layer_backward[1].fixed_s == doctest::Approx(t - 2.5 * step).scale(0));
  for (int i : {2, 3}) {
    CHECK(c.layer_backward[i].collective == Collective::send_recv);
    CHECK(c.layer_backward[i].bytes.v == 32768);
  }
  CHECK(c.layer_backward[2].count == 3);
  CHECK(c.layer_backward[2].window == Window::attention);
  CHECK(c.layer_backward[3].count == 1);
  CHECK(c.layer_backward[3].window == Window::exposed);
  // 256x the sequence: the gather grows 256x, the step's kernel 65,536x and hides it whole (one op, nothing exposed).
  test::Setup big = with_cp(4, 1, 32768);
  big.plan.cp_kind = CpKind::allgather;
  big.framework.cp_allgather_runs_ring_loop = true;
  const CommPlan b = big.comm();
  REQUIRE(b.layer_forward.size() == 1);
  CHECK(b.layer_forward[0].window == Window::attention);
  CHECK(b.layer_forward[0].fixed_s == doctest::Approx(256 * t).scale(0));
  CHECK(b.layer_forward[0].bytes.v == doctest::Approx(256 * 65536));
}

TEST_CASE("compiled PyTorch CP: the rotater's gathers and every dK/dV send are waited at issue, all exposed") {
  // The rotater test's setup (cp 4, 64 tokens per rank: 65,536 gathered bytes) with the compiled trait: the same
  // collectives and bytes, none behind a step's kernel and none with its seconds fixed.
  test::Setup su = with_cp(4);
  su.plan.cp_kind = CpKind::allgather;
  su.framework.cp_allgather_runs_ring_loop = true;
  su.framework.cp_grad_kv_bytes = 4.0;
  su.framework.cp_last_grad_kv_exposed = true;
  su.framework.cp_comm_waited_at_issue = true;
  const CommPlan c = su.comm();
  REQUIRE(c.layer_forward.size() == 1);
  CHECK(c.layer_forward[0].collective == Collective::all_gather);
  CHECK(c.layer_forward[0].bytes.v == 65536);
  CHECK(c.layer_forward[0].window == Window::exposed);
  CHECK(c.layer_forward[0].fixed_s < 0);
  REQUIRE(c.layer_backward.size() == 2);
  CHECK(c.layer_backward[0].collective == Collective::all_gather);
  CHECK(c.layer_backward[0].window == Window::exposed);
  CHECK(c.layer_backward[1].collective == Collective::send_recv);
  CHECK(c.layer_backward[1].bytes.v == 32768);  // dK/dV in fp32, all 4 sends
  CHECK(c.layer_backward[1].count == 4);
  CHECK(c.layer_backward[1].window == Window::exposed);
  // The ring kind: its cp - 1 K/V sends forward and backward exposed too.
  su.plan.cp_kind = CpKind::ring;
  const CommPlan r = su.comm();
  REQUIRE(r.layer_forward.size() == 1);
  CHECK(r.layer_forward[0].collective == Collective::send_recv);
  CHECK(r.layer_forward[0].count == 3);
  CHECK(r.layer_forward[0].window == Window::exposed);
  REQUIRE(r.layer_backward.size() == 2);
  for (const CommOp& op : r.layer_backward) CHECK(op.window == Window::exposed);
}

TEST_CASE("cp 1 adds no communication") {
  const CommPlan c = with_cp(1).comm();
  CHECK(c.layer_forward.empty());
  CHECK(c.layer_backward.empty());
  CHECK(std::string(context_parallel().name()) == "cp");
}

}
