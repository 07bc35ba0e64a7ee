#include "modeler/serving/serve_predict.h"

#include <doctest/doctest.h>

#include "tests/modeler/serving/serving_fixtures.h"

using namespace shardplan;
using namespace shardplan::serving;

namespace {
ServeInputs inputs(const ServingModel& sm, const System& sys) {
  ServeInputs in;
  in.model = &sm;
  in.system = &sys;
  in.engine = Engine::vllm;
  in.workload.input_len = 1024;
  in.workload.output_len = 128;
  in.workload.concurrency = 16;
  return in;
}
}  // namespace

TEST_CASE("aggregated: TPOT is the mixed step, TTFT covers the prompt's chunks, throughput follows") {
  const System sys = test::round_system();
  const ServingModel sm = make_serving_model(test::llama3_8b(), Precision{});
  const ServePrediction p = serve_predict(inputs(sm, sys));
  CHECK_FALSE(p.tpot_includes_first);
  CHECK(p.batch == 16);
  CHECK(p.batch_cap == "concurrency");
  CHECK(p.tpot == p.decode_step.total);
  CHECK(p.ttft > p.prefill_step.total);
  // 16 requests of 128 tokens each take TTFT + 127 TPOT.
  CHECK(p.output_tokens_per_s == doctest::Approx(16 * 128 / (p.ttft + p.tpot * 127).v));
  CHECK(p.kv_tokens > 0);
}

TEST_CASE("a small KV cache caps the batch and the excess waits, raising TTFT") {
  System sys = test::round_system();
  const ServingModel sm = make_serving_model(test::llama3_8b(), Precision{});
  ServeInputs in = inputs(sm, sys);
  in.workload.concurrency = 512;
  const ServePrediction big = serve_predict(in);
  sys.gpu.hbm_capacity = GiB(18);
  const ServePrediction small = serve_predict(in);
  CHECK(small.batch_cap == "kv_cache");
  CHECK(small.batch < big.batch);
  CHECK(small.ttft > big.ttft);
}

TEST_CASE("max_batch caps the batch") {
  const System sys = test::round_system();
  const ServingModel sm = make_serving_model(test::llama3_8b(), Precision{});
  ServeInputs in = inputs(sm, sys);
  in.plan.agg.batch = 4;
  const ServePrediction p = serve_predict(in);
  CHECK(p.batch == 4);
  CHECK(p.batch_cap == "max_batch");
}

TEST_CASE("disaggregated: decode TPOT is the pure decode step; prefill-bound loops queue in TTFT") {
  const System sys = test::round_system(16);
  const ServingModel sm = make_serving_model(test::llama3_8b(), Precision{});
  ServeInputs in = inputs(sm, sys);
  in.plan.mode = Mode::disaggregated;
  in.plan.prefill.batch = 1;
  in.plan.decode.batch = 64;
  in.workload.concurrency = 64;
  const ServePrediction p = serve_predict(in);
  CHECK(p.tpot == p.decode_step.total);
  CHECK(p.ttft >= p.prefill_step.total);
  in.plan.prefill.workers = 4;
  const ServePrediction more = serve_predict(in);
  CHECK(more.ttft <= p.ttft);
  CHECK(more.gpus == 5);
}

TEST_CASE("disaggregated: the first token waits for the prompt's KV cache to reach the decode worker") {
  System sys = test::round_system(16);
  Tier nic;
  nic.name = "infiniband";
  nic.bw_per_gpu = GBps(50);
  nic.latency = us(10);
  sys.tiers.push_back(nic);
  const ServingModel sm = make_serving_model(test::llama3_8b(), Precision{});
  ServeInputs in = inputs(sm, sys);
  in.plan.mode = Mode::disaggregated;
  in.plan.prefill.batch = 1;
  in.plan.decode.batch = 64;
  in.workload.concurrency = 1;
  in.workload.input_len = 4096;
  const ServePrediction same = serve_predict(in);
  REQUIRE(same.kv_transfer);
  // One prefill and one decode GPU fit in the node: 4096 x 131,072 B = 512 MiB over the 400 GB/s tier.
  CHECK(same.kv_transfer->link == "nvlink");
  CHECK(same.kv_transfer->shards.moved.v == 536870912.0);
  CHECK(same.kv_transfer->exposed.v == doctest::Approx(2e-6 + 536870912.0 / 400e9));
  // At concurrency 1 nothing queues: TTFT is the prefill step and the transfer.
  CHECK(same.ttft.v == doctest::Approx((same.prefill_step.total + same.kv_transfer->exposed).v));
  // Across nodes the NIC carries it, 10.7 ms; the closed loop (rounds) adds the same.
  in.plan.kv_placement = KvPlacement::cross_node;
  const ServePrediction cross = serve_predict(in);
  CHECK(cross.kv_transfer->link == "infiniband");
  CHECK(cross.ttft.v == doctest::Approx((cross.prefill_step.total + cross.kv_transfer->exposed).v));
  CHECK((cross.ttft - same.ttft).v == doctest::Approx(10e-6 + 536870912.0 / 50e9 - 2e-6 - 536870912.0 / 400e9));
  in.workload.rounds = 2;
  const ServePrediction loop = serve_predict(in);
  CHECK(loop.ttft.v == doctest::Approx(cross.ttft.v));
  // The decode pool's KV memory is the same either way.
  CHECK(cross.memory.kv_cache == same.memory.kv_cache);
  CHECK(cross.tpot == same.tpot);
  // Aggregated plans move nothing.
  in.plan.mode = Mode::aggregated;
  in.workload.rounds = 0;
  CHECK_FALSE(serve_predict(in).kv_transfer);
}

TEST_CASE("plans that do not divide the model are refused with the constraint") {
  const ModelDesc m = test::llama3_8b();
  WorkerPlan w;
  w.tp = 3;
  const Problems p = check_plan(m, w);
  REQUIRE(p.size() == 1);
  CHECK(p[0].code == "tp_divides_heads");
  ModelDesc moe = m;
  moe.moe = MoeDesc{8, 2, 1024, 0, 0, 0, false, false};
  WorkerPlan e;
  e.tp = 2;
  e.moe_ep = 4;  // moe_tp x moe_ep = 4 != tp x attention_dp = 2
  CHECK(check_plan(moe, e)[0].code == "moe_group");
  const System sys = test::round_system();
  const ServingModel sm = make_serving_model(m, Precision{});
  ServeInputs in = inputs(sm, sys);
  in.plan.agg = w;
  CHECK_THROWS_AS(serve_predict(in), ConfigError);
}

TEST_CASE("weights that leave no KV cache are infeasible") {
  System sys = test::round_system();
  sys.gpu.hbm_capacity = GiB(10);
  const ServingModel sm = make_serving_model(test::llama3_8b(), Precision{});
  CHECK_THROWS_AS(serve_predict(inputs(sm, sys)), Infeasible);
}

TEST_CASE("llama-bench's tg runs from the context depth, not after the prompt") {
  const System sys = test::round_system();
  const ServingModel sm = make_serving_model(test::llama3_8b(), Precision{});
  ServeInputs in = inputs(sm, sys);
  in.engine = Engine::llamacpp;
  in.static_batch = 1;
  in.workload.input_len = 8192;
  const ServePrediction after = serve_predict(in);
  in.separate_phases = true;
  const ServePrediction separate = serve_predict(in);
  CHECK(separate.decode_step.attention < after.decode_step.attention);
  CHECK(separate.decode_tokens_per_s > after.decode_tokens_per_s);
}
