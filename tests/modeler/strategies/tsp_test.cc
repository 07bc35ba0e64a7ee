#include <doctest/doctest.h>

#include "modeler/collectives_factors.h"
#include "modeler/evaluate.h"
#include "tests/modeler/test_fixtures.h"

using namespace shardplan;
using namespace shardplan::test;

namespace {

Plan tsp_plan(int d, int seq = 128) {
  Plan p = plan_of(1, 1, 1, 1, 1, 1, seq);
  p.tsp = d;
  p.zero = 0;
  return p;
}

/// MHA with a gated MLP of f = 4h: W_layer = (4h^2 + 12h^2) x 2 bytes (+ norms), the techniques.md crossover case.
ModelDesc mha_4h() {
  ModelDesc m = llama2_7b();
  m.hidden = 1024;
  m.heads = m.kv_heads = 8;
  m.head_dim = 128;
  m.ffn_hidden = 4096;
  m.layers = 2;
  return m;
}

/// Bytes one rank receives per layer in the forward pass: the nccl-tests bus bytes of every per-layer op.
double forward_bytes(const CommPlan& c) {
  double b = 0;
  for (const CommOp& op : c.layer_forward) b += op.bytes.v * bus_bw_factor(op.collective, op.group) * op.count;
  return b;
}

}  // namespace

TEST_SUITE("tsp") {

TEST_CASE("validate: replaces tp and cp; divides heads, kv heads, ffn and 2 x tsp divides the sequence") {
  Plan p = tsp_plan(4);
  CHECK(Setup(tiny_gqa_gated(), p).problems(folded_tensor_sequence_parallel()).size() == 1);  // kv_heads 2
  CHECK(Setup(tiny_gqa_gated(), p).problems(folded_tensor_sequence_parallel())[0].message ==
        "tsp (4) does not divide kv_heads (2)");
  p.tp = 2;
  p.seq_len = 100;
  const Problems ps = Setup(tiny_model(), p).problems(folded_tensor_sequence_parallel());
  CHECK(codes(ps) == "tsp_exclusive,tsp_divides_seq");
  CHECK(ps[0].message ==
        "tsp (4) replaces tensor and context parallelism on its ranks: give tp 1 and cp 1 (got tp 2, cp 1)");
  CHECK(ps[1].message == "2 x tsp (8) does not divide the sequence length (100) for the zigzag split");
  CHECK(Setup(tiny_model(), tsp_plan(4)).problems(folded_tensor_sequence_parallel()).empty());
}

TEST_CASE("shard: 1/D of the tokens (norms and residuals too) and of the weights; full heads and width") {
  const Sharding sh = Setup(tiny_model(), tsp_plan(4)).sharding();
  CHECK(sh.tokens == 32);
  CHECK(sh.norm_tokens == 32);
  CHECK(sh.seq_q == 32);
  CHECK(sh.seq_kv == 128);
  CHECK(sh.heads == 4);
  CHECK(sh.ffn == 256);
  CHECK(sh.weight_shard == 4);
  CHECK(sh.embedding_shard == 4);
  CHECK(sh.gemm_splits == 4);
  CHECK(sh.transient_bytes > 0);
}

TEST_CASE("comm: forward (D-1)/D x [W_layer + 2 b s h_kv B]; backward adds the gradient reduce-scatter") {
  const Setup s(mha_4h(), tsp_plan(8, 1024));
  const double w = params_per_layer(s.model) * 2.0, kv = 2.0 * 1024 * 1024 * 2.0;
  CHECK(forward_bytes(s.comm()) == doctest::Approx(7.0 / 8.0 * (w + kv)));
  double bwd = 0;
  for (const CommOp& op : s.comm().layer_backward) bwd += op.bytes.v * bus_bw_factor(op.collective, op.group);
  CHECK(bwd == doctest::Approx(7.0 / 8.0 * (2.0 * w + kv)));
}

TEST_CASE("TSP moves fewer bytes per layer than TP once tokens per micro-batch exceed about 8h") {
  // h = 1024: the crossover is near 8h = 8192 tokens (norm weights move it by a hair).
  for (const auto& row : {std::pair{4096, false}, {6144, false}, {10240, true}, {16384, true}}) {
    const int seq = row.first;  // not a structured binding: clang 14 cannot capture one in CAPTURE's lambda
    const bool tsp_wins = row.second;
    CAPTURE(seq);
    Plan tp = plan_of(8, 1, 1, 1, 1, 1, seq);
    tp.sequence_parallel = false;
    const double tp_bytes = forward_bytes(Setup(mha_4h(), tp).comm());
    const double tsp_bytes = forward_bytes(Setup(mha_4h(), tsp_plan(8, seq)).comm());
    CHECK((tsp_bytes < tp_bytes) == tsp_wins);
  }
}

TEST_CASE("Llama-2-7B at 128K tokens on 8 GPUs, full recompute, no ZeRO: TSP < TP8 < TP2 x CP4 in memory") {
  auto peak = [](Plan p) {
    p.seq_len = 131072;
    p.recompute = Recompute::full;
    p.zero = 0;
    Setup s(llama2_7b(), p, 8);
    s.system.gpu.hbm_capacity = GiB(192);
    const Estimate e = evaluate(s.model, s.system, s.plan, s.framework);
    REQUIRE(e.time.compute.v > 0);
    return to_GiB(e.memory.total());
  };
  Plan tp8 = plan_of(8, 1, 1, 1, 1, 1);
  tp8.sequence_parallel = false;  // the paper's "TP": Megatron TP without sequence parallelism
  Plan tp2cp4 = plan_of(2, 1, 1, 4, 1, 1);
  tp2cp4.sequence_parallel = false;
  const double tsp = peak(tsp_plan(8)), tp = peak(tp8), tpcp = peak(tp2cp4);
  CHECK(tsp < tp);
  CHECK(tp < tpcp);
  CHECK(tsp / tp < 0.75);  // "well below 1" (paper: 38.8 / 70.0 = 0.55)
}

}
