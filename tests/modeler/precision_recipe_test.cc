#include "modeler/precision_recipe.h"

#include <doctest/doctest.h>

#include "modeler/framework.h"

using namespace shardplan;

TEST_SUITE("precision_recipe") {

TEST_CASE("Transformer Engine's quantization bytes per element: one fused pass unless the recipe needs an amax first") {
  const Framework te = *find_framework("megatron-lm");
  Gpu hopper;
  hopper.compute_capability = 9.0;
  const RecipeKernels delayed = recipe_kernels(Fp8Recipe::delayed, te, hopper);
  CHECK(delayed.activation.bytes_per_elem == doctest::Approx(4.0));  // read bf16, write fp8 row- and column-wise
  CHECK(delayed.activation.kernels == 1);
  const RecipeKernels current = recipe_kernels(Fp8Recipe::tensorwise, te, hopper);
  CHECK(current.activation.bytes_per_elem == doctest::Approx(6.0));  // + the amax pass's read
  CHECK(current.activation.kernels == 2);
  CHECK(current.activation.launch_only_ops == 2);  // the amax's memset and the 1x1 scale kernel
  CHECK(delayed.activation.launch_only_ops == 0);
  const RecipeKernels block = recipe_kernels(Fp8Recipe::blockwise, te, hopper);
  CHECK(block.activation.bytes_per_elem == doctest::Approx(4.0 + 8.0 / 128.0));
  CHECK(block.weight.bytes_per_elem < block.activation.bytes_per_elem);  // 128x128 weight blocks: fewer scales
  CHECK(recipe_kernels(Fp8Recipe::mxfp8, te, hopper).gradient.bytes_per_elem == doctest::Approx(4.0 + 2.0 / 32.0));
  const RecipeKernels fp4 = recipe_kernels(Fp8Recipe::nvfp4, te, hopper);
  CHECK(fp4.activation.bytes_per_elem == doctest::Approx(2.0 + 2.0 + 1.0 + 2.0 / 16.0));
  CHECK(fp4.activation.kernels == 2);
}

TEST_CASE("on Blackwell Transformer Engine's per-tensor quantizers write no transposed copy") {
  // v2.7 nvte_is_non_tn_fp8_gemm_supported: compute capability 10.x-11.x or 13+ takes non-TN fp8 GEMMs.
  const Framework te = *find_framework("megatron-lm");
  Gpu g;
  CHECK_FALSE(te_fp8_non_tn_gemm(g));  // unstated: TN-only
  for (double cc : {8.9, 9.0, 12.0}) {
    g.compute_capability = cc;
    CHECK_FALSE(te_fp8_non_tn_gemm(g));
  }
  for (double cc : {10.0, 10.3, 13.0}) {
    g.compute_capability = cc;
    CHECK(te_fp8_non_tn_gemm(g));
  }
  g.compute_capability = 10.0;
  CHECK(recipe_kernels(Fp8Recipe::delayed, te, g).activation.bytes_per_elem == doctest::Approx(3.0).scale(0));
  CHECK(recipe_kernels(Fp8Recipe::tensorwise, te, g).gradient.bytes_per_elem == doctest::Approx(5.0).scale(0));
  // The block-scaled recipes keep both copies: their scales run along different axes.
  CHECK(recipe_kernels(Fp8Recipe::mxfp8, te, g).activation.bytes_per_elem ==
        doctest::Approx(4.0 + 2.0 / 32.0).scale(0));
  // torchao's tensorwise path is torch._scaled_mm's, unchanged by the GPU.
  const Framework ao = *find_framework("torchtitan");
  Gpu h;
  h.compute_capability = 9.0;
  CHECK(recipe_kernels(Fp8Recipe::tensorwise, ao, g).activation.bytes_per_elem ==
        recipe_kernels(Fp8Recipe::tensorwise, ao, h).activation.bytes_per_elem);
}

TEST_CASE("torchao's tensorwise casts: amax, cast and a transposed copy") {
  const Framework ao = *find_framework("torchtitan");
  const Gpu hopper;  // no compute capability stated: TN-only, as Hopper
  CHECK(ao.fp8_library == Fp8Library::torchao);
  const RecipeKernels k = recipe_kernels(Fp8Recipe::tensorwise, ao, hopper);
  CHECK(k.activation.bytes_per_elem == doctest::Approx(7.0));
  CHECK(k.activation.kernels == 3);
  // Block-scaled recipes are counted as Transformer Engine's.
  CHECK(recipe_kernels(Fp8Recipe::mxfp8, ao, hopper).activation.bytes_per_elem ==
        recipe_kernels(Fp8Recipe::mxfp8, *find_framework("nemo"), hopper).activation.bytes_per_elem);
}

TEST_CASE("the recipe a plan runs, and the bytes its parameter gathers move") {
  const Framework nemo = *find_framework("nemo");
  Plan p;
  CHECK(param_gather_bytes(p, nemo) == 2.0);  // bf16 plans gather bf16
  p.precision = Dtype::fp8;
  CHECK(effective_fp8_recipe(p, nemo) == Fp8Recipe::tensorwise);  // Megatron-Bridge's fp8_cs
  CHECK(param_gather_bytes(p, nemo) == 1.0);                      // fp8_param_gather on in its recipes
  p.fp8_param_gather = false;
  CHECK(param_gather_bytes(p, nemo) == 2.0);
  p.fp8_param_gather = true;
  p.fp8_recipe = Fp8Recipe::mxfp8;
  CHECK(param_gather_bytes(p, nemo) == doctest::Approx(1.0 + 1.0 / 32.0));
  CHECK(effective_fp8_recipe(p, nemo) == Fp8Recipe::mxfp8);  // the plan's own wins
  Plan q;
  q.precision = Dtype::fp4;
  CHECK(effective_fp8_recipe(q, nemo) == Fp8Recipe::nvfp4);
  CHECK(param_gather_bytes(q, *find_framework("megatron-lm")) == 2.0);  // Megatron-LM: fp8_param_gather off
}

TEST_CASE("the GEMM table of each recipe: block scales for blockwise and mxfp8, per tensor otherwise") {
  CHECK(gemm_scaling(Fp8Recipe::delayed) == Fp8Scaling::per_tensor);
  CHECK(gemm_scaling(Fp8Recipe::tensorwise) == Fp8Scaling::per_tensor);
  CHECK(gemm_scaling(Fp8Recipe::blockwise) == Fp8Scaling::block);
  CHECK(gemm_scaling(Fp8Recipe::mxfp8) == Fp8Scaling::block);
  CHECK(gemm_scaling(Fp8Recipe::nvfp4) == Fp8Scaling::per_tensor);  // fp4 GEMMs: one table
}

}
