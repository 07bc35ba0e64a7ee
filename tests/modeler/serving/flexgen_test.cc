#include "modeler/serving/flexgen.h"

#include <doctest/doctest.h>

#include "modeler/problems.h"

using namespace shardplan;
using namespace shardplan::serving;

namespace {
// The 2-D weight values FlexGen stages or compresses: the token embedding, the 2050 learned positions (OPT's 2048
// plus its offset of 2), every layer's four attention and two MLP matrices, and the output projection.
double matrix_values(const ModelDesc& m) {
  const double h = m.hidden;
  return (m.vocab + 2050.0) * h + m.layers * (4 * h * h + 2 * h * m.ffn_hidden) + m.vocab * h;
}
// OPT-30B (facebook/opt-30b config.json): 48 layers, hidden 7168, ffn 28672, 56 heads, vocab 50272, 2048 learned
// positions, tied, biases, LayerNorm. Built in code as models/opt-30b.yaml states it (tests/io/model_io_test.cc
// checks that file against the OPT paper's Table 1).
ModelDesc opt30b() {
  ModelDesc m;
  m.name = "opt-30b";
  m.layers = 48;
  m.hidden = 7168;
  m.ffn_hidden = 28672;
  m.heads = m.kv_heads = 56;
  m.head_dim = 128;
  m.vocab = 50272;
  m.gated_mlp = false;
  m.tied_embeddings = true;
  m.linear_bias = true;
  m.norm = NormKind::layernorm;
  m.position = PositionKind::learned;
  m.max_position = 2048;
  return m;
}

// Round numbers so expected times are the formulas: 10 TFLOP/s, 100 GB/s device memory, 10 GB/s PCIe each way,
// 100 GB/s DRAM, 1 GB/s disk both ways, room for everything.
FlexgenMachine round_machine() {
  FlexgenMachine m;
  m.name = "round";
  m.gpu_gemm = TFlops(10);
  m.gpu_memory_bw = GBps(100);
  m.gpu_memory = GiB(1000);
  m.pcie_h2d = m.pcie_d2h = GBps(10);
  m.host_memory_bw = GBps(100);
  m.host_memory = GiB(10000);
  m.disk_read = m.disk_write = GBps(1);
  m.disk = GiB(100000);
  return m;
}

FlexgenPolicy all_gpu(int gbs, int batches) {
  FlexgenPolicy p;
  p.gpu_batch_size = gbs;
  p.num_gpu_batches = batches;
  p.w_gpu_percent = p.cache_gpu_percent = p.act_gpu_percent = 100;
  return p;
}

double weight_values(const ModelDesc& m) {
  const double h = m.hidden, f = m.ffn_hidden;
  return (m.vocab + 2048 + 2.0) * h + m.layers * (4 * h * h + 6 * h + 2 * h * f + f + 3 * h) + m.vocab * h + 2 * h;
}
}  // namespace

TEST_CASE("flexgen, all on the GPU, batch 1: a decode token reads every weight and the cache once") {
  const ModelDesc m = opt30b();
  FlexgenPolicy p = all_gpu(1, 1);
  p.overlap = false;
  const FlexgenWorkload w{512, 2};
  const FlexgenPrediction r = flexgen_predict(m, p, round_machine(), w);
  // Decode token 1 at context 513: the linear layers are weight-bound at batch 1 (2 FLOP per 2-byte weight at
  // 10 TFLOP/s is far below 2 bytes at 100 GB/s); the embedding gather reads nothing; attention reads K and V.
  const double h = m.hidden;
  const double linear_values = m.layers * (4 * h * h + 2 * h * m.ffn_hidden) + m.vocab * h;
  const double cache = m.layers * 2.0 * 513 * h * 2;
  const double expect = (2 * linear_values + cache) / 100e9;
  CHECK(r.decode.v == doctest::Approx(expect).epsilon(1e-3).scale(0));
  CHECK(r.decode_tokens_per_s == doctest::Approx(1 / r.decode.v));
  CHECK(r.throughput_tokens_per_s == doctest::Approx(2 / (r.prefill.v + r.decode.v)));
  CHECK(r.gpu_home.v == doctest::Approx(weight_values(m) * 2 + m.layers * 2.0 * 513 * h * 2));
}

TEST_CASE("flexgen: overlapping I/O with compute is never slower, and moving weights off the GPU never helps") {
  const ModelDesc m = opt30b();
  const FlexgenWorkload w{512, 8};
  for (double wg : {100.0, 50.0, 20.0, 0.0}) {
    for (bool cpu_attention : {false, true}) {
      FlexgenPolicy p = all_gpu(16, 4);
      p.w_gpu_percent = wg;
      p.w_cpu_percent = 100 - wg;
      p.cache_gpu_percent = 0;
      p.cache_cpu_percent = 100;
      p.cpu_cache_compute = cpu_attention;
      FlexgenPolicy serial = p;
      serial.overlap = false;
      const auto a = flexgen_predict(m, p, round_machine(), w);
      const auto b = flexgen_predict(m, serial, round_machine(), w);
      INFO("w_gpu " << wg << " cpu attention " << cpu_attention);
      CHECK(a.throughput_tokens_per_s >= b.throughput_tokens_per_s);
      FlexgenPolicy less = p;
      less.w_gpu_percent = std::max(0.0, wg - 20);
      less.w_cpu_percent = 100 - less.w_gpu_percent;
      CHECK(flexgen_predict(m, less, round_machine(), w).throughput_tokens_per_s <= a.throughput_tokens_per_s * 1.0001);
    }
  }
}

TEST_CASE("flexgen: a cache on disk is bound by the disk's read rate") {
  const ModelDesc m = opt30b();
  FlexgenPolicy p = all_gpu(32, 8);
  p.w_gpu_percent = 0;
  p.w_cpu_percent = 100;
  p.cache_gpu_percent = p.cache_cpu_percent = 0;  // all on disk
  p.act_gpu_percent = 0;
  p.act_cpu_percent = 100;
  p.cpu_cache_compute = true;
  const FlexgenWorkload w{512, 4};
  FlexgenMachine slow = round_machine();
  slow.disk_read = GBps(0.5);
  const auto fast = flexgen_predict(m, p, round_machine(), w);
  const auto half = flexgen_predict(m, p, slow, w);
  // Decode steps read 2 bytes per cached value from disk; halving the read rate about doubles them.
  CHECK(half.decode.v / fast.decode.v == doctest::Approx(2.0).epsilon(0.05));
  CHECK(fast.disk_home.v > 0);
}

TEST_CASE("flexgen: CPU attention over a CPU cache runs at the host's memory bandwidth") {
  const ModelDesc m = opt30b();
  FlexgenPolicy p = all_gpu(48, 3);
  p.w_gpu_percent = 100;
  p.cache_gpu_percent = 0;
  p.cache_cpu_percent = 100;
  p.cpu_cache_compute = true;
  const FlexgenWorkload w{512, 2};
  FlexgenMachine m2 = round_machine();
  m2.host_memory_bw = GBps(50);
  const auto a = flexgen_predict(m, p, round_machine(), w);
  const auto b = flexgen_predict(m, p, m2, w);
  // The CPU part of a decode token: 14 bytes of DRAM traffic per cached value at context 513.
  const double cpu_part = m.layers * 3 * 14.0 * 2 * 48 * 513 * m.hidden;
  CHECK(b.decode.v - a.decode.v == doctest::Approx(cpu_part / 50e9 - cpu_part / 100e9).epsilon(0.02));
}

TEST_CASE("flexgen: policies FlexGen rejects and homes that do not fit are errors") {
  const ModelDesc m = opt30b();
  const FlexgenWorkload w{512, 32};
  FlexgenPolicy p = all_gpu(4, 1);
  p.w_cpu_percent = 10;  // 100 + 10
  CHECK_THROWS_AS(flexgen_predict(m, p, round_machine(), w), ConfigError);
  p = all_gpu(0, 1);
  CHECK_THROWS_AS(flexgen_predict(m, p, round_machine(), w), ConfigError);
  p = all_gpu(4, 1);
  p.cache_gpu_percent = 50;
  p.cache_cpu_percent = 50;
  p.compress_cache = true;  // FlexGen asserts a compressed cache sits on one device
  CHECK_THROWS_AS(flexgen_predict(m, p, round_machine(), w), ConfigError);
  FlexgenMachine small = round_machine();
  small.gpu_memory = GiB(16);
  CHECK_THROWS_AS(flexgen_predict(m, all_gpu(4, 1), small, w), Infeasible);
  try {
    flexgen_predict(m, all_gpu(4, 1), small, w);
  } catch (const Infeasible& e) {
    CHECK(std::string(e.what()).find("GiB") != std::string::npos);
  }
}

TEST_CASE("flexgen: 4-bit weights move 36/64 bytes per value over PCIe") {
  const ModelDesc m = opt30b();
  FlexgenPolicy p = all_gpu(1, 1);
  p.w_gpu_percent = 0;
  p.w_cpu_percent = 100;
  p.overlap = false;
  const FlexgenWorkload w{16, 2};
  FlexgenPolicy c = p;
  c.compress_weight = true;
  const auto a = flexgen_predict(m, p, round_machine(), w);
  const auto b = flexgen_predict(m, c, round_machine(), w);
  // Only the 2-D tensors are compressed; biases and LayerNorm vectors stay fp16 (flex_opt.py init_weight_list).
  const double h = m.hidden;
  const double vectors = m.layers * (6 * h + m.ffn_hidden + 3 * h) + 2 * h;
  CHECK(b.cpu_home.v == doctest::Approx((a.cpu_home.v - 2 * vectors) * 36.0 / 128.0 + 2 * vectors));
}

TEST_CASE("flexgen: long generations are summed from samples, consistently with the exact sum") {
  const ModelDesc m = opt30b();
  FlexgenPolicy p = all_gpu(8, 2);
  p.w_gpu_percent = 20;
  p.w_cpu_percent = 80;
  p.cache_gpu_percent = 0;
  p.cache_cpu_percent = 100;
  p.cpu_cache_compute = true;
  auto decode = [&](int n) { return flexgen_predict(m, p, round_machine(), {512, n}).decode.v; };
  // 257 tokens are summed exactly (256 decode tokens), 258 from samples: the extra token costs what the last
  // exact one did, to within the growth of one position of context.
  const double last_exact = decode(257) - decode(256);
  CHECK(decode(258) - decode(257) == doctest::Approx(last_exact).epsilon(0.01));
  // A generation of a million tokens returns (its 22 TB of cache on a host that holds it), and the decode rate
  // falls as the context grows.
  FlexgenMachine huge = round_machine();
  huge.host_memory = GiB(1e6);
  const auto big = flexgen_predict(m, p, huge, {512, 1000000});
  CHECK(big.decode_tokens_per_s > 0);
  CHECK(big.decode_tokens_per_s < flexgen_predict(m, p, round_machine(), {512, 64}).decode_tokens_per_s);
}

TEST_CASE("flexgen --debug fewer_batch: decode projected from sub-layer steps 10..19 of token 1") {
  // flex_opt.py generation_loop_debug_*_batch: steps 10..19 of token 1 are 5 MLP and 5 attention sub-layers, so
  // their mean is half a layer; times num_layers = 2 L + 2 = 98 sub-layers, that is 49 layers per decode token,
  // every token at token 1's context (513). All on the GPU at batch 1 a layer reads its weights and its cache.
  const ModelDesc m = opt30b();
  FlexgenPolicy p = all_gpu(1, 1);
  p.overlap = false;  // ignored: the debug loops are the overlapped ones (and nothing moves here)
  p.debug_fewer_batch = true;
  const double h = m.hidden;
  const double layer = (2 * (4 * h * h + 2 * h * m.ffn_hidden) + 2.0 * 513 * h * 2) / 100e9;
  const FlexgenPrediction two = flexgen_predict(m, p, round_machine(), FlexgenWorkload{512, 2});
  CHECK(two.decode.v == doctest::Approx(49 * layer).epsilon(1e-3).scale(0));
  // The projection does not grow with the context: 32 decode tokens cost 32 x one.
  const FlexgenPrediction many = flexgen_predict(m, p, round_machine(), FlexgenWorkload{512, 33});
  CHECK(many.decode.v == doctest::Approx(32 * two.decode.v));
  // The full loop's token 1 has 48 layers and the output embedding (vocab x h weights) instead of 49 layers.
  p.debug_fewer_batch = false;
  const FlexgenPrediction full = flexgen_predict(m, p, round_machine(), FlexgenWorkload{512, 2});
  CHECK(full.decode.v == doctest::Approx(48 * layer + 2 * m.vocab * h / 100e9).epsilon(1e-3).scale(0));
  CHECK(full.prefill.v == doctest::Approx(two.prefill.v));
}

TEST_CASE("flexgen: weights are placed tensor by tensor at the midpoint of their cumulative size") {
  // flex_opt.py init_weight_list: with --percent 20 80 (GPU 20, CPU 80) an attention sub-layer's w_q, w_k, w_v
  // (midpoints at 12.5, 37.5, 62.5%) go to the CPU and w_out (87.5%) to the GPU; an MLP's wi and wo (25, 75%)
  // both go to the CPU. So the GPU holds a quarter of attention's matrices and none of the MLP's, not 20%.
  const ModelDesc m = opt30b();
  FlexgenPolicy p = all_gpu(4, 1);
  p.w_gpu_percent = 20;
  p.w_cpu_percent = 80;
  const FlexgenWorkload w{16, 2};
  const auto r = flexgen_predict(m, p, round_machine(), w);
  const double h = m.hidden;
  // Embeddings: w_token's midpoint (48% of InputEmbed) is on the CPU, w_pos (98%) on the GPU; OutputEmbed's
  // LayerNorm vectors are at the start (CPU) and its w_token at 50% (CPU). Attention's LayerNorm vectors sit
  // above 80% and go to the GPU with w_out and b_out; bo and the MLP LayerNorm (above 99.9%) too.
  const double gpu_values = 2050 * h + m.layers * (h * h + 3 * h + 3 * h);
  const double cache = m.layers * 2.0 * 4 * 17 * h * 2;
  CHECK(r.gpu_home.v == doctest::Approx(gpu_values * 2 + cache).epsilon(1e-9));
  CHECK(r.cpu_home.v == doctest::Approx((weight_values(m) - gpu_values) * 2).epsilon(1e-9));
}

TEST_CASE("flexgen: hidden states to and from a CPU home share the default stream with compute") {
  // store_hidden and load_hidden issue plain non_blocking copies outside any stream context, so in the
  // overlapped loop they add to the step's compute instead of hiding under it.
  const ModelDesc m = opt30b();
  FlexgenPolicy p = all_gpu(8, 2);
  p.act_gpu_percent = 0;
  p.act_cpu_percent = 100;
  const FlexgenWorkload w{512, 2};
  const auto gpu = flexgen_predict(m, all_gpu(8, 2), round_machine(), w);
  const auto cpu = flexgen_predict(m, p, round_machine(), w);
  // Prefill: every sub-layer and GPU batch moves 8 x 512 x h fp16 values out and in at 10 GB/s.
  const double per_step = 2 * 8 * 512.0 * m.hidden * 2 / 10e9;
  const double steps = (2.0 * m.layers + 2) * 2;
  CHECK(cpu.prefill.v - gpu.prefill.v == doctest::Approx(steps * per_step).epsilon(1e-6));
}

TEST_CASE("flexgen: pageable weights are copied to pinned memory on the launching thread, before compute") {
  // pin_weight false: general_copy's src.pin_memory() relay runs inside load_weight, before compute_layer is
  // launched, so its host copy (2 bytes of DRAM traffic per byte) adds to the step even when compute is longer
  // than the DMA.
  const ModelDesc m = opt30b();
  FlexgenPolicy p = all_gpu(64, 1);
  p.w_gpu_percent = 0;
  p.w_cpu_percent = 100;
  FlexgenMachine fast_pcie = round_machine();
  fast_pcie.pcie_h2d = fast_pcie.pcie_d2h = GBps(1000);  // DMA hides under compute
  const FlexgenWorkload w{1024, 2};
  FlexgenPolicy pageable = p;
  pageable.pin_weight = false;
  const auto pinned = flexgen_predict(m, p, fast_pcie, w);
  const auto paged = flexgen_predict(m, pageable, fast_pcie, w);
  // Prefill: every 2-D weight byte staged once at 2 / 100 GB/s (the 1-D ones stay pinned).
  const double matrices = matrix_values(m);
  CHECK(paged.prefill.v - pinned.prefill.v == doctest::Approx(matrices * 2 * 2 / 100e9).epsilon(1e-3));
}

TEST_CASE("flexgen: decompressing 4-bit weights costs 13 bytes of device traffic per 2-D value, every GPU batch") {
  // compression.py decompress: shift and mask (read the packed byte, write a uint8 temporary: 1 byte per value),
  // the two assignments into the fp16 output (read the temporary, write 2 bytes: 1.5), div_ and add_ (4 each).
  const ModelDesc m = opt30b();
  FlexgenPolicy p = all_gpu(1, 2);
  p.overlap = false;
  FlexgenPolicy c = p;
  c.compress_weight = true;
  const FlexgenWorkload w{16, 2};
  const auto plain = flexgen_predict(m, p, round_machine(), w);
  const auto packed = flexgen_predict(m, c, round_machine(), w);
  const double matrices = matrix_values(m);
  CHECK(packed.decode.v - plain.decode.v == doctest::Approx(2 * 13.0 * matrices / 100e9).epsilon(1e-6));
}

TEST_CASE("flexgen: a compressed cache at home on the GPU is decompressed over every allocated position") {
  // pytorch_backend.py mha_gen decompresses the home tensor, prompt + gen_len - 1 positions, then slices the
  // context; a cache copied from the CPU holds only the context (load_cache indices 0 .. prompt + i).
  const ModelDesc m = opt30b();
  FlexgenPolicy p = all_gpu(1, 1);
  p.overlap = false;
  FlexgenPolicy c = p;
  c.compress_cache = true;
  const double h = m.hidden;
  for (int gen : {3, 9}) {
    const FlexgenWorkload w{16, gen};
    const auto plain = flexgen_predict(m, p, round_machine(), w);
    const auto packed = flexgen_predict(m, c, round_machine(), w);
    const double per_token = m.layers * 13.0 * 2 * (16 + gen - 1) * h / 100e9;
    CHECK(packed.decode.v - plain.decode.v == doctest::Approx((gen - 1) * per_token).epsilon(1e-6));
  }
  // The same cache at home on the CPU decompresses the context only: tokens 1 and 2 at contexts 17 and 18.
  FlexgenPolicy cpu = c, cpu_plain = p;
  cpu.cache_gpu_percent = cpu_plain.cache_gpu_percent = 0;
  cpu.cache_cpu_percent = cpu_plain.cache_cpu_percent = 100;
  const FlexgenWorkload w{16, 3};
  const auto a = flexgen_predict(m, cpu, round_machine(), w);
  const auto b = flexgen_predict(m, cpu_plain, round_machine(), w);
  // Copies shrink to 36/64 of fp16 (staging + PCIe), decompression adds 13 bytes per context value.
  const double values = m.layers * 2.0 * (17 + 18) * h;
  const double copy_saved = values * (2 - 36.0 / 64) * (2 / 100e9 + 1 / 10e9);
  const double decompress = values * 13.0 / 100e9;
  // New KV stored to the CPU home: 36/64 of fp16 through the copy-thread relay, 2 tokens.
  const double fresh = m.layers * 2.0 * 2 * h * (2 - 36.0 / 64) * (1 / 10e9 + 2 / 100e9);
  CHECK(a.decode.v - b.decode.v == doctest::Approx(decompress - copy_saved - fresh).epsilon(1e-6));
}
