#include "modeler/serving/tensors.h"

#include <doctest/doctest.h>

#include "tests/modeler/serving/serving_fixtures.h"

using namespace shardplan;
using namespace shardplan::serving;

TEST_CASE("the tensor list holds every parameter of the model once") {
  Precision p;
  const ModelDesc m = test::llama3_8b();
  const auto ts = model_tensors(m, p);
  double params = 0;
  for (const auto& t : ts) params += t.params;
  CHECK(params == doctest::Approx(total_params(m)).epsilon(1e-6));
  CHECK(ts.front().name == "token_embd");
  CHECK(ts.back().name == "output");
  CHECK(ts[1].name == "blk.0.attn_q");
}

TEST_CASE("an MoE layer stacks its experts in one tensor per projection") {
  ModelDesc m = test::llama3_8b();
  m.moe = MoeDesc{8, 2, 1024, 0, 0, 0, false, false};
  Precision p;
  p.moe_weights = WeightFormat::mxfp4;
  const auto ts = model_tensors(m, p);
  int exps = 0;
  for (const auto& t : ts)
    if (t.experts > 0) {
      ++exps;
      CHECK(t.format == WeightFormat::mxfp4);
      CHECK(t.bytes.v == doctest::Approx(t.params * 4.25 / 8));
    }
  CHECK(exps == 2 * m.layers);
}
