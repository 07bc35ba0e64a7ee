// libFuzzer target: training logs of every framework import-log reads, parsed and completed into a run the way
// the command does (a fixed GPU, --gpus and --seq given so the run can complete); the run's numbers finite and
// positive, its runs file one that the published-runs reader loads.
#include "calibrate/imported_run_yaml.h"
#include "modeler/io/published_runs.h"
#include "tests/fuzz/fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace shardplan;
  return fuzz::guarded([&] {
    if (size == 0) return;
    // The first byte picks the framework, so one corpus covers all five.
    const auto f = static_cast<calibrate::LogFramework>(data[0] % 5);
    const calibrate::ParsedLog log = calibrate::parse_log(f, fuzz::as_text(data + 1, size - 1), "fuzz.log");
    calibrate::ImportOptions o;
    o.gpu = "h100-sxm5-80gb";
    o.seq_len = log.settings.seq_len ? 0 : 4096;
    const calibrate::ImportedRun r = calibrate::build_run(log, o);
    for (double v : {r.step_time_s, r.tokens_per_s_per_gpu})
      if (!std::isfinite(v) || v <= 0) fuzz::finding("non-positive or non-finite measured value");
    io::parse_published_runs(calibrate::runs_yaml({r}), "fuzz.yaml");
  });
}
