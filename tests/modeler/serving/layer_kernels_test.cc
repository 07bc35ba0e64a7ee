#include "modeler/serving/layer_kernels.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <utility>

#include "modeler/serving/allreduce_table.h"
#include "modeler/serving/decode_gemm_table.h"
#include "tests/modeler/serving/serving_fixtures.h"

using namespace shardplan;
using namespace shardplan::serving;

namespace {
// One MoE layer of Qwen3-235B-A22B's expert shape (128 experts, top 8, expert ffn 1536) on Llama-3-8B's
// attention, experts in 128x128-block fp8: the shape of AIConfigurator's measured h200_sxm fp8_block MoE rows.
ServingModel qwen3_235b_moe_layer() {
  ModelDesc m = test::llama3_8b();
  m.layers = 1;
  m.moe = MoeDesc{128, 8, 1536, 0, 0, 0, false, false};
  Precision p;
  p.moe_weights = WeightFormat::fp8_block;
  return make_serving_model(m, p);
}
}  // namespace

TEST_CASE("a decode GEMV streams its weights: bytes over the bandwidth, and tensor parallelism splits them") {
  const System sys = test::round_system();
  const ServingModel sm = make_serving_model(test::llama3_8b(), Precision{});
  const LinearSpec& up = *std::find_if(sm.classes.front().linears.begin(), sm.classes.front().linears.end(),
                                       [](const LinearSpec& s) { return s.split == TpSplit::column && !s.kv; });
  WorkerPlan one, four;
  four.tp = 4;
  const KernelCtx c1{sm, sys, one, sys.gpu}, c4{sm, sys, four, sys.gpu};
  // Round GPU: 1 TB/s at efficiency 1, no kernel overhead; one token's activations are a few KiB.
  CHECK(linear_time(c1, up, 1).v == doctest::Approx(up.bytes.v / 1e12).epsilon(0.01));
  CHECK(linear_time(c4, up, 1).v == doctest::Approx(up.bytes.v / 4e12).epsilon(0.01));
  CHECK(linear_time(c1, up, 0).v == 0);
}

TEST_CASE("decode attention reads each sequence's K/V once; a sliding window caps the keys") {
  const System sys = test::round_system();
  const ServingModel sm = make_serving_model(test::llama3_8b(), Precision{});
  WorkerPlan w;
  const KernelCtx c{sm, sys, w, sys.gpu};
  StepLoad l;
  l.decode_seqs = 8;
  l.decode_ctx = 4096;
  // 8 sequences x 4096 keys x (K + V: 2 x 8 kv heads x 128) x 2 B at 1 TB/s.
  const double bytes = 8.0 * 4096 * 2 * 8 * 128 * 2;
  LayerClass full = sm.classes.front();
  CHECK(attention_time(c, full, l).v == doctest::Approx(bytes / 1e12).epsilon(0.01));
  ModelDesc m = test::llama3_8b();
  m.sliding_window = 1024;
  const ServingModel swa = make_serving_model(m, Precision{});
  const KernelCtx cs{swa, sys, w, sys.gpu};
  LayerClass sliding = full;
  sliding.sliding = true;
  CHECK(attention_time(cs, sliding, l).v == doctest::Approx(bytes / 4 / 1e12).epsilon(0.01));
}

TEST_CASE("a small kernel costs the measured floor on a table GPU, else the profile's kernel overhead") {
  CHECK(small_kernel_time(test::h200_system().gpu).v == doctest::Approx(small_kernel_latency("h200-sxm-141gb")->v));
  System other = test::round_system();
  other.gpu.eff.kernel_overhead = us(4);
  CHECK(small_kernel_time(other.gpu).v == doctest::Approx(4e-6));
  // Elementwise bytes at the HBM rate (round GPU: 1 TB/s, efficiency 1).
  CHECK(elementwise_time(other.gpu, Bytes(1e9)).v == doctest::Approx(1e-3));
}

TEST_CASE("a prefill-sized GEMM on a GPU of the prefill table runs at the measured rate (H200, fp8)") {
  Gpu g = test::round_system().gpu;
  g.name = "h200-sxm-141gb";
  g.hbm_bw = GBps(4800);
  // AIConfigurator's measured GEMM (shared/data/measured_kernels/gemm.csv.gz, h200_sxm fp8, m 8192, n 4096,
  // k 4096): 225.0 us, median over versions. The table's bin median over shapes (2^38 FLOPs) is within 10%.
  const double m = 8192, n = 4096, k = 4096;
  const Bytes w(n * k);
  const double t_us = weight_gemm_time(g, Dtype::fp8, m, n, k, w, 1.0, WeightFormat::fp8).v * 1e6;
  CHECK(t_us == doctest::Approx(225.0).epsilon(0.1));
  // Without the format (offload placement, the steady-state formula) the profile's GEMM curve applies.
  const double generic_us = weight_gemm_time(g, Dtype::fp8, m, n, k, w).v * 1e6;
  CHECK(generic_us != doctest::Approx(t_us));
  // Below kPrefillGemmMinRows rows the table is not used: decode stays memory-bound on the decode table.
  CHECK(weight_gemm_time(g, Dtype::fp8, 16, n, k, w, 1.0, WeightFormat::fp8).v ==
        doctest::Approx(weight_gemm_time(g, Dtype::fp8, 16, n, k, w).v).scale(0));
}

TEST_CASE("an MoE layer on a GPU of the MoE table runs near the measured kernel (Qwen3-235B, H200, fp8 blocks)") {
  const System sys = test::h200_system();
  const ServingModel sm = qwen3_235b_moe_layer();
  WorkerPlan w;
  const KernelCtx c{sm, sys, w, sys.gpu};
  // AIConfigurator's measured layer (shared/data/measured_kernels/moe.csv.gz, h200_sxm fp8_block
  // 4096/1536/128/8, tp 1, ep 1, balanced): 71.17 us at 1 token, 602.7 us at 16. The model routes uniformly at
  // random (16 tokens reach ~81 experts, the benchmark's round robin all 128), hence the loose band.
  for (const auto& [tokens, measured_us] : {std::pair{1.0, 71.17}, std::pair{16.0, 602.7}}) {
    const double moe_us = moe_layer_time(c, sm.classes.front().experts, tokens * 8).v * 1e6;
    CHECK(moe_us > measured_us / 1.6);
    CHECK(moe_us < measured_us * 1.6);
  }
}

TEST_CASE("an MoE layer streams its experts at the measured rate for its rows per touched expert") {
  const System sys = test::h200_system();
  const ServingModel sm = qwen3_235b_moe_layer();
  WorkerPlan w;
  const KernelCtx c{sm, sys, w, sys.gpu};
  const auto& experts = sm.classes.front().experts;
  // 640 pairs (5 rows per expert) and 2048 (16) both reach all 128 experts (2.4 GB, 2^31): the same bytes, but
  // the measured layer streams them slower at 16 rows per touched expert (3.41 TB/s) than at 4-8 (3.65-3.44;
  // moe_rows.inc h200-sxm-141gb fp8_block), and the layer stays memory-bound (about 80 GFLOP at 2048 pairs).
  const double t5 = moe_layer_time(c, experts, 640).v, t16 = moe_layer_time(c, experts, 2048).v;
  CHECK(t16 > t5 * 1.03);
  CHECK(t16 < t5 * 1.10);
}

TEST_CASE("an MoE layer beyond 16 rows per expert runs near the measured layer (Qwen3-235B, H200, fp8 blocks, tp 4)") {
  const System sys = test::h200_system();
  const ServingModel sm = qwen3_235b_moe_layer();
  WorkerPlan w;
  w.tp = 4;
  w.moe_tp = 4;
  const KernelCtx c{sm, sys, w, sys.gpu};
  // AIConfigurator's measured layer (shared/data/measured_kernels/moe.csv.gz, h200_sxm fp8_block
  // 4096/1536/128/8, tp 4, ep 1, balanced): 916.4 us at 4096 tokens, 3383 us at 16384 (345 and 1301 us with the
  // per-projection GEMM model this replaced). The table's bins pool geometries, hence the band.
  for (const auto& [tokens, measured_us] : {std::pair{4096.0, 916.4}, std::pair{16384.0, 3383.0}}) {
    const double moe_us = moe_layer_time(c, sm.classes.front().experts, tokens * 8).v * 1e6;
    CHECK(moe_us > measured_us / 1.5);
    CHECK(moe_us < measured_us * 1.5);
  }
}

TEST_CASE("tensor-parallel all-reduces inside a node run at the engines' measured custom all-reduce latency") {
  const System sys = test::h200_system();
  const ServingModel sm = make_serving_model(test::llama3_8b(), Precision{});
  WorkerPlan w;
  w.tp = 8;
  const Bytes msg(4 * 4096 * 2.0);  // 4 decode tokens x hidden 4096 x 2 B = 32 KiB
  const KernelCtx c{sm, sys, w, sys.gpu};
  // The table's ~5 us (allreduce_table.cc), not the collective model's latency-bound figure.
  const Seconds t = step_collective_time(c, Collective::all_reduce, CommKind::tp, msg, 8);
  CHECK(t.v == doctest::Approx(tp_allreduce_latency("h200-sxm-141gb", 8)->at(msg.v)).scale(0));
  CHECK(t.v < 8e-6);
  // Across nodes (a group larger than the node) the collective model applies; one rank has nothing to reduce.
  System two = sys;
  two.gpus_per_node = 4;
  if (!two.tiers.empty()) two.tiers.front().domain_gpus = 4;
  const KernelCtx c2{sm, two, w, two.gpu};
  CHECK(step_collective_time(c2, Collective::all_reduce, CommKind::tp, msg, 8).v != doctest::Approx(t.v));
  CHECK(step_collective_time(c, Collective::all_reduce, CommKind::tp, msg, 1).v == 0);
}

TEST_CASE("an NVL72 all-reduce over two compute trays stays on NVLink at the HGX part's measured latency") {
  // GB200 NVL72: 4 GPUs per node, one 72-GPU NVLink domain. A tp 8 group spans two trays but not the network.
  System sys = test::round_system();
  sys.gpu.name = "gb200";
  sys.gpus_per_node = 4;
  REQUIRE(!sys.tiers.empty());
  sys.tiers.front().domain_gpus = 72;
  const ServingModel sm = make_serving_model(test::llama3_8b(), Precision{});
  WorkerPlan w;
  w.tp = 8;
  const Bytes msg(4 * 4096 * 2.0);
  const KernelCtx c{sm, sys, w, sys.gpu};
  const Seconds t = step_collective_time(c, Collective::all_reduce, CommKind::tp, msg, 8);
  CHECK(t.v == doctest::Approx(tp_allreduce_latency("b200", 8)->at(msg.v)).scale(0));
  // With the domain ending at the tray, the group crosses the network: the collective model, not the table.
  System split = sys;
  split.tiers.front().domain_gpus = 4;
  const KernelCtx c2{sm, split, w, split.gpu};
  CHECK(step_collective_time(c2, Collective::all_reduce, CommKind::tp, msg, 8).v != doctest::Approx(t.v));
}

TEST_CASE("decode attention reads each cache once for all of a sequence's queries; its math grows with them") {
  const System sys = test::round_system();
  const ServingModel sm = make_serving_model(test::llama3_8b(), Precision{});
  const WorkerPlan w;
  const KernelCtx c{sm, sys, w, sys.gpu};
  StepLoad l;
  l.decode_seqs = 8;
  l.decode_ctx = 4096;
  const Seconds one = attention_time(c, sm.classes.front(), l);
  l.decode_tokens_per_seq = 4;  // a verification of 3 drafts: memory-bound GQA, the same bytes
  CHECK(attention_time(c, sm.classes.front(), l).v == doctest::Approx(one.v));
  l.decode_tokens_per_seq = 1000;  // far past the ridge: the queries' math dominates
  CHECK(attention_time(c, sm.classes.front(), l) > one * 2.0);
}

TEST_CASE("a GGUF matmul on an Apple GPU converts each weight once per row, up to the 8 rows of Metal's mul_mv") {
  Gpu g = test::round_system().gpu;
  g.unified_memory = true;
  g.peak[static_cast<int>(Dtype::fp32)] = TFlops(8);  // 4e12 FMA lanes/s -> 1e12 conversions/s on the complex pipe
  CHECK(gguf_kernel_extra_time(g, WeightFormat::q4_k, 1, 1000, 1000).v == doctest::Approx(1e-6));
  CHECK(gguf_kernel_extra_time(g, WeightFormat::q6_k, 8, 1000, 1000).v == doctest::Approx(8e-6));
  CHECK(gguf_kernel_extra_time(g, WeightFormat::q4_k, 9, 1000, 1000).v == 0);  // mul_mm: not counted
  CHECK(gguf_kernel_extra_time(g, WeightFormat::fp16, 1, 1000, 1000).v == 0);
  // The conversions add to the weight stream (1 MB at 1 TB/s).
  const double plain = weight_gemm_time(g, Dtype::bf16, 1, 1000, 1000, Bytes(1e6)).v;
  CHECK(weight_gemm_time(g, Dtype::bf16, 1, 1000, 1000, Bytes(1e6), 1.0, WeightFormat::q4_k).v ==
        doctest::Approx(plain + 1e-6));
  CHECK(weight_gemm_time(g, Dtype::bf16, 1, 1000, 1000, Bytes(1e6), 1.0, WeightFormat::bf16).v ==
        doctest::Approx(plain));
}

TEST_CASE("a GGUF matmul on CUDA first quantises its activation to q8_1 in a kernel of its own") {
  Gpu g = test::round_system().gpu;
  g.eff.kernel_overhead = us(3);
  // 3 us floor + 1000 f32 read and 1000 x 36/32 bytes written at 1 TB/s.
  CHECK(gguf_kernel_extra_time(g, WeightFormat::q4_k, 1, 4096, 1000).v == doctest::Approx(3e-6 + 5125.0 / 1e12));
  CHECK(gguf_kernel_extra_time(g, WeightFormat::q8_0, 2, 4096, 1000).v == doctest::Approx(3e-6 + 10250.0 / 1e12));
  CHECK(gguf_kernel_extra_time(g, WeightFormat::bf16, 1, 4096, 1000).v == 0);
}
