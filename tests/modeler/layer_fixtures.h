// The layer-cost tests' shared setup (layer_cost_test.cc, attention_cost_test.cc, mlp_cost_test.cc).
// Header-only: the test glob compiles *_test.cc files only.
#pragma once

#include "tests/modeler/test_fixtures.h"

namespace shardplan::test {

// The tiny model at micro-batch 2, s 128 (T = 256 tokens), h 64, a 4, d 16, f 256, V 128, tp 1:
//   linear forward FLOPs 2T x (64 x 192 + 64 x 64 + 2 x 64 x 256) = 2 x 256 x 49,152 = 25,165,824
//   causal attention forward 4 b s^2 a d / 2 = 4 x 2 x 128^2 x 64 / 2 = 4,194,304
// Two synthetic GPUs isolate the terms: "compute only" has unbounded HBM (every kernel costs FLOPs / peak),
// "bandwidth only" an unbounded peak (every kernel costs bytes / 1000 GB/s).
constexpr double kLinear = 25165824, kAttn = 4194304;

inline Setup tiny(int tp = 1, int cp = 1) {
  Setup su(tiny_model(), plan_of(tp, 1, 1, cp, 2, 2, 128));
  return su;
}
inline void compute_only(Setup* su) { su->system.gpu.hbm_bw = BytesPerSec(1e30); }
inline void bandwidth_only(Setup* su) { su->system.gpu.peak[static_cast<int>(Dtype::bf16)] = FlopsPerSec(1e30); }

}  // namespace shardplan::test
