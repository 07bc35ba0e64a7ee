// libFuzzer target: model YAML (models/*.yaml) parsed, then evaluated on the reference system.
#include "tests/fuzz/fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace shardplan;
  return fuzz::guarded([&] {
    const ModelDesc m = io::parse_model_file(fuzz::as_text(data, size), "fuzz.yaml").model;
    fuzz::evaluate_some(m, fuzz::reference_system());
  });
}
