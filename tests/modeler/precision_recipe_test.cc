#include "modeler/precision_recipe.h"

#include <doctest/doctest.h>

#include <utility>
#include <vector>

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

TEST_CASE("Transformer Engine 1.x delayed scaling, per linear kind and sequence parallelism") {
  LinearOperands o;
  o.normed_input_local = 10;
  o.normed_input_full = 40;  // tp 4 gathered
  o.row_input = 100;
  o.column_grad = 1000;
  o.row_grad_local = 10000;
  o.row_grad_full = 40000;
  auto sum = [](const std::vector<QuantizePass>& ps) {
    double b = 0;
    int k = 0;
    for (const QuantizePass& p : ps) b += p.bytes, k += p.kernels;
    return std::make_pair(b, k);
  };
  // Sequence parallel: the norms write fp8 (no cast kernel); proj/FC2 cast (3 B) forward, transpose (2 B)
  // backward; QKV/FC1 input transposed from the gathered fp8 (2 B); column gradients cast-transposed (4 B);
  // row gradients cast on the local shard (3 B) and transposed gathered (2 B).
  const LayerQuantize sp = te_v1_layer_quantize(o, true, false);
  CHECK(sp.norm_output_bytes == 1.0);
  CHECK(sum(sp.fwd) == std::make_pair(300.0, 2));
  CHECK(sum(sp.bwd) == std::make_pair(2.0 * 40 + 2.0 * 100 + 4.0 * 1000 + 3.0 * 10000 + 2.0 * 40000, 10));
  // With biases the row gradient's bias sum reads the local gradient once more (column ones fuse it).
  CHECK(sum(te_v1_layer_quantize(o, true, true).bwd).first == doctest::Approx(sum(sp.bwd).first + 2.0 * 10000));
  // Without: fused cast-transposes of the row inputs and gradients, nothing transposed later but the norm outputs.
  const LayerQuantize local = te_v1_layer_quantize(o, false, true);
  CHECK(sum(local.fwd) == std::make_pair(400.0, 2));
  CHECK(sum(local.bwd) == std::make_pair(2.0 * 40 + 4.0 * 1000 + 4.0 * 40000, 6));
}

TEST_CASE("Transformer Engine 1.x: all-gathers in fp8 under delayed scaling, and no non-TN GEMMs") {
  Framework v1 = *find_framework("nemo-2024");
  CHECK(v1.fp8_library == Fp8Library::transformer_engine_v1);
  Plan p;
  CHECK(tp_all_gather_bytes(p, v1) == 2.0);  // bf16
  p.precision = Dtype::fp8;
  CHECK(tp_all_gather_bytes(p, v1) == 1.0);
  p.fp8_recipe = Fp8Recipe::tensorwise;  // not read at 1.x
  CHECK(tp_all_gather_bytes(p, v1) == 2.0);
  p.fp8_recipe.reset();
  Gpu blackwell;
  blackwell.compute_capability = 10.0;
  CHECK(recipe_kernels(Fp8Recipe::delayed, v1, blackwell).weight.bytes_per_elem == doctest::Approx(4.0));
}

TEST_CASE("Transformer Engine 1.x amax reductions: forward and backward, per model chunk and micro-batch") {
  ModelDesc m;
  System sys;
  Plan p;
  p.tp = 4;
  p.dp = 8;
  p.cp = 2;
  p.precision = Dtype::fp8;
  Sharding sh;
  sh.layers = 12;
  sh.chunks = 3;
  const Framework v1 = *find_framework("nemo-2024");
  CommPlan c;
  add_amax_reductions(Context{m, sys, p, v1}, sh, &c);
  REQUIRE(c.microbatch.size() == 2);
  for (const CommOp& op : c.microbatch) {
    CHECK(op.collective == Collective::all_reduce);
    CHECK(op.group == 64);  // tp x dp x cp
    CHECK(op.count == 3);   // one per chunk
    CHECK(op.window == Window::exposed);
  }
  // Per chunk 4 layers x 4 GEMMs: 3 fp32 amaxes each forward, 2 backward.
  CHECK(c.microbatch[0].bytes.v == doctest::Approx(16 * 3 * 4.0));
  CHECK(c.microbatch[1].bytes.v == doctest::Approx(16 * 2 * 4.0));
  // None for bf16, current scaling, Transformer Engine 2.x (not read for this), or a group of one rank.
  auto none = [&](const Plan& q, const Framework& fw) {
    CommPlan d;
    add_amax_reductions(Context{m, sys, q, fw}, sh, &d);
    return d.microbatch.empty();
  };
  Plan q = p;
  q.precision = Dtype::bf16;
  CHECK(none(q, v1));
  q = p;
  q.fp8_recipe = Fp8Recipe::tensorwise;
  CHECK(none(q, v1));
  CHECK(none(p, *find_framework("megatron-lm")));
  q = p;
  q.tp = q.dp = q.cp = 1;
  CHECK(none(q, v1));
}

TEST_CASE("Transformer Engine 2.x and torchao gather the fp8 data of per-tensor recipes only") {
  const Framework te2 = *find_framework("nemo"), titan = *find_framework("torchtitan");
  REQUIRE(te2.fp8_library == Fp8Library::transformer_engine);
  REQUIRE(titan.fp8_library == Fp8Library::torchao);
  Plan p;
  CHECK(tp_all_gather_bytes(p, te2) == 2.0);  // bf16
  CHECK(tp_all_gather_bytes(p, titan) == 2.0);
  p.precision = Dtype::fp8;
  CHECK(tp_all_gather_bytes(p, te2) == 1.0);    // Megatron-Bridge's current scaling
  CHECK(tp_all_gather_bytes(p, titan) == 1.0);  // Float8ColwiseParallel's fp8 gathers
  p.fp8_recipe = Fp8Recipe::delayed;
  CHECK(tp_all_gather_bytes(p, te2) == 1.0);
  CHECK(tp_all_gather_bytes(p, titan) == 2.0);  // torchao's fp8 TP styles take dynamic scaling only
  for (Fp8Recipe r : {Fp8Recipe::blockwise, Fp8Recipe::mxfp8}) {
    p.fp8_recipe = r;
    CHECK(tp_all_gather_bytes(p, te2) == 2.0);  // gathered in 16 bits, quantized after
  }
  p.fp8_recipe.reset();
  p.precision = Dtype::fp4;
  CHECK(tp_all_gather_bytes(p, te2) == 2.0);
}

TEST_CASE("current scaling all-reduces the amax of a tensor-parallel shard before each cast") {
  ModelDesc m;
  m.gated_mlp = true;
  System sys;
  Plan p;
  p.tp = 4;
  p.dp = 2;
  p.precision = Dtype::fp8;
  p.sequence_parallel = true;
  Sharding sh;
  sh.layers = 8;
  auto plan_of = [&](const ModelDesc& md, const Plan& q, const Framework& fw) {
    CommPlan c;
    add_amax_reductions(Context{md, sys, q, fw}, sh, &c);
    return c;
  };
  const Framework te2 = *find_framework("nemo"), titan = *find_framework("torchtitan");
  const CommPlan c = plan_of(m, p, te2);
  REQUIRE(c.layer_forward.size() == 1);
  REQUIRE(c.layer_backward.size() == 1);
  for (const CommOp& op : {c.layer_forward[0], c.layer_backward[0]}) {
    CHECK(op.kind == CommKind::tp);
    CHECK(op.collective == Collective::all_reduce);
    CHECK(op.bytes.v == 4.0);  // one fp32 amax
    CHECK(op.group == 4);
    CHECK(op.window == Window::exposed);
    CHECK(op.count == 2.0);  // QKV and MLP-up inputs forward; output-projection and MLP-down gradients backward
  }
  CHECK(c.microbatch.empty());  // no delayed-scaling history reduction
  // torchtitan: the two module inputs, then the gradients of wq, wk, wv, wo, w1, w3 and w2.
  const CommPlan t = plan_of(m, p, titan);
  REQUIRE(t.layer_forward.size() == 1);
  REQUIRE(t.layer_backward.size() == 1);
  CHECK(t.layer_forward[0].count == 2.0);
  CHECK(t.layer_backward[0].count == 7.0);
  ModelDesc plain = m;
  plain.gated_mlp = false;
  CHECK(plan_of(plain, p, titan).layer_backward[0].count == 6.0);
  // MoE layers: the routed experts' inputs come from the dispatcher; shared experts are gathered like a dense MLP.
  ModelDesc moe = m;
  moe.moe = MoeDesc{};
  moe.moe->experts = 8;
  sh.moe_layer_share = 1.0;
  CHECK(plan_of(moe, p, te2).layer_forward[0].count == 1.0);
  moe.moe->shared_experts = 1;
  CHECK(plan_of(moe, p, te2).layer_backward[0].count == 2.0);
  sh.moe_layer_share = -1;
  // None: without sequence parallelism (TE), at tp 1, for bf16, delayed scaling, blockwise, or under TE 1.x.
  auto none = [&](const Plan& q, const Framework& fw) {
    const CommPlan d = plan_of(m, q, fw);
    return d.layer_forward.empty() && d.layer_backward.empty();
  };
  Plan q = p;
  q.sequence_parallel = false;
  CHECK(none(q, te2));
  CHECK_FALSE(none(q, titan));  // torchtitan's TP styles cast the sharded DTensors either way
  q = p;
  q.tp = 1;
  CHECK(none(q, te2));
  CHECK(none(q, titan));
  q = p;
  q.precision = Dtype::bf16;
  CHECK(none(q, te2));
  q = p;
  q.fp8_recipe = Fp8Recipe::delayed;
  CHECK(none(q, te2));
  q.fp8_recipe = Fp8Recipe::blockwise;
  CHECK(none(q, te2));
  q = p;
  q.fp8_recipe = Fp8Recipe::tensorwise;
  CHECK(none(q, *find_framework("nemo-2024")));
}

TEST_CASE("the GEMM table of each recipe: block scales for blockwise and mxfp8, per tensor otherwise") {
  CHECK(gemm_scaling(Fp8Recipe::delayed) == Fp8Scaling::per_tensor);
  CHECK(gemm_scaling(Fp8Recipe::tensorwise) == Fp8Scaling::per_tensor);
  CHECK(gemm_scaling(Fp8Recipe::blockwise) == Fp8Scaling::block);
  CHECK(gemm_scaling(Fp8Recipe::mxfp8) == Fp8Scaling::block);
  CHECK(gemm_scaling(Fp8Recipe::nvfp4) == Fp8Scaling::per_tensor);  // fp4 GEMMs: one table
}

}
