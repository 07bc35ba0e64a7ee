#include "calibrate/plausibility.h"

#include <doctest/doctest.h>

#include "modeler/problems.h"

using namespace shardplan;
using namespace shardplan::calibrate;

namespace {

System two_tier(int gpus_per_node, int nvlink_domain) {
  System s;
  s.name = "base";
  s.gpu.name = "h100-sxm5-80gb";
  s.gpu.hbm_bw = GBps(3350);
  s.gpus_per_node = gpus_per_node;
  Tier nv;
  nv.name = "nvlink";
  nv.domain_gpus = nvlink_domain;
  nv.bw_per_gpu = GBps(450);
  Tier ib;
  ib.name = "infiniband";
  ib.bw_per_gpu = GBps(50);
  s.tiers = {nv, ib};
  return s;
}

TierFit tier_fit(int tier, double bw_gbps, double eff_max, double median, double max) {
  TierFit f;
  f.tier = tier;
  f.ab.bw_Bps = bw_gbps * 1e9;
  f.busbw_eff.x = {1e6, 1e9};
  f.busbw_eff.y = {0.5 * eff_max, eff_max};
  f.res.rows = 10;
  f.res.median_rel = median;
  f.res.max_rel = max;
  return f;
}

}  // namespace

TEST_SUITE("calibrate.plausibility") {

TEST_CASE("GPU names as CUDA reports them match the profile of the same GPU only") {
  CHECK(gpu_family("NVIDIA H100 80GB HBM3") == "h100");
  CHECK(gpu_family("h100-sxm5-80gb") == "h100");
  CHECK(gpu_family("Tesla V100-SXM3-32GB") == "v100");
  CHECK(gpu_family("NVIDIA GeForce RTX 4090") == "4090");
  CHECK(gpu_family("rtx-4090") == "4090");
  CHECK(gpu_family("AMD Instinct MI300X") == "mi300x");
  CHECK(gpu_family("none (host buffers)").empty());
  CHECK(gpu_memory("NVIDIA A100-SXM4-40GB") == "40gb");
  CHECK(same_gpu("NVIDIA H100 80GB HBM3", "h100-sxm5-80gb"));
  CHECK(same_gpu("NVIDIA H200", "h200-sxm-141gb"));     // no memory stated: the model decides
  CHECK(!same_gpu("NVIDIA H100 80GB HBM3", "h100-sxm5-96gb"));
  CHECK(!same_gpu("NVIDIA A100-SXM4-40GB", "a100-sxm4-80gb"));
  CHECK(!same_gpu("NVIDIA H100 80GB HBM3", "a100-sxm4-80gb"));
  CHECK(!same_gpu("NVIDIA H800", "h100-sxm5-80gb"));
  CHECK(!same_gpu("none (host buffers)", "h100-sxm5-80gb"));
}

TEST_CASE("GPU checks: another GPU than the base's, host buffers, mixed GPUs") {
  const System base = two_tier(8, 8);
  CHECK(gpu_mismatches({{"NVIDIA H100 80GB HBM3", "a.log:4"}, {"NVIDIA H100 80GB HBM3", "b.log:4"}}, base).empty());
  CHECK(gpu_mismatches({}, base).empty());
  const auto host = gpu_mismatches({{"none (host buffers)", "raw.jsonl:1"}}, base);
  REQUIRE(host.size() == 1);
  CHECK(host[0] == "raw.jsonl:1: measured on 'none (host buffers)' (not a GPU), but the base cluster 'base' has "
                   "h100-sxm5-80gb; calibrate with a base of the measured GPU");
  const auto mixed =
      gpu_mismatches({{"NVIDIA H100 80GB HBM3", "a.log:4"}, {"NVIDIA A100-SXM4-80GB", "a.log:30"}}, base);
  REQUIRE(mixed.size() == 2);
  CHECK(mixed[0].rfind("a.log:30: measured on 'NVIDIA A100-SXM4-80GB'", 0) == 0);
  CHECK(mixed[1] == "measurements of different GPUs in one fit: 'NVIDIA H100 80GB HBM3' (a.log:4) and "
                    "'NVIDIA A100-SXM4-80GB' (a.log:30); fit each GPU's measurements into its own profile");
}

TEST_CASE("the tier of a run follows from its hosts: one node, several nodes, a rack-scale NVLink domain") {
  const System dgx = two_tier(8, 8);
  CHECK(tier_for_hosts(dgx, 8, 1) == 0);
  CHECK(tier_for_hosts(dgx, 2, 1) == 0);
  CHECK(tier_for_hosts(dgx, 2, 2) == 1);   // one rank per node: the network
  CHECK(tier_for_hosts(dgx, 16, 2) == 1);
  const System nvl72 = two_tier(4, 72);
  CHECK(tier_for_hosts(nvl72, 8, 2) == 0);   // two trays of one rack: still NVLink
  CHECK(tier_for_hosts(nvl72, 18, 18) == 0);
  CHECK(tier_for_hosts(nvl72, 19, 19) == 1);  // 19 trays are more than one rack
}

TEST_CASE("fits faster than the line rate, or far from their own rows, are reported with the numbers") {
  const System base = two_tier(8, 8);
  Fit ok;
  ok.tiers = {tier_fit(1, 42, 0.84, 0.05, 0.3)};
  CHECK(implausible_fit(ok, base).empty());

  Fit fast;
  fast.tiers = {tier_fit(1, 273.54, 1.2, 0.05, 0.3)};  // the two-node all-reduce read as the network tier
  const auto r = implausible_fit(fast, base);
  REQUIRE(r.size() == 1);
  CHECK(r[0].rfind("tier infiniband: the measured bus bandwidth (273.54 GB/s fitted, curve up to 120.0%) is 547.1% "
                   "of the tier's line rate 50.00 GB/s per GPU, more than a link can carry; a group with several ranks "
                   "per node",
                   0) == 0);

  Fit off;
  off.tiers = {tier_fit(0, 0.89, 0.002, 0.501, 4.968)};  // the MPI benchmark on host buffers
  const auto e = implausible_fit(off, base);
  REQUIRE(e.size() == 2);
  CHECK(e[0].rfind("tier nvlink: the measured bus bandwidth (0.89 GB/s fitted, curve up to 0.2%) peaks at 0.2% of "
                   "the tier's line rate 450.00 GB/s per GPU, below the 1.0% a working link reaches",
                   0) == 0);
  CHECK(e[1].rfind("tier nvlink: the fitted table mispredicts its own 10 rows by 50.1% (median) and 496.8% (max), "
                   "above the limits of 25.0% and 100.0%",
                   0) == 0);

  Fit slow;
  slow.tiers = {tier_fit(1, 1e-24, 1e-26, 0.01, 0.05)};  // a log of 1e-15 GB/s, fitted cleanly
  const auto w = implausible_fit(slow, base);
  REQUIRE(w.size() == 1);
  CHECK(w[0].find("below the 1.0% a working link reaches") != std::string::npos);
  Fit edge;
  edge.tiers = {tier_fit(1, 0.6, 0.012, 0.05, 0.3)};  // 1.2% of line rate: slow, but a link
  CHECK(implausible_fit(edge, base).empty());

  Fit hbm;
  hbm.gpu.memory = Curve::constant(1.1, "test");
  const auto m = implausible_fit(hbm, base);
  REQUIRE(m.size() == 1);
  CHECK(m[0].rfind("memory: the streaming kernels reach 110.0% of h100-sxm5-80gb's HBM bandwidth 3350.00 GB/s", 0) ==
        0);
  Fit host;
  host.gpu.memory = Curve::constant(0.004, "test");
  const auto hm = implausible_fit(host, base);
  REQUIRE(hm.size() == 1);
  CHECK(hm[0].rfind("memory: the streaming kernels reach only 0.4% of h100-sxm5-80gb's HBM bandwidth", 0) == 0);
}

}
