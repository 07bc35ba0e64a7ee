#include "modeler/collectives.h"

#include <doctest/doctest.h>

#include "modeler/collectives_factors.h"
#include "tests/modeler/test_fixtures.h"

using namespace shardplan;

namespace {
CommOp op(Collective c, double bytes, int group, int stride = 1) {
  return CommOp{CommKind::dp, c, Bytes(bytes), group, stride, 1, Window::exposed};
}
constexpr double S = 1e9;  // a 1 GB call
}  // namespace

TEST_SUITE("collectives") {

TEST_CASE("bus-bandwidth factors follow nccl-tests GetBw") {
  static_assert(bus_bw_factor(Collective::all_reduce, 8) == 1.75);  // 2(n-1)/n
  CHECK(bus_bw_factor(Collective::all_reduce, 2) == 1.0);
  CHECK(bus_bw_factor(Collective::all_reduce, 4) == 1.5);
  CHECK(bus_bw_factor(Collective::all_gather, 8) == 0.875);  // (n-1)/n
  CHECK(bus_bw_factor(Collective::reduce_scatter, 8) == 0.875);
  CHECK(bus_bw_factor(Collective::all_to_all, 4) == 0.75);
  CHECK(bus_bw_factor(Collective::broadcast, 8) == 1.0);
  CHECK(bus_bw_factor(Collective::send_recv, 2) == 1.0);
  // One rank moves nothing.
  for (Collective c :
       {Collective::all_reduce, Collective::all_gather, Collective::reduce_scatter, Collective::all_to_all})
    CHECK(bus_bw_factor(c, 1) == 0.0);
  // An all-reduce moves what a reduce-scatter plus an all-gather of the same size move.
  for (int n : {2, 3, 8, 64})
    CHECK(bus_bw_factor(Collective::all_reduce, n) ==
          doctest::Approx(bus_bw_factor(Collective::reduce_scatter, n) + bus_bw_factor(Collective::all_gather, n)));
}

TEST_CASE("collective names: ours and nccl-tests' binary stems") {
  for (int i = 0; i < kNumCollectives; ++i) {
    const auto c = static_cast<Collective>(i);
    CHECK(collective_from_name(collective_name(c)) == c);
  }
  CHECK(std::string(collective_name(Collective::all_to_all)) == "all_to_all");
  CHECK(collective_from_name("alltoall") == Collective::all_to_all);
  CHECK(collective_from_name("sendrecv") == Collective::send_recv);
  CHECK_FALSE(collective_from_name("allreduce_perf").has_value());
  CHECK_FALSE(collective_from_name("").has_value());
}

TEST_CASE("latency steps: ring inside a tier, tree for scale-out all-reduce when shorter") {
  CHECK(latency_steps(Collective::all_reduce, 1, false) == 0);
  CHECK(latency_steps(Collective::all_reduce, 8, false) == 14);  // 2(n-1)
  CHECK(latency_steps(Collective::all_gather, 8, false) == 7);   // n-1
  CHECK(latency_steps(Collective::reduce_scatter, 8, true) == 7);
  CHECK(latency_steps(Collective::all_to_all, 16, true) == 1);  // every peer at once, not a ring
  CHECK(latency_steps(Collective::send_recv, 8, false) == 1);
  CHECK(latency_steps(Collective::all_reduce, 64, true) == 12);  // min(126, 2 log2 64)
  CHECK(latency_steps(Collective::all_reduce, 3, true) == 4);    // min(4, 2 ceil(log2 3) = 4)
  CHECK(latency_steps(Collective::all_reduce, 100, true) == 14); // 2 ceil(log2 100) = 14
  CHECK(latency_steps(Collective::all_reduce, 64, false) == 126);
}

TEST_CASE("within the NVLink domain: S x factor / bw + steps x latency") {
  System sys = test::synthetic_system(64);
  // all-reduce of 1 GB over 8 ranks: 1e9 x 1.75 / 100e9 = 17.5 ms.
  CHECK(collective_time(sys, op(Collective::all_reduce, S, 8)).v == doctest::Approx(0.0175));
  // all-gather of a 1 GB output over 4 ranks: 1e9 x 0.75 / 100e9 = 7.5 ms.
  CHECK(collective_time(sys, op(Collective::all_gather, S, 4)).v == doctest::Approx(0.0075).scale(0));
  // send/recv between neighbours: the whole buffer, 10 ms.
  CHECK(collective_time(sys, op(Collective::send_recv, S, 2)).v == doctest::Approx(0.01));
  // Nothing to do.
  CHECK(collective_time(sys, op(Collective::all_reduce, S, 1)).v == 0.0);
  CHECK(collective_time(sys, op(Collective::all_reduce, 0, 8)).v == 0.0);
  // Latency: 14 ring steps of 5 us.
  sys.tiers[0].latency = us(5);
  CHECK(collective_time(sys, op(Collective::all_reduce, S, 8)).v == doctest::Approx(0.0175 + 14 * 5e-6).scale(0));
  // The achieved fraction divides the bandwidth; send/recv uses its own curve when the tier has one.
  sys.tiers[0].latency = Seconds(0);
  sys.tiers[0].busbw_eff = Curve::constant(0.5, "test");
  CHECK(collective_time(sys, op(Collective::all_reduce, S, 8)).v == doctest::Approx(0.035));
  CHECK(collective_time(sys, op(Collective::send_recv, S, 2)).v == doctest::Approx(0.02));
  sys.tiers[0].p2p_eff = Curve::constant(0.25, "test");
  CHECK(collective_time(sys, op(Collective::send_recv, S, 2)).v == doctest::Approx(0.04));
  CHECK(collective_time(sys, op(Collective::all_reduce, S, 8)).v == doctest::Approx(0.035));
}

TEST_CASE("a multi-tray NVLink domain (GB200 NVL72) costs its groups on NVLink, not by gpus_per_node") {
  // NVL72: 4 GPUs per compute tray (the profile's node), 72 in one NVLink domain. An EP 8 or EP 64 all-to-all and
  // a 32-rank DP reduce-scatter span several trays but one domain: the flat NVLink formula, no network share
  // (serving's all-reduce table stopped at gpus_per_node; training's selection reads the tier's domain_gpus).
  System sys = test::synthetic_system(72);
  sys.gpus_per_node = 4;
  sys.tiers[0].domain_gpus = 72;
  CHECK(sys.tier_for_group(8, 1) == 0);
  CHECK(sys.tier_for_group(64, 1) == 0);
  CHECK(sys.tier_for_group(32, 2) == 0);   // span 63
  CHECK(sys.tier_for_group(64, 2) == 1);   // span 127: leaves the rack
  // EP 8 all-to-all of 1 GB: 1e9 x 7/8 / 100e9 = 8.75 ms (the network would take 1e9 x 4/8 / 10e9 = 50 ms).
  CHECK(collective_time(sys, op(Collective::all_to_all, S, 8)).v == doctest::Approx(0.00875));
  CHECK(collective_time(sys, op(Collective::all_to_all, S, 64)).v == doctest::Approx(1e9 * 63.0 / 64 / 100e9));
  CHECK(collective_time(sys, op(Collective::reduce_scatter, S, 32, 2)).v == doctest::Approx(1e9 * 31.0 / 32 / 100e9));
  // The same EP 8 on 8-GPU nodes with an 8-GPU domain: identical, the tray size does not enter.
  System dgx = test::synthetic_system(8);
  CHECK(collective_time(dgx, op(Collective::all_to_all, S, 8)).v ==
        doctest::Approx(collective_time(sys, op(Collective::all_to_all, S, 8)).v));
}

TEST_CASE("across domains: inner S x factor(g) / bw_inner vs outer S x factor(k) / (g x bw_outer)") {
  System sys = test::synthetic_system(64);
  // 16 ranks at stride 1: g = 8 per domain, k = 2 domains.
  //   inner 1e9 x 1.75 / 100e9 = 17.5 ms; outer 1e9 x 1.0 / (8 x 10e9) = 12.5 ms -> 17.5 ms.
  CHECK(collective_time(sys, op(Collective::all_reduce, S, 16)).v == doctest::Approx(0.0175));
  // 64 ranks: g = 8, k = 8: outer 1e9 x 1.75 / 80e9 = 21.875 ms > inner 17.5 ms.
  CHECK(collective_time(sys, op(Collective::all_reduce, S, 64)).v == doctest::Approx(0.021875));
  // all-gather over 64: inner 1e9 x 0.875 / 100e9 = 8.75 ms; outer 1e9 x 0.875 / 80e9 = 10.9375 ms.
  CHECK(collective_time(sys, op(Collective::all_gather, S, 64)).v == doctest::Approx(0.0109375));
  CHECK(collective_time(sys, op(Collective::reduce_scatter, S, 64)).v == doctest::Approx(0.0109375));
  // 8 ranks at stride 2 span 15 GPUs: g = 8/2 = 4 per domain, k = 2:
  //   inner 1e9 x 1.5 / 100e9 = 15 ms; outer 1e9 x 1.0 / (4 x 10e9) = 25 ms.
  CHECK(collective_time(sys, op(Collective::all_reduce, S, 8, 2)).v == doctest::Approx(0.025));
  // 4 ranks at stride 8 (a data-parallel group across nodes): one member per domain, g = 1, k = 4:
  //   the whole ring on the network, 1e9 x 1.5 / 10e9 = 150 ms.
  CHECK(collective_time(sys, op(Collective::all_reduce, S, 4, 8)).v == doctest::Approx(0.15));
  // Oversubscription divides the network bandwidth.
  sys.tiers[1].oversubscription = 2.0;
  CHECK(collective_time(sys, op(Collective::all_reduce, S, 4, 8)).v == doctest::Approx(0.30));
}

TEST_CASE("across domains, an all-to-all sends each share over its own tier at once") {
  System sys = test::synthetic_system(64);
  // 16 ranks, 8 per domain: 7/16 of S over NVLink (1e9 x 7/16 / 100e9 = 4.375 ms) while 8/16 leaves through each
  // rank's NIC (1e9 x 8/16 / 10e9 = 50 ms); the slower share decides.
  CHECK(collective_time(sys, op(Collective::all_to_all, S, 16)).v == doctest::Approx(0.05));
  // One rank per domain (stride 8): every peer is remote, 15/16 of S over the network.
  CHECK(collective_time(sys, op(Collective::all_to_all, S, 16, 8)).v == doctest::Approx(0.09375));
  // Inside one domain it is flat: 7/8 of S over NVLink.
  CHECK(collective_time(sys, op(Collective::all_to_all, S, 8)).v == doctest::Approx(0.00875).scale(0));
  // One network latency, not a ring's n-1 steps.
  sys.tiers[1].latency = us(10);
  CHECK(collective_time(sys, op(Collective::all_to_all, S, 64)).v ==
        doctest::Approx(1e9 * 56 / 64 / 10e9 + 10e-6).scale(0));
}

TEST_CASE("across domains, point-to-point runs flat on the outer tier") {
  System sys = test::synthetic_system(64);
  // A pipeline send between stages 8 GPUs apart (span 9 > 8): 1e9 / 10e9 = 100 ms.
  CHECK(collective_time(sys, op(Collective::send_recv, S, 2, 8)).v == doctest::Approx(0.1));
  // Latency across the network: a hierarchical all-reduce (g = 8 per domain, k = 8 domains) takes the shorter of
  // NCCL's ring (2(k-1) = 14 network steps, the other 112 inside domains at latency 0: 140 us) and tree
  // (2 (7 x 0 + log2 8 x 10 us) = 60 us); a send pays one network latency.
  sys.tiers[1].latency = us(10);
  CHECK(collective_time(sys, op(Collective::all_reduce, S, 64)).v == doctest::Approx(0.021875 + 60e-6).scale(0));
  CHECK(hierarchical_latency(sys.tiers[0], sys.tiers[1], Collective::all_gather, 8, 8).v
      == doctest::Approx(70e-6).scale(0));
  CHECK(collective_time(sys, op(Collective::send_recv, S, 2, 8)).v == doctest::Approx(0.1 + 10e-6));
}

TEST_CASE("count is not applied by collective_time") {
  const System sys = test::synthetic_system(8);
  CommOp o = op(Collective::all_reduce, S, 8);
  o.count = 5;
  CHECK(collective_time(sys, o).v == doctest::Approx(0.0175));
}

}
