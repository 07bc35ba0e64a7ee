#include "modeler/moe_host.h"

#include <doctest/doctest.h>

#include "modeler/moe_dispatch.h"
#include "tests/modeler/test_fixtures.h"

using namespace shardplan;

TEST_SUITE("moe_host") {

TEST_CASE("small kernels pay the GPU's kernel overhead; the token-count wait pays host launches") {
  Gpu g = test::synthetic_gpu();
  g.eff.kernel_overhead = Seconds(4e-6);
  Framework f = test::synthetic_framework();
  f.fused_moe_permutation = true;
  f.fused_moe_router = true;
  f.moe_dispatchers = {MoeDispatcher::alltoall, MoeDispatcher::deepep};
  Plan p;
  const MoeHostCost dropless = moe_host_cost(p, f, g);
  const int kernels = moe_layer_small_kernels(MoeDispatcher::alltoall, true, true);
  CHECK(dropless.kernels.v == doctest::Approx(4e-6 * kernels));
  CHECK(dropless.sync.v == doctest::Approx(kEagerOpHostSeconds * kKernelsAfterTokenSync));
  // Token drop padded to capacity: fixed shapes, no wait.
  p.capacity_factor = 1.0;
  CHECK(moe_host_cost(p, f, g).sync.v == 0.0);
  // DeepEP always waits for its receive counts, and launches fewer kernels than alltoall.
  p.moe_dispatcher = MoeDispatcher::deepep;
  p.capacity_factor = 0;
  const MoeHostCost deepep = moe_host_cost(p, f, g);
  CHECK(deepep.sync.v > 0);
  CHECK(deepep.kernels < dropless.kernels);
  // Unfused permutation and router launch more.
  f.fused_moe_permutation = f.fused_moe_router = false;
  p.moe_dispatcher.reset();
  CHECK(moe_host_cost(p, f, g).kernels > dropless.kernels);
}

}  // TEST_SUITE
