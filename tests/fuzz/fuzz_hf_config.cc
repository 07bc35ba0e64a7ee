// libFuzzer target: Hugging Face config.json (dense and MoE families) parsed, then evaluated on the reference system.
#include "tests/fuzz/fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace shardplan;
  return fuzz::guarded([&] {
    const ModelDesc m = io::parse_hf_config(fuzz::as_text(data, size), "config.json", /*allow_moe=*/true);
    fuzz::evaluate_some(m, fuzz::reference_system());
  });
}
