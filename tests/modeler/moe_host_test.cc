#include "modeler/moe_host.h"

#include <doctest/doctest.h>

#include "modeler/moe_dispatch.h"
#include "tests/modeler/test_fixtures.h"

using namespace shardplan;

TEST_SUITE("moe_host") {

TEST_CASE("host synchronisation per dispatcher") {
  CHECK(syncs_token_counts(MoeDispatcher::alltoall, false));
  CHECK_FALSE(syncs_token_counts(MoeDispatcher::alltoall, true));  // token drop padded to capacity
  CHECK(syncs_token_counts(MoeDispatcher::deepep, true));          // DeepEP refuses capacity padding
  CHECK_FALSE(syncs_token_counts(MoeDispatcher::allgather, true));
}

TEST_CASE("launch costs: measured where AIConfigurator has the GPU, the profile's overhead otherwise") {
  Gpu g = test::synthetic_gpu();
  g.eff.kernel_overhead = Seconds(4e-6);
  const LaunchCosts fallback = launch_costs(g);
  CHECK_FALSE(fallback.measured);
  CHECK(fallback.gpu_kernel.v == doctest::Approx(4e-6).scale(0));
  CHECK(fallback.eager_op.v == doctest::Approx(kEagerOpHostSeconds).scale(0));
  g.name = "h100-sxm5-80gb";
  const LaunchCosts h100 = launch_costs(g);
  CHECK(h100.measured);
  CHECK(h100.gpu_kernel.v == doctest::Approx(2.782e-6).scale(0));
  CHECK(h100.eager_op.v == doctest::Approx(10.66e-6).scale(0));
  g.name = "gb200";
  // The Grace host launches eager ops 2.5x slower than the H100's x86 host; the GPU-side kernel is faster.
  CHECK(launch_costs(g).eager_op > h100.eager_op * 2.0);
  CHECK(launch_costs(g).gpu_kernel < h100.gpu_kernel);
}

TEST_CASE("kernel count of a Megatron-Core MoE layer, by hand") {
  // Qwen3-30B-A3B as Megatron-Bridge 25.09 runs it: fused router with aux loss, token drop padded to capacity,
  // alltoall, 16 local experts, TE GroupedLinear, fp8 tensorwise (2 quantization kernels per input here).
  MoeKernelSetup s;
  s.fused_router = s.fused_permutation = true;
  s.token_drop = s.padded = true;
  s.local_experts = 16;
  s.gemm_per_expert = true;
  s.quant_kernels = 2;
  const MoeKernelCount n = moe_layer_kernels(s);
  CHECK(n.router == 6);          // cast, aux scores, map sum, aux loss, scaler, tracker
  CHECK(n.drop == 5);            // topk over tokens, zeros, scatter, bool, multiply
  CHECK(n.dispatch == 3 + 1 + 1 + 1);  // row-id map, probs all-to-all, torch.full, probs cast
  // The per-expert GEMMs are layer_cost's (grouped_gemm_time times each at its measured latency): none here.
  CHECK(n.expert_quant == 2 * 15 * 2);
  CHECK(n.fwd() == 6 + 5 + 6 + 60);
  // Backward: router 4, drop 1, dispatcher 2, probs 1, gradient quantization 60.
  CHECK(n.bwd == 4 + 1 + 2 + 1 + 60);
  // TE v2.7 current scaling runs 4 GPU operations per split (memset, amax, scale, cast), of which the 2 timed
  // once per linear are not counted again: 16 x 4 - 2 = 62 per tensor, two tensors per pass.
  MoeKernelSetup cur = s;
  cur.quant_ops_per_split = 4;
  CHECK(moe_layer_kernels(cur).expert_quant == 2 * 62);
  CHECK(moe_layer_kernels(cur).bwd == n.bwd - 60 + 2 * 62);
  cur.quant_kernels = cur.quant_ops_per_split = 0;  // 16-bit GEMMs: no quantization
  CHECK(moe_layer_kernels(cur).expert_quant == 0);
  // One grouped kernel (torch._grouped_mm) or one expert quantizes each tensor once: nothing beyond layer_cost's.
  s.gemm_per_expert = false;
  CHECK(moe_layer_kernels(s).expert_quant == 0);
  s.gemm_per_expert = true;
  s.local_experts = 1;
  CHECK(moe_layer_kernels(s).expert_quant == 0);
  // Dropless adds the token-count path; unfused routing adds its top-k, scatter and aux-loss kernels.
  s.local_experts = 16;
  s.token_drop = s.padded = false;
  CHECK(moe_layer_kernels(s).dispatch == n.dispatch + 6);
  CHECK(moe_layer_kernels(s).drop == 0);
  s.fused_router = false;
  CHECK(moe_layer_kernels(s).router == 1 + 5 + 11);
  // DeepEP launches fewer dispatcher kernels than the dropless alltoall path.
  MoeKernelSetup d = s;
  d.dispatcher = MoeDispatcher::deepep;
  CHECK(moe_layer_kernels(d).dispatch < moe_layer_kernels(s).dispatch);
}

TEST_CASE("the layer's cost: counted kernels at the GPU's kernel time, the token-count wait at eager-op time") {
  Gpu g = test::synthetic_gpu();
  g.eff.kernel_overhead = Seconds(4e-6);
  Framework f = test::synthetic_framework();
  f.fused_moe_permutation = true;
  f.fused_moe_router = true;
  f.moe_gemm_per_expert = true;
  f.moe_dispatchers = {MoeDispatcher::alltoall, MoeDispatcher::deepep};
  Plan p;
  const MoeHostCost dropless = moe_host_cost(p, f, g, 4);
  MoeKernelSetup s;
  s.fused_router = s.fused_permutation = true;
  s.local_experts = 4;
  s.gemm_per_expert = true;
  const MoeKernelCount n = moe_layer_kernels(s);
  CHECK(dropless.kernels_fwd.v == doctest::Approx(4e-6 * n.fwd()).scale(0));
  CHECK(dropless.kernels_bwd.v == doctest::Approx(4e-6 * n.bwd).scale(0));
  CHECK(dropless.sync.v == doctest::Approx(kEagerOpHostSeconds * kKernelsAfterTokenSync).scale(0));
  // Token drop padded to capacity: fixed shapes, no wait.
  p.capacity_factor = 1.0;
  CHECK(moe_host_cost(p, f, g, 4).sync.v == 0.0);
  // DeepEP always waits for its receive counts.
  p.moe_dispatcher = MoeDispatcher::deepep;
  p.capacity_factor = 0;
  CHECK(moe_host_cost(p, f, g, 4).sync.v > 0);
  // The per-expert GEMMs are timed in layer_cost: in 16 bits more local experts add no kernels here.
  p.moe_dispatcher.reset();
  CHECK(moe_host_cost(p, f, g, 16).kernels_fwd.v == doctest::Approx(dropless.kernels_fwd.v).scale(0));
  // fp8 tensorwise under Transformer Engine: 4 operations per expert split (current scaling), under torchao the
  // recipe's own kernel count; 4 experts, two tensors per pass, beyond the ones layer_cost times once per linear:
  // 2 (4 x 4 - 4) = 24 against 2 (4 x 3 - 3) = 18; dropless fp8 under per-expert GEMMs also pads the experts'
  // rows (3 copies each way).
  p.precision = Dtype::fp8;
  p.fp8_recipe = Fp8Recipe::tensorwise;
  f.fp8_library = Fp8Library::transformer_engine;
  const MoeHostCost te = moe_host_cost(p, f, g, 4);
  CHECK(te.kernels_fwd.v == doctest::Approx(dropless.kernels_fwd.v + 4e-6 * (24 + 3)).scale(0));
  CHECK(te.kernels_bwd.v == doctest::Approx(dropless.kernels_bwd.v + 4e-6 * (24 + 3)).scale(0));
  // More local experts quantize more splits.
  CHECK(moe_host_cost(p, f, g, 16).kernels_fwd > te.kernels_fwd);
  f.fp8_library = Fp8Library::torchao;
  CHECK(moe_host_cost(p, f, g, 4).kernels_fwd.v ==
        doctest::Approx(dropless.kernels_fwd.v + 4e-6 * (18 + 3)).scale(0));
  p.precision = Dtype::bf16;
  p.fp8_recipe.reset();
  // On a measured GPU the wait is the measured eager-op time.
  g.name = "b200";
  CHECK(moe_host_cost(p, f, g, 4).sync.v == doctest::Approx(10.73e-6 * kKernelsAfterTokenSync).scale(0));
}

TEST_CASE("fp8 row padding: TE's alignment, which plans copy, and the copies' kernels") {
  CHECK(fp8_row_alignment(Fp8Recipe::tensorwise) == 16);
  CHECK(fp8_row_alignment(Fp8Recipe::blockwise) == 16);
  CHECK(fp8_row_alignment(Fp8Recipe::mxfp8) == 32);
  Framework f = test::synthetic_framework();
  f.moe_gemm_per_expert = true;  // TE GroupedLinear under TEGroupedMLP
  Plan p;
  CHECK_FALSE(fp8_pads_expert_rows(p, f, 1000));  // 16-bit GEMMs
  p.precision = Dtype::fp8;
  p.fp8_recipe = Fp8Recipe::tensorwise;
  CHECK(fp8_pads_expert_rows(p, f, 1024));  // dropless: the splits follow the routing, whatever the mean
  p.capacity_factor = 1.0;                   // padded to capacity: fixed rows per expert
  CHECK_FALSE(fp8_pads_expert_rows(p, f, 1024));
  CHECK(fp8_pads_expert_rows(p, f, 1000));
  p.fp8_recipe = Fp8Recipe::mxfp8;
  CHECK(fp8_pads_expert_rows(p, f, 1040));  // 65 x 16, not a multiple of 32
  f.moe_gemm_per_expert = false;             // one grouped kernel: no TEGroupedMLP padding
  CHECK_FALSE(fp8_pads_expert_rows(p, f, 1040));
  // Three copies (hidden states, probabilities, output), forward and backward.
  MoeKernelSetup s;
  const MoeKernelCount none = moe_layer_kernels(s);
  s.fp8_row_padding = true;
  const MoeKernelCount pad = moe_layer_kernels(s);
  CHECK(pad.padding == 3);
  CHECK(pad.fwd() == none.fwd() + 3);
  CHECK(pad.bwd == none.bwd + 3);
}

}  // TEST_SUITE
