// libFuzzer target: nccl-tests logs as users capture them, parsed and checked the way import-nccl-tests checks
// them; every row's numbers finite.
#include "calibrate/nccl_tests_log.h"
#include "tests/fuzz/fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace shardplan;
  return fuzz::guarded([&] {
    for (const calibrate::NcclTestsRun& run : calibrate::parse_nccl_tests(fuzz::as_text(data, size))) {
      for (const calibrate::NcclTestsRow& r : run.rows)
        for (double v : {r.bytes, r.time_us, r.algbw_gbps, r.busbw_gbps, r.ip_time_us})
          if (!std::isfinite(v)) fuzz::finding("non-finite nccl-tests value");
      calibrate::check_usable(run, "fuzz.log");
    }
  });
}
