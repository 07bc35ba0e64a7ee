#include <doctest/doctest.h>

#include "modeler/collectives_factors.h"
#include "modeler/evaluate.h"
#include "modeler/stage_params.h"
#include "tests/modeler/test_fixtures.h"

using namespace shardplan;
using namespace shardplan::test;

namespace {

/// Llama-3.2-1B-shaped (the SDP paper pre-trains a 1B LLaMA on FineWeb).
ModelDesc llama_1b() {
  ModelDesc m = llama2_7b();
  m.name = "llama-1b";
  m.layers = 16;
  m.hidden = 2048;
  m.ffn_hidden = 8192;
  m.heads = 32;
  m.kv_heads = 8;
  m.head_dim = 64;
  m.vocab = 128256;
  m.tied_embeddings = true;
  return m;
}

Plan ddp(double keep = 1.0, SdpMask mask = SdpMask::forward) {
  Plan p = plan_of(1, 1, 8, 1, 4, 32, 2048);
  p.zero = 0;
  p.sdp_keep = keep;
  p.sdp_mask = mask;
  return p;
}

const CommOp* layer_grad_op(const CommPlan& c, int group) {
  for (const CommOp& op : c.step)
    if (op.kind == CommKind::dp && op.group == group) return &op;
  return nullptr;
}

}  // namespace

TEST_SUITE("sdp") {

TEST_CASE("validate: keep in (0, 1] and keep x dp a whole number of holders") {
  Plan p = ddp(0);
  CHECK(Setup(tiny_model(), p, 8).problems(subnetwork_data_parallel())[0].message == "sdp keep (0) must be in (0, 1]");
  p.sdp_keep = 1.5;
  CHECK(codes(Setup(tiny_model(), p, 8).problems(subnetwork_data_parallel())) == "sdp_keep_range");
  p.sdp_keep = 0.3;
  CHECK(Setup(tiny_model(), p, 8).problems(subnetwork_data_parallel())[0].message ==
        "sdp keep x dp (0.3 x 8) must be a whole number of workers, at least 1, holding each parameter");
  p.sdp_keep = 0.25;
  CHECK(Setup(tiny_model(), p, 8).problems(subnetwork_data_parallel()).empty());
  CHECK(p.changes_training_semantics());
  CHECK_FALSE(ddp().changes_training_semantics());
}

TEST_CASE("forward masking, block granularity: the stage holds and runs keep x its layers") {
  const Sharding sh = Setup(llama_1b(), ddp(0.5), 8).sharding();
  CHECK(sh.layers == 8);
  CHECK(sh.holder_fraction == 0.5);
  CHECK(sh.grad_fraction == 1);
  Plan neuron = ddp(0.5);
  neuron.sdp_granularity = SdpGranularity::neuron;
  const Sharding n = Setup(llama_1b(), neuron, 8).sharding();
  CHECK(n.layers == 16);
  CHECK(n.ffn == 4096);
  CHECK(n.heads == 16);
  CHECK(n.weight_shard == 2);
}

TEST_CASE("DP gradient bytes scale by keep x ((k-1)/k) / ((N-1)/N) for the layer parameters") {
  const Setup full(llama_1b(), ddp(), 8), half(llama_1b(), ddp(0.5), 8);
  const double layers = busiest_stage_params(full.ctx(), full.sharding()).layers;
  const double embedding = busiest_stage_params(full.ctx(), full.sharding()).embedding;
  const CommPlan full_comm = full.comm(), half_comm = half.comm();
  const CommOp* all = layer_grad_op(full_comm, 8);
  REQUIRE(all != nullptr);
  CHECK(all->bytes.v == doctest::Approx((layers + embedding) * 4.0));
  const CommOp* held = layer_grad_op(half_comm, 4);    // k = 0.5 x 8 holders
  const CommOp* shared = layer_grad_op(half_comm, 8);  // the tied embedding, held by all
  REQUIRE(held != nullptr);
  REQUIRE(shared != nullptr);
  CHECK(shared->bytes.v == doctest::Approx(embedding * 4.0));
  const double ddp_bus = layers * 4.0 * bus_bw_factor(Collective::all_reduce, 8);
  const double sdp_bus = held->bytes.v * bus_bw_factor(Collective::all_reduce, 4);
  CHECK(sdp_bus / ddp_bus == doctest::Approx(0.5 * (3.0 / 4.0) / (7.0 / 8.0)));
  // Backward masking: the same gradient traffic, from full weights.
  const Setup bwd(llama_1b(), ddp(0.5, SdpMask::backward), 8);
  const CommPlan bwd_comm = bwd.comm();
  REQUIRE(layer_grad_op(bwd_comm, 4) != nullptr);
  CHECK(layer_grad_op(bwd_comm, 4)->bytes.v == doctest::Approx(layers * 0.5 * 4.0));
}

TEST_CASE("Llama 1B, DDP vs SDP keep 0.5 forward masking: memory reduction inside the paper's 28-60%") {
  auto total = [](const Plan& p) {
    const Setup s(llama_1b(), p, 8);
    const Estimate e = evaluate(s.model, s.system, s.plan, s.framework);
    REQUIRE(e.time.compute.v > 0);
    return e.memory.total().v;
  };
  const double reduction = 1.0 - total(ddp(0.5)) / total(ddp());
  CHECK(reduction > 0.28);
  CHECK(reduction < 0.60);
  // Backward masking keeps weights and activations: a smaller saving.
  const double bwd = 1.0 - total(ddp(0.5, SdpMask::backward)) / total(ddp());
  CHECK(bwd > 0.0);
  CHECK(bwd < reduction);
}

TEST_CASE("MFU of an SDP plan counts the subnetwork's FLOPs: keep x the layers' share, the LM head whole") {
  auto run = [](const Plan& p) {
    const Setup s(llama_1b(), p, 8);
    return evaluate(s.model, s.system, s.plan, s.framework);
  };
  const Estimate full = run(ddp()), fwd = run(ddp(0.5)), bwd = run(ddp(0.5, SdpMask::backward));
  const ModelDesc m = llama_1b();
  const double head = 6.0 * m.hidden * m.vocab;
  // Forward masking, block granularity: half the layers run, every layer's FLOPs as before.
  CHECK(fwd.model_flops_per_token == doctest::Approx(head + 0.5 * (full.model_flops_per_token - head)));
  // Backward masking: the forward whole, the backward GEMMs for the held half (attention's backward whole).
  CHECK(bwd.model_flops_per_token < full.model_flops_per_token);
  CHECK(bwd.model_flops_per_token > fwd.model_flops_per_token);
  for (const Estimate* e : {&full, &fwd, &bwd}) {
    CHECK(e->mfu > 0.0);
    CHECK(e->mfu < 1.0);
  }
}

}
