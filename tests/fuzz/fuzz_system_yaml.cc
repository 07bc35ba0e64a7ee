// libFuzzer target: cluster YAML (inherits, gpu_overrides, tiers) and GPU profile YAML, each parsed and the
// reference model evaluated on what they describe.
#include "tests/fuzz/fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace shardplan;
  const std::string_view text = fuzz::as_text(data, size);
  fuzz::guarded([&] {
    const System s = io::parse_cluster(text, "fuzz.yaml", 16);
    fuzz::evaluate_some(fuzz::reference_model(), s);
  });
  return fuzz::guarded([&] {
    io::StandardSystemOptions o;
    o.gpus = 16;
    const System s = io::standard_system(io::parse_gpu_profile(text, "gpu.yaml"), o);
    fuzz::evaluate_some(fuzz::reference_model(), s);
  });
}
