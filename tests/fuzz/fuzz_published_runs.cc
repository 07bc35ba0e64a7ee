// libFuzzer target: the published-runs file (design.md's schema 1) parsed and validated: every prediction and
// error a finite number.
#include "modeler/io/published_runs.h"
#include "modeler/io/validation_run.h"
#include "tests/fuzz/fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace shardplan;
  return fuzz::guarded([&] {
    std::vector<io::PublishedRun> runs = io::parse_published_runs(fuzz::as_text(data, size), "runs.yaml");
    if (runs.size() > 3) runs.resize(3);  // each run may search its open plan fields: keep an input fast
    const io::ValidationReport r = io::run_validation(runs);
    for (const io::RunResult& res : r.results) {
      if (res.skipped) continue;
      fuzz::check_value(res.predicted_tokens_per_s_per_gpu, "predicted tokens/s/GPU");
      if (!std::isfinite(res.error_pct)) fuzz::finding("error_pct is not finite");
      if (res.predicted_memory_gib) fuzz::check_value(*res.predicted_memory_gib, "predicted memory");
    }
    fuzz::check_value(r.throughput.mape, "throughput MAPE");
    fuzz::check_value(r.memory.mape, "memory MAPE");
  });
}
