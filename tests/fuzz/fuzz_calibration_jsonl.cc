// libFuzzer target: calibration JSON lines (kernels/ output) parsed and fitted against the reference system; the
// fitted curves must be finite and positive, as the profile writer requires.
#include "calibrate/fit.h"
#include "calibrate/measurements.h"
#include "tests/fuzz/fuzz_common.h"

namespace {
void check_curve(const shardplan::Curve& c) {
  for (double x : c.x) shardplan::fuzz::check_value(x, "curve x");
  for (double y : c.y) shardplan::fuzz::check_value(y, "curve y");
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace shardplan;
  return fuzz::guarded([&] {
    const calibrate::RawFile f = calibrate::parse_jsonl(fuzz::as_text(data, size), "fuzz.jsonl");
    for (const calibrate::Measurement& m : f.rows)
      for (double v : {m.time_s, m.time_min_s, m.time_max_s, m.flops, m.bytes, m.m, m.n, m.k})
        fuzz::check_value(v, "measurement");
    const calibrate::Fit fit = calibrate::fit_all(f.rows, fuzz::reference_system(), "fuzz");
    for (const auto& [dtype, c] : fit.gpu.gemm) check_curve(c);
    for (const auto& [key, c] : fit.gpu.attention) check_curve(c);
    if (fit.gpu.memory) check_curve(*fit.gpu.memory);
    for (const calibrate::TierFit& t : fit.tiers) check_curve(t.busbw_eff);
  });
}
