#include "modeler/serving/decode_attention_table.h"

#include <doctest/doctest.h>

using namespace shardplan::serving;

TEST_CASE("decode attention table: measured GPUs, rising with bytes read, below the HBM peak at the top") {
  const shardplan::Curve* h200 = decode_attention_rate("h200-sxm-141gb", 2.0);
  REQUIRE(h200 != nullptr);
  // Small reads are bound by the kernel's fixed cost; 2 GiB reads approach H200's 4.8 TB/s.
  CHECK(h200->at(1 << 20) < 0.1e12);
  CHECK(h200->at(1 << 20) < h200->at(1 << 26));
  CHECK(h200->at(1ULL << 31) > 4.0e12);
  CHECK(h200->at(1ULL << 31) < 4.8e12);
  // fp8 caches have their own row; GPUs without measurements have none.
  CHECK(decode_attention_rate("h200-sxm-141gb", 1.0) != h200);
  CHECK(decode_attention_rate("rtx-4090", 2.0) == nullptr);
}
