#include "modeler/moe_dispatch.h"

#include <doctest/doctest.h>

#include "tests/modeler/test_fixtures.h"

using namespace shardplan;

TEST_SUITE("moe_dispatch") {

TEST_CASE("dispatcher names round-trip and unknown names are refused") {
  for (MoeDispatcher d :
       {MoeDispatcher::alltoall, MoeDispatcher::allgather, MoeDispatcher::deepep, MoeDispatcher::hybridep})
    CHECK(parse_moe_dispatcher(to_string(d)) == d);
  CHECK_FALSE(parse_moe_dispatcher("flex"));
  CHECK(deduplicates_nodes(MoeDispatcher::deepep));
  CHECK_FALSE(deduplicates_nodes(MoeDispatcher::alltoall));
}

TEST_CASE("hit probability is the hypergeometric complement") {
  // 2 picks of 16 experts, a group of 8: 1 - C(8,2)/C(16,2) = 1 - 28/120.
  CHECK(hit_probability(16, 8, 2) == doctest::Approx(1.0 - 28.0 / 120.0));
  CHECK(hit_probability(16, 16, 2) == 1.0);
  CHECK(hit_probability(16, 0, 2) == 0.0);
  CHECK(hit_probability(10, 8, 3) == 1.0);  // only 2 experts outside the group: 3 picks must hit it
}

TEST_CASE("DeepSeek-V3 shape: top-8 of 256 experts on 32 nodes, at most 4 nodes per token") {
  // 256 GPUs (8 per node), one expert per GPU, 8 per node. A token's M = 4 nodes are any 4 of 32 (balanced), so
  // another node is chosen with probability 4/32, and then holds one of the 8 experts picked among the chosen
  // 32 with probability 1 - C(24,8)/C(32,8) = 1 - 735471/10518300.
  const EpPlacement place{8, 32};
  const Routing limited{256, 8, 4};
  const double hit = 1.0 - 735471.0 / 10518300.0;
  const TokenFanout f = token_fanout(place, limited);
  CHECK(f.remote_domains == doctest::Approx(31.0 * 4.0 / 32.0 * hit));  // 3.604 nodes
  CHECK(f.remote_domains == doctest::Approx(3.604).epsilon(1e-3));
  // fp8 rows of 7168 elements with 1x128 fp32 scales: 7168 + 224 bytes. NIC bytes per token:
  const double row = dispatch_row_bytes(7168, true);
  CHECK(row == 7392.0);
  const DispatchBytes deepep = dispatch_bytes_per_token(MoeDispatcher::deepep, place, limited, row);
  CHECK(deepep.nic == doctest::Approx(3.604 * 7392).epsilon(1e-3));  // ~26,640 B
  // The alltoall dispatcher sends each of the 8 pairs: 31/32 of them leave the node, node limit or not.
  const DispatchBytes a2a = dispatch_bytes_per_token(MoeDispatcher::alltoall, place, limited, row);
  CHECK(a2a.nic == doctest::Approx(8.0 * 31.0 / 32.0 * 7392));
  CHECK(a2a.nic / deepep.nic == doctest::Approx(2.15).epsilon(0.01));
  // Without the node limit a token reaches 31 (1 - C(248,8)/C(256,8)) other nodes, ~7.0 of its 8 experts' nodes.
  const TokenFanout free = token_fanout(place, Routing{256, 8, 0});
  CHECK(free.remote_domains == doctest::Approx(31.0 * hit_probability(256, 8, 8)));
  CHECK(free.remote_domains > 6.9);
  CHECK(free.remote_domains < 7.75);
  // NVLink fan-out: per chosen node (4 of 32) the experts' GPUs other than the receiver: 4 (8 - 1) x P(GPU hit).
  const double hit_gpu = hit_probability(32, 1, 8);  // 8 of 32 experts: 1/4 for one expert
  CHECK(hit_gpu == doctest::Approx(0.25));
  CHECK(deepep.nvlink == doctest::Approx(4.0 * 7.0 * 0.25 * row));
}

TEST_CASE("one node: only NVLink; node limit above the node count changes nothing") {
  const EpPlacement node{8, 1};
  const DispatchBytes b = dispatch_bytes_per_token(MoeDispatcher::deepep, node, Routing{64, 2, 4}, 100);
  CHECK(b.nic == 0.0);
  // 7 other GPUs, each holding 8 of the 64 experts: hit 1 - C(56,2)/C(64,2).
  CHECK(b.nvlink == doctest::Approx(7.0 * (1.0 - 56.0 * 55.0 / (64.0 * 63.0)) * 100));
  const DispatchBytes a2a = dispatch_bytes_per_token(MoeDispatcher::alltoall, node, Routing{64, 2, 0}, 100);
  CHECK(a2a.nvlink == doctest::Approx(2.0 * 7.0 / 8.0 * 100));
}

TEST_CASE("two nodes of 8, top-2 of 16 experts: hand counts") {
  const EpPlacement place{8, 2};
  const Routing r{16, 2, 0};
  const TokenFanout f = token_fanout(place, r);
  CHECK(f.remote_domains == doctest::Approx(1.0 - 28.0 / 120.0));  // the other node holds 8 of the 16 experts
  CHECK(f.remote_pairs == doctest::Approx(1.0));                   // half of the 2 pairs
  CHECK(f.domain_pairs == doctest::Approx(2.0 * 7.0 / 16.0));
  // allgather: each rank receives the 15 other ranks' tokens, 8 of them over the NIC.
  const DispatchBytes ag = dispatch_bytes_per_token(MoeDispatcher::allgather, place, r, 1.0);
  CHECK(ag.nic == 8.0);
  CHECK(ag.nvlink == 7.0);
}

TEST_CASE("EP placement follows the NVLink domain, DeepEP's limited to one node") {
  System sys = test::synthetic_system(64);
  EpPlacement p = ep_placement(sys, 32, 1, false);
  CHECK(p.per_domain == 8);
  CHECK(p.domains == 4);
  p = ep_placement(sys, 8, 2, false);  // stride 2: 4 members per 8-GPU domain
  CHECK(p.per_domain == 4);
  CHECK(p.domains == 2);
  sys.tiers.front().domain_gpus = 72;  // an NVL72 rack of 4-GPU trays
  sys.gpus_per_node = 4;
  CHECK(ep_placement(sys, 64, 1, false).domains == 1);  // HybridEP: one MNNVL domain
  CHECK(ep_placement(sys, 64, 1, true).domains == 16);  // DeepEP: RDMA between trays
}

TEST_CASE("dedup call time: NIC share at the network's bandwidth, NVLink share in the SM-bound kernels") {
  const System sys = test::synthetic_system(64);  // 100 GB/s NVLink, 10 GB/s network, no latency, efficiency 1
  DedupCall c;
  c.place = {8, 2};
  c.routing = {16, 2, 0};
  c.tokens = 1000;
  c.row_bytes = 1000;
  const TokenFanout f = token_fanout(c.place, c.routing);
  const double nic_s = 1000.0 * f.remote_domains * 1000 / 10e9;
  const double dest = f.self_gpu + f.domain_gpus + f.forwarded_gpus;
  const double nvl_s = deepep_nvlink_time(kDeepepDispatchRate, 1000, 1000, dest, kDeepepDefaultSms).v;
  CHECK(dedup_call_time(sys, c).v == doctest::Approx(std::max(nic_s, nvl_s)).scale(0));
  // Twice the SMs halve the NVLink side.
  CHECK(deepep_nvlink_time(kDeepepDispatchRate, 1000, 1000, dest, 40).v == doctest::Approx(nvl_s / 2).scale(0));
  c.place = {8, 1};
  CHECK(dedup_call_time(sys, c).v == doctest::Approx(
                                         deepep_nvlink_time(kDeepepDispatchRate, 1000, 1000,
                                                            token_fanout(c.place, c.routing).self_gpu +
                                                                token_fanout(c.place, c.routing).domain_gpus,
                                                            kDeepepDefaultSms)
                                             .v).scale(0));
}

}  // TEST_SUITE
