#include "modeler/time_model.h"

#include <doctest/doctest.h>

#include "modeler/stage_params.h"
#include "tests/modeler/test_fixtures.h"

using namespace shardplan;

// step_time on hand-made per-layer costs (tiny model, 2 layers on the stage, 8 micro-batches):
//   layer forward 1 ms (attention 0.1 ms), backward 2 ms (attention 0.25 ms); head forward 0.5 ms, backward 1 ms.
//   t_f = 2 x 1 + 0.5 = 2.5 ms, t_b = 2 x 2 + 1 = 5 ms per micro-batch on the stage.
namespace {

LayerCost layer_1_2() {
  LayerCost c;
  c.forward.time = ms(1);
  c.forward.attention = ms(0.1);
  c.backward.time = ms(2);
  c.backward.attention = ms(0.25);
  return c;
}
LayerCost head_half_1() {
  LayerCost c;
  c.forward.time = ms(0.5);
  c.backward.time = ms(1);
  return c;
}
Schedule eight(double bubble = 0) {
  Schedule s;
  s.microbatches = 8;
  s.bubble_fraction = bubble;
  return s;
}
// A tp all-reduce of 1 MB over 8 ranks in the NVLink domain: 1e6 x 1.75 / 100e9 = 17.5 us per call.
CommOp tp_ar(double count, Window w) {
  return CommOp{CommKind::tp, Collective::all_reduce, Bytes(1e6), 8, 1, count, w};
}
constexpr double kAr = 17.5e-6;
int kind(CommKind k) { return static_cast<int>(k); }

}  // namespace

TEST_SUITE("time_model") {

TEST_CASE("no communication: compute, bubble and optimizer add up to the step") {
  const test::Setup su(test::tiny_model(), test::plan_of(1, 1, 1, 1, 1, 8));
  const Sharding sh = su.sharding();
  const TimeBreakdown t = step_time(su.ctx(), sh, eight(0.5), CommPlan{}, layer_1_2(), head_half_1());
  // (1 + 2) ms x 2 layers x 8 + (0.5 + 1) ms x 8 = 60 ms.
  CHECK(t.compute.v == doctest::Approx(0.060));
  CHECK(t.recompute.v == 0);
  CHECK(t.exposed_comm_total().v == 0);
  CHECK(t.bubble.v == doctest::Approx(0.5 * 0.0075).scale(0));  // bubble_fraction x (t_f + t_b)
  CHECK(t.shape.forward.v == doctest::Approx(0.0025).scale(0));
  CHECK(t.shape.backward.v == doctest::Approx(0.005).scale(0));
  CHECK(t.shape.microbatches == 8);
  CHECK(t.shape.stages == 1);
  CHECK(t.shape.chunks == 1);
  // Adam moves 34 bytes per locally owned parameter at 1000 GB/s.
  const double params = busiest_stage_params(su.ctx(), sh).total();
  CHECK(t.optimizer.v == doctest::Approx(params * kAdamBytesPerParam / test::kHbm).scale(0));
  CHECK(t.step().v == doctest::Approx((t.compute + t.bubble + t.optimizer).v));
}

TEST_CASE("recompute time joins the backward and the compute") {
  test::Setup su(test::tiny_model(), test::plan_of(1, 1, 1, 1, 1, 8));
  su.plan.recompute = Recompute::selective;
  LayerCost layer = layer_1_2();
  layer.recompute.time = ms(0.4);
  const TimeBreakdown t = step_time(su.ctx(), su.sharding(), eight(), CommPlan{}, layer, head_half_1());
  CHECK(t.compute.v == doctest::Approx(0.0664));     // (1 + 2.4) x 16 + 1.5 x 8 ms
  CHECK(t.recompute.v == doctest::Approx(0.0064).scale(0));   // 0.4 x 16 ms
  CHECK(t.shape.backward.v == doctest::Approx(0.0058).scale(0));
}

TEST_CASE("host time per layer pass: layers x micro-batches x passes x value, serial with the kernels") {
  test::Setup su(test::tiny_model(), test::plan_of(1, 1, 1, 1, 1, 8));
  const TimeBreakdown none = step_time(su.ctx(), su.sharding(), eight(0.5), CommPlan{}, layer_1_2(), head_half_1());
  CHECK(none.host_layer.v == 0);  // shipped profiles state none
  su.system.host_layer_pass = ms(3);
  // No recompute: 2 passes (forward, backward) x 2 layers x 8 micro-batches x 3 ms = 96 ms.
  const TimeBreakdown t = step_time(su.ctx(), su.sharding(), eight(0.5), CommPlan{}, layer_1_2(), head_half_1());
  CHECK(t.host_layer.v == doctest::Approx(0.096));
  CHECK(t.compute.v == doctest::Approx(none.compute.v));  // the kernels' time is unchanged
  CHECK(t.shape.forward.v == doctest::Approx(0.0025 + 2 * 0.003).scale(0));
  CHECK(t.shape.backward.v == doctest::Approx(0.005 + 2 * 0.003));
  // The pipeline's fill and drain wait on it too: bubble_fraction x (t_f + t_b).
  CHECK(t.bubble.v == doctest::Approx(0.5 * (0.0075 + 0.012)).scale(0));
  CHECK(t.step().v == doctest::Approx((t.compute + t.bubble + t.optimizer + t.host_layer).v));
  // Full recompute re-runs each layer's forward: 3 passes x 2 layers x 8 x 3 ms = 144 ms.
  su.plan.recompute = Recompute::full;
  const TimeBreakdown full = step_time(su.ctx(), su.sharding(), eight(), CommPlan{}, layer_1_2(), head_half_1());
  CHECK(full.host_layer.v == doctest::Approx(0.144));
  CHECK(full.shape.backward.v == doctest::Approx(0.005 + 2 * 2 * 0.003));
  // Block recompute of 1 of the 2 layers: 5 layer passes x 8 x 3 ms = 120 ms.
  su.plan.recompute_layers = 1;
  const TimeBreakdown half = step_time(su.ctx(), su.sharding(), eight(), CommPlan{}, layer_1_2(), head_half_1());
  CHECK(half.host_layer.v == doctest::Approx(0.120));
  // Selective recompute re-runs a part of the layer: no pass of its own.
  su.plan.recompute = Recompute::selective;
  const TimeBreakdown sel = step_time(su.ctx(), su.sharding(), eight(), CommPlan{}, layer_1_2(), head_half_1());
  CHECK(sel.host_layer.v == doctest::Approx(0.096));
}

TEST_CASE("exposed per-layer communication repeats for every layer and micro-batch") {
  const test::Setup su(test::tiny_model(), test::plan_of(1, 1, 1, 1, 1, 8));
  CommPlan comm;
  comm.layer_forward.push_back(tp_ar(2, Window::exposed));
  comm.layer_backward.push_back(tp_ar(2, Window::exposed));
  const TimeBreakdown t = step_time(su.ctx(), su.sharding(), eight(), comm, layer_1_2(), head_half_1());
  // 2 calls x 17.5 us, forward and backward, x 2 layers x 8 micro-batches.
  CHECK(t.exposed_comm[kind(CommKind::tp)].v == doctest::Approx(4 * kAr * 16).scale(0));
  CHECK(t.exposed_comm_total() == t.exposed_comm[kind(CommKind::tp)]);
  CHECK(t.shape.forward.v == doctest::Approx(2 * (1e-3 + 2 * kAr) + 0.5e-3).scale(0));
  CHECK(t.shape.layer_comm[kind(CommKind::tp)].v == doctest::Approx(4 * kAr * 2).scale(0));
  CHECK(t.step().v == doctest::Approx((t.compute + t.exposed_comm_total() + t.optimizer).v));
}

TEST_CASE("full recompute repeats the forward's collectives in backward") {
  test::Setup su(test::tiny_model(), test::plan_of(1, 1, 1, 1, 1, 8));
  su.plan.recompute = Recompute::full;
  CommPlan comm;
  comm.layer_forward.push_back(tp_ar(2, Window::exposed));
  const TimeBreakdown t = step_time(su.ctx(), su.sharding(), eight(), comm, layer_1_2(), head_half_1());
  CHECK(t.exposed_comm[kind(CommKind::tp)].v == doctest::Approx(4 * kAr * 16).scale(0));
  // Block recompute of 1 of the 2 layers: the backward repeats half the forward's collectives.
  su.plan.recompute_layers = 1;
  const TimeBreakdown half = step_time(su.ctx(), su.sharding(), eight(), comm, layer_1_2(), head_half_1());
  CHECK(half.exposed_comm[kind(CommKind::tp)].v == doctest::Approx(3 * kAr * 16).scale(0));
}

TEST_CASE("full recompute does not repeat FSDP's parameter all-gather: the backward's own gather serves it") {
  test::Setup su(test::tiny_model(), test::plan_of(1, 1, 1, 1, 1, 8));
  su.plan.recompute = Recompute::full;
  CommPlan comm;
  // FSDP with resharding after forward: one gather in forward, one in backward (data_parallel.cc), 1 MB each.
  const CommOp gather{CommKind::dp, Collective::all_gather, Bytes(1e6), 8, 1, 1, Window::exposed};
  comm.layer_forward.push_back(gather);
  comm.layer_backward.push_back(gather);
  comm.layer_forward.push_back(tp_ar(1, Window::exposed));
  const TimeBreakdown t = step_time(su.ctx(), su.sharding(), eight(), comm, layer_1_2(), head_half_1());
  su.plan.recompute = Recompute::none;
  const TimeBreakdown none = step_time(su.ctx(), su.sharding(), eight(), comm, layer_1_2(), head_half_1());
  REQUIRE(none.exposed_comm[kind(CommKind::dp)].v > 0);
  CHECK(t.exposed_comm[kind(CommKind::dp)].v == doctest::Approx(none.exposed_comm[kind(CommKind::dp)].v).scale(0));
  // The tensor-parallel all-reduce is re-run: 1 call forward, 1 in the recomputed forward.
  CHECK(t.exposed_comm[kind(CommKind::tp)].v == doctest::Approx(2 * kAr * 16).scale(0));
  CHECK(none.exposed_comm[kind(CommKind::tp)].v == doctest::Approx(kAr * 16).scale(0));
}

TEST_CASE("a recomputed MoE layer dispatches and combines again; other modules repeat no collective") {
  test::Setup su(test::tiny_model(), test::plan_of(1, 1, 1, 1, 1, 8));
  su.plan.recompute = Recompute::selective;
  CommPlan comm;
  comm.layer_forward.push_back(tp_ar(2, Window::exposed));
  comm.layer_forward.push_back(CommOp{CommKind::ep, Collective::all_reduce, Bytes(1e6), 8, 1, 1, Window::exposed});
  su.plan.recompute_modules = kRecomputeCoreAttn | kRecomputeMlp | kRecomputeLayernorm;
  const TimeBreakdown plain = step_time(su.ctx(), su.sharding(), eight(), comm, layer_1_2(), head_half_1());
  CHECK(plain.exposed_comm[kind(CommKind::ep)].v == doctest::Approx(kAr * 16).scale(0));
  su.plan.recompute_modules = kRecomputeCoreAttn | kRecomputeMoe;
  const TimeBreakdown moe = step_time(su.ctx(), su.sharding(), eight(), comm, layer_1_2(), head_half_1());
  CHECK(moe.exposed_comm[kind(CommKind::ep)].v == doctest::Approx(2 * kAr * 16).scale(0));
  CHECK(moe.exposed_comm[kind(CommKind::tp)] == plain.exposed_comm[kind(CommKind::tp)]);
}

TEST_CASE("overlap windows hide communication up to the compute they cover, attributed by share") {
  const test::Setup su(test::tiny_model(), test::plan_of(1, 1, 1, 1, 1, 8));
  LayerCost layer = layer_1_2();
  CommPlan comm;
  comm.layer_forward.push_back(tp_ar(2, Window::layer));  // 35 us behind 1 ms: hidden
  TimeBreakdown t = step_time(su.ctx(), su.sharding(), eight(), comm, layer, head_half_1());
  CHECK(t.exposed_comm_total().v == 0);
  // Behind a 20 us forward only 15 us per layer stay exposed.
  layer.forward.time = us(20);
  t = step_time(su.ctx(), su.sharding(), eight(), comm, layer, head_half_1());
  CHECK(t.exposed_comm[kind(CommKind::tp)].v == doctest::Approx(15e-6 * 16).scale(0));
  // Two kinds in one window share the excess in proportion: tp 35 us + cp 35 us behind 20 us -> 50 us, 25 each.
  comm.layer_forward.push_back(CommOp{CommKind::cp, Collective::all_reduce, Bytes(1e6), 8, 1, 2, Window::layer});
  t = step_time(su.ctx(), su.sharding(), eight(), comm, layer, head_half_1());
  CHECK(t.exposed_comm[kind(CommKind::tp)].v == doctest::Approx(25e-6 * 16).scale(0));
  CHECK(t.exposed_comm[kind(CommKind::cp)].v == doctest::Approx(25e-6 * 16).scale(0));
  // The attention window covers only the attention kernel: 8 calls (140 us) behind 100 us leave 40 us.
  CommPlan ring;
  ring.layer_forward.push_back(CommOp{CommKind::cp, Collective::all_reduce, Bytes(1e6), 8, 1, 8, Window::attention});
  t = step_time(su.ctx(), su.sharding(), eight(), ring, layer_1_2(), head_half_1());
  CHECK(t.exposed_comm[kind(CommKind::cp)].v == doctest::Approx((8 * kAr - 100e-6) * 16).scale(0));
}

TEST_CASE("per-micro-batch communication repeats for every micro-batch") {
  const test::Setup su(test::tiny_model(), test::plan_of(1, 1, 1, 1, 1, 8));
  CommPlan comm;
  // A 1 GB pipeline send across the network: 1e9 / 10e9 = 100 ms, twice per micro-batch.
  comm.microbatch.push_back(CommOp{CommKind::pp, Collective::send_recv, Bytes(1e9), 2, 8, 2, Window::exposed});
  const TimeBreakdown t = step_time(su.ctx(), su.sharding(), eight(), comm, layer_1_2(), head_half_1());
  CHECK(t.exposed_comm[kind(CommKind::pp)].v == doctest::Approx(0.2 * 8));
  CHECK(t.shape.microbatch_comm.v == doctest::Approx(0.2));
  // Behind the micro-batch's compute (Window::layer = t_f + t_b = 7.5 ms) 192.5 ms stay exposed.
  comm.microbatch[0].window = Window::layer;
  CHECK(step_time(su.ctx(), su.sharding(), eight(), comm, layer_1_2(), head_half_1())
            .exposed_comm[kind(CommKind::pp)]
            .v == doctest::Approx((0.2 - 0.0075) * 8));
}

TEST_CASE("gradient buckets: max(40M, 1M x dp) elements; the last bucket is always exposed") {
  CHECK(gradient_bucket_params(1) == 40e6);
  CHECK(gradient_bucket_params(40) == 40e6);
  CHECK(gradient_bucket_params(64) == 64e6);
  // 1 GB all-reduce over 4 ranks at stride 8 on the network: 150 ms, once per step.
  const CommOp grads{CommKind::dp, Collective::all_reduce, Bytes(1e9), 4, 8, 1, Window::last_backward};
  CommPlan comm;
  comm.step.push_back(grads);
  // The tiny model has fewer parameters than one bucket: nothing overlaps.
  const test::Setup tiny(test::tiny_model(), test::plan_of(1, 1, 1, 1, 1, 8));
  TimeBreakdown t = step_time(tiny.ctx(), tiny.sharding(), eight(), comm, layer_1_2(), head_half_1());
  CHECK(t.exposed_comm[kind(CommKind::dp)].v == doctest::Approx(0.15));
  CHECK(t.shape.step_comm.v == doctest::Approx(0.15));
  // Llama-2-7B (32 layers on the stage) behind a 160 s backward: only the last 40M-parameter bucket's share stays
  // exposed.
  const test::Setup big(test::llama2_7b(), test::plan_of(1, 1, 1, 1, 1, 8, 4096));
  LayerCost layer = layer_1_2();
  layer.backward.time = Seconds(5);
  const double params = busiest_stage_params(big.ctx(), big.sharding()).total();
  t = step_time(big.ctx(), big.sharding(), eight(), comm, layer, head_half_1());
  CHECK(t.exposed_comm[kind(CommKind::dp)].v == doctest::Approx(0.15 * 40e6 / params).scale(0));
  // Behind a short backward the excess counts instead: 150 ms - t_b (32 x 2 + 1 = 65 ms).
  t = step_time(big.ctx(), big.sharding(), eight(), comm, layer_1_2(), head_half_1());
  CHECK(t.exposed_comm[kind(CommKind::dp)].v == doctest::Approx(0.085));
  // The parameter all-gather hides behind the next step's first forward (32 x 1 + 0.5 = 32.5 ms), no tail.
  comm.step[0].window = Window::next_forward;
  t = step_time(big.ctx(), big.sharding(), eight(), comm, layer_1_2(), head_half_1());
  CHECK(t.exposed_comm[kind(CommKind::dp)].v == doctest::Approx(0.1175));
}

TEST_CASE("the optimizer runs on the locally owned share under ZeRO") {
  Plan p = test::plan_of(1, 1, 4, 1, 1, 8);
  p.zero = 1;
  const test::Setup su(test::tiny_model(), p);
  const Sharding sh = su.sharding();
  const TimeBreakdown t = step_time(su.ctx(), sh, eight(), CommPlan{}, layer_1_2(), head_half_1());
  CHECK(t.optimizer.v == doctest::Approx(busiest_stage_params(su.ctx(), sh).total() / 4 * 34 / test::kHbm).scale(0));
}

}

TEST_CASE("a Window::gemm collective hides behind its own GEMM only, minus its trailing share; SM margins slow it") {
  test::Setup su(test::tiny_model(), test::plan_of(1, 1, 1, 1, 1, 8));
  su.system.gpu.sm_count = 100;
  LayerCost layer = layer_1_2();
  layer.forward.linear[linear_slot(LinearGemm::qkv)] = us(20);   // the rest of the 1 ms forward hides nothing
  layer.forward.linear[linear_slot(LinearGemm::proj)] = us(100);
  CommPlan comm;
  CommOp ring = tp_ar(2, Window::gemm);  // 35 us
  ring.gemm = linear_slot(LinearGemm::qkv);
  ring.hide = 0.5;  // a ring of 2 chunks: beside the first 10 us only
  comm.layer_forward.push_back(ring);
  TimeBreakdown t = step_time(su.ctx(), su.sharding(), eight(), comm, layer, head_half_1());
  CHECK(t.exposed_comm[kind(CommKind::tp)].v == doctest::Approx(25e-6 * 16).scale(0));
  CHECK(t.compute.v == doctest::Approx(0.060));  // copy-engine transfers take no SMs
  // Behind the 100 us proj GEMM with a quarter trailing and a 20-SM margin: 35 / 4 us exposed, and the whole
  // GEMM runs on 80 of 100 SMs: 100 us x 20 / 80 more compute per layer.
  CommOp pipelined = tp_ar(2, Window::gemm);
  pipelined.gemm = linear_slot(LinearGemm::proj);
  pipelined.tail = 0.25;
  pipelined.overlap_sms = 20;
  pipelined.sm_margin = true;
  comm.layer_forward = {pipelined};
  t = step_time(su.ctx(), su.sharding(), eight(), comm, layer, head_half_1());
  CHECK(t.exposed_comm[kind(CommKind::tp)].v == doctest::Approx(35e-6 / 4 * 16).scale(0));
  CHECK(t.compute.v == doctest::Approx(0.060 + 100e-6 * 0.25 * 16).scale(0));
  // Without a margin, NCCL-style: only the hidden 35 us x 3/4 slow compute, by 20 / 80.
  comm.layer_forward[0].sm_margin = false;
  t = step_time(su.ctx(), su.sharding(), eight(), comm, layer, head_half_1());
  CHECK(t.compute.v == doctest::Approx(0.060 + 35e-6 * 0.75 * 0.25 * 16).scale(0));
}

TEST_CASE("contention_slowdown: compute overlapped with communication runs on the SMs the collectives leave") {
  Gpu g;
  g.sm_count = 132;
  const double f = 20.0 / 132.0;
  CHECK(contention_slowdown(g) == doctest::Approx(f / (1 - f)));  // 0.1786
  g.sm_count = 20;
  CHECK(contention_slowdown(g) == doctest::Approx(1.0));  // capped at half the SMs
  g.sm_count = 0;
  CHECK(contention_slowdown(g) == 0.0);  // unknown SM count: no contention modelled
}
