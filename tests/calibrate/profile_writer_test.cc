#include "calibrate/profile_writer.h"

#include <doctest/doctest.h>
#include <yaml-cpp/yaml.h>

#include <sstream>

#include "modeler/io/yaml_reader.h"
#include "modeler/problems.h"

using namespace shardplan;
using namespace shardplan::calibrate;

namespace {

System base_system() {
  System s;
  s.name = "base";
  Tier nv;
  nv.name = "nvlink";
  nv.domain_gpus = 8;
  nv.bw_per_gpu = GBps(450);
  nv.latency = us(3.4);
  nv.busbw_eff = Curve::constant(0.81, "nccl-tests#212");
  nv.sources = {"datasheet"};
  Tier ib = nv;
  ib.name = "infiniband";
  ib.domain_gpus = 0;
  ib.bw_per_gpu = GBps(50);
  s.tiers = {nv, ib};
  return s;
}

}  // namespace

TEST_SUITE("calibrate.profile_writer") {

TEST_CASE("the profile inherits the base, overrides what was fitted and keeps every tier") {
  Fit fit;
  fit.gpu.kernel_overhead_s = 4.1e-6;
  fit.gpu.gemm[Dtype::bf16] = Curve{{1e9, 1e12}, {0.5, 0.8}, OutOfRange::clamp, "cal"};
  fit.gpu.attention[{"flash2", false}] = Curve::constant(0.4, "cal");
  fit.gpu.attention[{"flash2", true}] = Curve::constant(0.3, "cal");
  TierFit t;
  t.tier = 0;
  t.ab = {3.1e-6, 370e9};
  t.busbw_eff = Curve{{1e6, 1e9}, {0.3, 0.82}, OutOfRange::clamp, "cal"};
  t.res.rows = 10;
  fit.tiers = {t};
  const std::string text = emit_profile({"my-cluster", "dgx-h100", "calibrated today", "cal"}, base_system(), fit);
  const YAML::Node doc = YAML::Load(text);
  CHECK(doc["kind"].as<std::string>() == "cluster");
  CHECK(doc["inherits"].as<std::string>() == "dgx-h100");
  CHECK(doc["sources"][0].as<std::string>() == "cal (shardplan calibrate)");
  const YAML::Node eff = doc["gpu_overrides"]["efficiency"];
  CHECK(eff["kernel_overhead_us"].as<double>() == doctest::Approx(4.1));
  const Curve gemm = io::parse_curve(eff["gemm"]["bf16"], "p.yaml", "gemm.bf16");
  CHECK(gemm.y == std::vector<double>{0.5, 0.8});
  CHECK(eff["attention"]["flash2"]["bwd"]["points"][0][1].as<double>() == doctest::Approx(0.3));
  CHECK(!eff["memory"]);
  REQUIRE(doc["tiers"].size() == 2);
  CHECK(doc["tiers"][0]["latency_us"].as<double>() == doctest::Approx(3.1));
  CHECK(doc["tiers"][0]["sources"].size() == 2);
  CHECK(doc["tiers"][1]["latency_us"].as<double>() == doctest::Approx(3.4));  // copied unchanged
  CHECK(doc["tiers"][1]["domain_gpus"].as<int>() == 0);
  CHECK(doc["tiers"][1]["busbw_eff"]["source"].as<std::string>() == "nccl-tests#212");
}

}
