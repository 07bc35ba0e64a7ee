#include "modeler/serving/kv_transfer.h"

#include <doctest/doctest.h>

#include "modeler/serving/speculative.h"
#include "tests/modeler/serving/serving_fixtures.h"

using namespace shardplan;
using namespace shardplan::serving;

namespace {

/// meta-llama/Llama-3.1-70B config.json: 80 layers, h 8192, SwiGLU 28672, 64 query heads and 8 K/V heads of 128,
/// V 128256.
ModelDesc llama31_70b() {
  ModelDesc m = test::plain_model("llama-3.1-70b", 80, 8192, 28672, 64, 8, 128, 128256);
  m.gated_mlp = true;
  m.norm = NormKind::rmsnorm;
  return m;
}

/// DeepSeek-V3's attention (config.json: 61 layers, kv_lora_rank 512, qk_rope_head_dim 64), dense for brevity:
/// the cache is the latent, the MLP does not matter here.
ModelDesc mla_model() {
  ModelDesc m = test::plain_model("mla-61", 61, 7168, 18432, 128, 128, 128, 129280);
  m.gated_mlp = true;
  m.norm = NormKind::rmsnorm;
  m.mla = MlaDesc{1536, 512, 128, 64, 128};
  return m;
}

/// The round system with a scale-out tier: 50 GB/s per GPU, 10 us, efficiency 1 (a 400 Gb/s NIC).
System two_tier(int gpus = 16) {
  System s = test::round_system(gpus);
  Tier nic;
  nic.name = "infiniband";
  nic.bw_per_gpu = GBps(50);
  nic.latency = us(10);
  s.tiers.push_back(nic);
  return s;
}

WorkerPlan tp(int n) {
  WorkerPlan w;
  w.tp = n;
  return w;
}

}  // namespace

TEST_CASE("Llama-3.1-70B bf16, 2048 tokens, tp 4 -> tp 2: bytes by hand") {
  const ServingModel sm = make_serving_model(llama31_70b(), Precision{});  // bf16 KV: 2 bytes
  const KvShards s = kv_shards(sm, tp(4), tp(2), 2048);
  // 2 (K, V) x 8 heads x 128 x 2 B x 80 layers = 327,680 B per token; x 2048 = 640 MiB.
  CHECK(s.unique.v == 671088640.0);
  // Each tp 2 decode GPU holds 4 heads: 320 MiB; both receive: 640 MiB moved.
  CHECK(s.receivers == 2);
  CHECK(s.recv_per_gpu.v == 335544320.0);
  CHECK(s.moved.v == 671088640.0);
  // Every tp 4 prefill GPU sends its 2 heads: 160 MiB.
  CHECK(s.senders == 4);
  CHECK(s.send_per_gpu.v == 167772160.0);
  // The other way, tp 2 -> tp 4: each prefill GPU sends its 4 heads to two decode GPUs, 2 heads each.
  const KvShards r = kv_shards(sm, tp(2), tp(4), 2048);
  CHECK(r.senders == 2);
  CHECK(r.send_per_gpu.v == 335544320.0);
  CHECK(r.recv_per_gpu.v == 167772160.0);
  // pp 2 on the decode side halves each GPU's layers; tp 16 replicates the 8 heads (one per GPU, twice).
  WorkerPlan pp2 = tp(2);
  pp2.pp = 2;
  CHECK(kv_shards(sm, tp(4), pp2, 2048).recv_per_gpu.v == 167772160.0);
  const KvShards rep = kv_shards(sm, tp(8), tp(16), 2048);
  CHECK(rep.recv_per_gpu.v == 671088640.0 / 8);
  CHECK(rep.moved.v == 2 * 671088640.0);
  CHECK(rep.senders == 8);
}

TEST_CASE("Llama-3.1-70B tp 4 -> tp 2: times on the NIC and on NVLink") {
  const ServingModel sm = make_serving_model(llama31_70b(), Precision{});
  const System sys = two_tier();
  KvTransferInputs in;
  in.model = &sm;
  in.system = &sys;
  in.engine = Engine::vllm;
  in.prefill = tp(4);
  in.decode = tp(2);
  in.tokens = 2048;
  in.prefill_step = ms(200);
  // 4 + 2 GPUs fit in the 8-GPU node: NIXL over the scale-up tier, 320 MiB at 400 GB/s after 2 us.
  const KvTransfer same = kv_transfer(in);
  CHECK(same.same_node);
  CHECK(same.link == "nvlink");
  CHECK(same.time.v == doctest::Approx(2e-6 + 335544320.0 / 400e9));  // 0.841 ms
  CHECK(same.exposed == same.time);
  CHECK(same.send_time.v == doctest::Approx(167772160.0 / 400e9));
  // Four prefill workers make 18 GPUs: the pools span nodes, the decode GPU's NIC takes 6.72 ms.
  in.prefill.workers = 4;
  const KvTransfer cross = kv_transfer(in);
  CHECK_FALSE(cross.same_node);
  CHECK(cross.link == "infiniband");
  CHECK(cross.time.v == doctest::Approx(10e-6 + 335544320.0 / 50e9));  // 6.721 ms
  CHECK(cross.placement == "different nodes (the deployment spans nodes), NIXL/UCX over infiniband");
  // Stated placement overrides the rule.
  in.placement = KvPlacement::same_node;
  CHECK(kv_transfer(in).link == "nvlink");
  // SGLang's default Mooncake RDMA takes the NIC inside the node too; --disaggregation-transfer-backend nixl not.
  in.engine = Engine::sglang;
  CHECK(kv_transfer(in).link == "infiniband");
  CHECK(kv_transfer(in).transport == KvTransport::mooncake);
  in.transport = KvTransport::nixl;
  CHECK(kv_transfer(in).link == "nvlink");
}

TEST_CASE("MLA: the decode rank receives the whole latent on every GPU") {
  Precision p;
  p.kv_bytes = 1;  // fp8 cache
  const ServingModel sm = make_serving_model(mla_model(), p);
  // (512 + 64) x 61 layers x 1 B = 35,136 B per token; 1024 tokens: 35,979,264 B.
  const KvShards a = kv_shards(sm, tp(1), tp(1), 1024);
  CHECK(a.unique.v == 35979264.0);
  CHECK(a.moved.v == 35979264.0);
  CHECK(a.senders == 1);
  // tp 8 -> tp 8: each decode GPU reads its copy from its own prefill rank.
  const KvShards b = kv_shards(sm, tp(8), tp(8), 1024);
  CHECK(b.moved.v == 8 * 35979264.0);
  CHECK(b.senders == 8);
  CHECK(b.send_per_gpu.v == 35979264.0);
  // tp 8 -> tp 1: one prefill GPU holds what the decode GPU needs (a replica, as vLLM reads it).
  const KvShards c = kv_shards(sm, tp(8), tp(1), 1024);
  CHECK(c.senders == 1);
  CHECK(c.send_per_gpu.v == 35979264.0);
  // tp 1 -> tp 8: the one prefill GPU sends its latent to all eight.
  CHECK(kv_shards(sm, tp(1), tp(8), 1024).send_per_gpu.v == 8 * 35979264.0);
}

TEST_CASE("placement: one node when the deployment fits in it, the NVL72 tray being the node") {
  System sys = two_tier(16);
  CHECK(kv_same_node(sys, KvPlacement::automatic, 8));
  CHECK_FALSE(kv_same_node(sys, KvPlacement::automatic, 9));
  CHECK(kv_same_node(sys, KvPlacement::same_node, 64));
  CHECK_FALSE(kv_same_node(sys, KvPlacement::cross_node, 2));
  sys.gpus_per_node = 4;  // GB200 NVL72: 4-GPU trays in a 72-GPU NVLink domain
  sys.tiers.front().domain_gpus = 72;
  CHECK(kv_same_node(sys, KvPlacement::automatic, 4));
  CHECK_FALSE(kv_same_node(sys, KvPlacement::automatic, 8));
  // A one-tier system has no NIC: every transfer takes its one tier.
  const System one = test::round_system(16);
  const ServingModel sm = make_serving_model(test::llama3_8b(), Precision{});
  KvTransferInputs in;
  in.model = &sm;
  in.system = &one;
  in.prefill = tp(4);
  in.decode = tp(4);
  in.prefill.workers = 2;
  in.tokens = 1024;
  CHECK(kv_transfer(in).link == "nvlink");
}

TEST_CASE("exposure: after the prefill step, SGLang's chunks stream, a step's prompts queue") {
  const ServingModel sm = make_serving_model(test::llama3_8b(), Precision{});
  const System sys = two_tier();
  KvTransferInputs in;
  in.model = &sm;
  in.system = &sys;
  in.engine = Engine::trtllm;
  in.prefill = tp(1);
  in.decode = tp(1);
  in.prefill.workers = 8;
  in.decode.workers = 8;  // 16 GPUs: across nodes, 50 GB/s
  in.tokens = 8192;
  in.prefill_step = ms(500);
  // Llama-3-8B: 2 x 8 x 128 x 2 B x 32 layers = 131,072 B per token; 8192 tokens: 1 GiB, 21.5 ms.
  const KvTransfer one = kv_transfer(in);
  CHECK(one.shards.moved.v == 1073741824.0);
  CHECK(one.time.v == doctest::Approx(10e-6 + 1073741824.0 / 50e9));
  // Three prompts per step leave one after another: the mean waits one more transfer.
  in.prompts_per_step = 3;
  CHECK(kv_transfer(in).exposed.v == doctest::Approx(2 * one.time.v));
  // TRT-LLM sends a chunked prompt after its last chunk; SGLang sends each chunk as it completes: with 4 chunks
  // of 125 ms compute and 5.4 ms transfer each, only the last chunk's transfer is left.
  in.prompts_per_step = 1;
  in.chunks = 4;
  CHECK(kv_transfer(in).exposed == one.time);
  in.engine = Engine::sglang;
  in.transport = KvTransport::nixl;
  CHECK(kv_transfer(in).exposed.v == doctest::Approx(10e-6 + 1073741824.0 / 4 / 50e9));
  // A chunk that moves slower than the next computes leaves a backlog: x + (n - 1)(x - c).
  in.prefill_step = ms(8);
  const double x = 10e-6 + 1073741824.0 / 4 / 50e9, c = 2e-3;
  CHECK(kv_transfer(in).exposed.v == doctest::Approx(x + 3 * (x - c)));
}

TEST_CASE("the draft's layers move with the target's") {
  const ServingModel sm = make_serving_model(mla_model(), Precision{});
  const ServingModel head = make_draft_head(sm, SpecMethod::eagle);
  const KvShards with = kv_shards(sm, tp(1), tp(1), 100, &head);
  const KvShards without = kv_shards(sm, tp(1), tp(1), 100);
  CHECK(with.moved > without.moved);
  CHECK((with.moved - without.moved).v == doctest::Approx(draft_kv_bytes_per_token(head, tp(1), 100).v * 100));
}

TEST_CASE("bad input is refused with the constraint") {
  const ServingModel sm = make_serving_model(test::llama3_8b(), Precision{});
  System none = test::round_system();
  none.tiers.clear();
  KvTransferInputs in;
  in.model = &sm;
  in.system = &none;
  in.tokens = 10;
  CHECK_THROWS_WITH_AS(kv_transfer(in), "KV transfer: the system has no interconnect tier", ConfigError);
  const System sys = two_tier();
  in.system = &sys;
  in.tokens = 0;
  CHECK_THROWS_WITH_AS(kv_transfer(in), "KV transfer: the prompt must have at least one token", ConfigError);
}
