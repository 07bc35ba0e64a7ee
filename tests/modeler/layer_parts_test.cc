#include "modeler/layer_parts.h"

#include <doctest/doctest.h>

#include "modeler/gemm_model.h"
#include "tests/modeler/layer_fixtures.h"

using namespace shardplan;
using test::tiny;

TEST_SUITE("layer_parts") {

TEST_CASE("memory_time: bytes over HBM bandwidth at the memory efficiency, plus the kernel overhead") {
  Gpu g = test::synthetic_gpu();
  CHECK(memory_time(g, Bytes(1e9)).v == doctest::Approx(1e-3).scale(0));
  g.eff.memory = Curve::constant(0.8, "test");
  g.eff.kernel_overhead = us(2);
  CHECK(memory_time(g, Bytes(1e9)).v == doctest::Approx(2e-6 + 1e-3 / 0.8).scale(0));
}

TEST_CASE("linear: fprop, dgrad and wgrad are gemm_time of their three shapes; chunks split the rows") {
  const test::Setup su = tiny();
  const Gpu& g = su.system.gpu;
  const Linear l = linear(su.ctx(), Dtype::bf16, 256, 192, 64);
  CHECK(l.fwd == gemm_time(g, Dtype::bf16, 256, 192, 64));
  CHECK(l.dgrad == gemm_time(g, Dtype::bf16, 256, 64, 192));
  CHECK(l.wgrad == gemm_time(g, Dtype::bf16, 64, 192, 256, Fp8Scaling::per_tensor, wgrad_output(su.ctx())));
  CHECK(l.bwd == l.dgrad + l.wgrad);
  CHECK(l.flops_fwd == 2.0 * 256 * 192 * 64);
  // Four row blocks of 64: four GEMMs of a quarter of the rows each.
  const Linear chunked = linear(su.ctx(), Dtype::bf16, 256, 192, 64, 4, 2);
  CHECK(chunked.fwd == gemm_time(g, Dtype::bf16, 64, 192, 64) * 4.0);
  CHECK(chunked.dgrad == gemm_time(g, Dtype::bf16, 128, 64, 192) * 2.0);
  CHECK(chunked.wgrad == l.wgrad);
}

TEST_CASE("sharded_linear: TSP's shards run one GEMM each over the rank's tokens") {
  const test::Setup su = tiny();
  const Linear whole = sharded_linear(su.ctx(), 256, 192, 64, 1, true);
  CHECK(whole.fwd == linear(su.ctx(), Dtype::bf16, 256, 192, 64).fwd);
  // Column shards split n, row shards split k; the FLOPs stay those of the whole linear.
  const Linear cols = sharded_linear(su.ctx(), 256, 192, 64, 2, true);
  CHECK(cols.fwd == linear(su.ctx(), Dtype::bf16, 256, 96, 64).fwd * 2.0);
  const Linear rows = sharded_linear(su.ctx(), 256, 192, 64, 2, false);
  CHECK(rows.fwd == linear(su.ctx(), Dtype::bf16, 256, 192, 32).fwd * 2.0);
  CHECK(cols.flops_fwd == whole.flops_fwd);
  CHECK(rows.flops_fwd == whole.flops_fwd);
}

TEST_CASE("GEMM dtypes: fp32 plans run TF32; fp8 and fp4 plans keep 16-bit GEMMs in the GPU's 16-bit format") {
  test::Setup su = tiny();
  su.plan.precision = Dtype::fp32;
  CHECK(gemm_dtype(su.plan) == Dtype::tf32);
  CHECK(sixteen_bit_gemm(su.ctx()) == Dtype::fp32);
  su.plan.precision = Dtype::bf16;
  CHECK(gemm_dtype(su.plan) == Dtype::bf16);
  su.plan.precision = Dtype::fp8;
  CHECK(gemm_dtype(su.plan) == Dtype::fp8);
  CHECK(sixteen_bit_gemm(su.ctx()) == su.system.gpu.sixteen_bit());
}

TEST_CASE("wgrad output: fp32 main_grad under gradient accumulation fusion, read after the first micro-batch") {
  test::Setup su = tiny();
  su.framework.wgrad_into_fp32_main_grad = false;
  CHECK(wgrad_output(su.ctx()).bytes_per_elem == 0);  // the dtype's own output
  su.framework.wgrad_into_fp32_main_grad = true;
  su.plan.global_batch = 4 * su.plan.micro_batch * su.plan.dp;  // four micro-batches per step
  REQUIRE(su.plan.num_microbatches() == 4);
  CHECK(wgrad_output(su.ctx()).bytes_per_elem == 4.0);
  CHECK(wgrad_output(su.ctx()).c_reads == doctest::Approx(0.75));
}

TEST_CASE("TP overlap chunks: tp blocks for the all-gather side, the framework's splits for the reduce-scatter") {
  test::Setup su = tiny(2);
  CHECK(tp_overlap_chunks(su.ctx()).ag == 1);  // no overlap asked
  su.plan.tp_comm_overlap = true;
  su.plan.sequence_parallel = true;
  su.framework.tp_overlap_rs_splits = 0;
  CHECK(tp_overlap_chunks(su.ctx()).ag == 2);
  CHECK(tp_overlap_chunks(su.ctx()).rs == 2);
  su.framework.tp_overlap_rs_splits = 4;
  CHECK(tp_overlap_chunks(su.ctx()).rs == 4);
}

TEST_CASE("fraction_of_layers: the share of layers a predicate holds for") {
  ModelDesc m = test::tiny_model();  // 2 layers, no MoE, no sliding window
  CHECK(fraction_of_layers(m, is_moe_layer) == 0.0);
  CHECK(fraction_of_layers(m, [](const ModelDesc&, int i) { return i == 0; }) == 0.5);
  m.layers = 0;
  CHECK(fraction_of_layers(m, [](const ModelDesc&, int) { return true; }) == 0.0);
}

TEST_CASE("qk_norm_time: one norm kernel over the rank's queries and one over its keys, 16 bits in and out") {
  test::Setup su = tiny();  // tiny model: 4 heads of 16, MHA
  su.model.kv_heads = 2;
  const Sharding sh = su.sharding();
  const Gpu& g = su.system.gpu;
  CHECK(qk_norm_time(su.ctx(), sh).v == 0);  // no QK-norm
  su.model.qk_norm = QkNorm::per_head;
  const double row = 2.0 * sh.tokens * 16 * 2.0;  // read + write of one head's rows, bf16
  CHECK(qk_norm_time(su.ctx(), sh) == memory_time(g, Bytes(row * sh.heads)) + memory_time(g, Bytes(row * sh.kv_heads)));
  // The same bytes over the full width; an eager framework's norm makes its passes.
  su.model.qk_norm = QkNorm::full;
  const Seconds fused = qk_norm_time(su.ctx(), sh);
  CHECK(fused == memory_time(g, Bytes(row * sh.heads)) + memory_time(g, Bytes(row * sh.kv_heads)));
  su.framework.fused_elementwise = false;
  su.framework.unfused_passes_per_norm = 4.0;
  CHECK(qk_norm_time(su.ctx(), sh) ==
        memory_time(g, Bytes(4.0 * row * sh.heads)) + memory_time(g, Bytes(4.0 * row * sh.kv_heads)));
  su.model.mla = MlaDesc{0, 8, 8, 8, 16};
  CHECK(qk_norm_time(su.ctx(), sh).v == 0);  // MLA's latent norms are not QK-norm
}

}  // TEST_SUITE
