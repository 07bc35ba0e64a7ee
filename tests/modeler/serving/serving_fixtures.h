// Inputs for the serving tests, built in code: a round-number GPU whose efficiencies are all 1, so expected times
// are the formulas themselves, beside the shared models of tests/modeler/test_fixtures.h (test::llama3_8b()).
#pragma once

#include "modeler/model_desc.h"
#include "modeler/system.h"
#include "tests/modeler/test_fixtures.h"

namespace shardplan::test {

/// 1000 TFLOP/s bf16, 2000 fp8, 1 TB/s, 80 GiB, no kernel overhead, every efficiency 1.
inline System round_system(int gpus = 8) {
  System s;
  s.name = "round";
  s.gpu.name = "round-gpu";
  s.gpu.peak[static_cast<int>(Dtype::bf16)] = TFlops(1000);
  s.gpu.peak[static_cast<int>(Dtype::fp16)] = TFlops(1000);
  s.gpu.peak[static_cast<int>(Dtype::fp8)] = TFlops(2000);
  s.gpu.hbm_capacity = GiB(80);
  s.gpu.hbm_bw = GBps(1000);
  s.gpus = gpus;
  s.gpus_per_node = 8;
  Tier t;
  t.name = "nvlink";
  t.domain_gpus = 8;
  t.bw_per_gpu = GBps(400);
  t.latency = us(2);
  s.tiers.push_back(t);
  return s;
}

/// The round test system as the H200 the measured kernel tables name (its HBM rate, so table lookups apply).
inline System h200_system() {
  System sys = round_system();
  sys.gpu.name = "h200-sxm-141gb";
  sys.gpu.hbm_bw = GBps(4800);
  return sys;
}

}  // namespace shardplan::test
