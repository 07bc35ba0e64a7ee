#include "modeler/serving/step_time.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <utility>

#include "modeler/serving/decode_gemm_table.h"
#include "tests/modeler/serving/serving_fixtures.h"

using namespace shardplan;
using namespace shardplan::serving;

TEST_CASE("a batch-1 decode step is memory-bound: about the weights' bytes over the bandwidth") {
  const System sys = test::round_system();
  Precision p;
  const ServingModel sm = make_serving_model(test::llama3_8b(), p);
  WorkerPlan w;
  StepLoad l;
  l.decode_seqs = 1;
  l.decode_ctx = 1;
  const StepTime t = step_time(sm, sys, w, l);
  // Every GEMM reads its weight once; the embedding table is looked up, not read.
  const double weights = (total_bytes(sm.tensors) - sm.embedding_bytes).v;
  CHECK(t.total.v == doctest::Approx(weights / 1e12).epsilon(0.02).scale(0));
  CHECK(t.total.v == doctest::Approx((t.linear + t.attention + t.moe + t.comm + t.other + t.host).v));
}

TEST_CASE("decode step time grows with the batch and the context, and fp8 weights halve the memory-bound part") {
  const System sys = test::round_system();
  Precision p;
  const ServingModel bf = make_serving_model(test::llama3_8b(), p);
  p.weights = WeightFormat::fp8;
  const ServingModel f8 = make_serving_model(test::llama3_8b(), p);
  WorkerPlan w;
  StepLoad a;
  a.decode_seqs = 1;
  a.decode_ctx = 1000;
  StepLoad b = a;
  b.decode_seqs = 64;
  StepLoad c = a;
  c.decode_ctx = 8000;
  CHECK(step_time(bf, sys, w, b).total > step_time(bf, sys, w, a).total);
  CHECK(step_time(bf, sys, w, c).attention > step_time(bf, sys, w, a).attention);
  // The block linears halve; the LM head stays in 16 bits (tensors.cc: HF fp8 exports leave lm_head unquantised),
  // one 128,256 x 4,096 GEMV at batch 1, 7% of the fp8 total. The activations (< 0.1% here) halve only in part.
  CHECK(f8.lm_head.bytes.v == bf.lm_head.bytes.v);
  const double head = weight_gemm_time(sys.gpu, Dtype::bf16, 1, bf.lm_head.n, bf.lm_head.k, bf.lm_head.bytes).v;
  const double blocks = step_time(bf, sys, w, a).linear.v - head;
  CHECK(step_time(f8, sys, w, a).linear.v == doctest::Approx(0.5 * blocks + head).epsilon(0.002).scale(0));
}

TEST_CASE("prefill is compute-bound and tensor parallelism splits it, adding all-reduces") {
  const System sys = test::round_system();
  const ServingModel sm = make_serving_model(test::llama3_8b(), Precision{});
  StepLoad l;
  l.prefill_tokens = 8192;
  l.prefill_keys = 4096;
  l.prefill_seqs = 1;
  WorkerPlan one, two;
  two.tp = 2;
  const StepTime a = step_time(sm, sys, one, l), b = step_time(sm, sys, two, l);
  // Each GEMM at its roofline on the round GPU (1000 TFLOP/s, 1 TB/s, efficiency 1): max(2 m n k / peak, (weight +
  // m k + m n) x 2 bytes / bandwidth). The block GEMMs see the 8192 tokens: compute-bound but for K and V (n 1024 /
  // tp against k 4096: 1.2 and 2.2 x the ridge of 1000 FLOP per byte, as the projections are separate tensors
  // here). The LM head runs only for the sequence that samples (m 1): its weight stream, not 2 x 0.5 B params x
  // 8192 tokens (which an expectation of 2 x non-embedding params x tokens counted, 6.5% too much).
  const auto roofline = [](double m, double n, double k) {
    return std::max(2.0 * m * n * k / 1e15, (n * k + m * k + m * n) * 2.0 / 1e12);
  };
  const auto linear = [&](double tp) {
    const double T = 8192, h = 4096, q = 4096, kv = 1024, f = 14336;
    const double block = roofline(T, q / tp, h) + 2 * roofline(T, kv / tp, h) + roofline(T, h, q / tp) +
                         roofline(T, 2 * f / tp, h) + roofline(T, h, f / tp);
    return 32 * block + roofline(1, 128256 / tp, h);
  };
  CHECK(a.linear.v == doctest::Approx(linear(1)).epsilon(1e-9).scale(0));
  CHECK(b.linear.v == doctest::Approx(linear(2)).epsilon(1e-9).scale(0));
  // The compute-bound bulk halves: 2 x block params x tokens FLOPs, within the memory-bound K/V and LM head.
  const double block_params = total_params(test::llama3_8b()) - 2 * embedding_params(test::llama3_8b());
  CHECK(a.linear.v == doctest::Approx(2.0 * block_params * 8192 / 1e15).epsilon(0.025).scale(0));
  CHECK(b.linear.v == doctest::Approx(a.linear.v / 2).epsilon(0.05).scale(0));
  CHECK(a.comm.v == 0);
  CHECK(b.comm.v > 0);
}

TEST_CASE("routed experts read only the experts their tokens reach") {
  const System sys = test::round_system();
  ModelDesc m = test::llama3_8b();
  m.moe = MoeDesc{64, 2, 1024, 0, 0, 0, false, false};
  const ServingModel sm = make_serving_model(m, Precision{});
  WorkerPlan w;
  StepLoad one, many;
  one.decode_seqs = 1;
  one.decode_ctx = 1;
  many = one;
  many.decode_seqs = 256;
  const StepTime a = step_time(sm, sys, w, one), b = step_time(sm, sys, w, many);
  // One token reaches 2 of 64 experts; 256 tokens reach nearly all: the MoE time grows by far more than 2x.
  CHECK(b.moe.v > 10 * a.moe.v);
  CHECK(b.moe.v < 40 * a.moe.v);
}

TEST_CASE("a decode step pays each block's small kernels (norms, activation) at the measured kernel floor") {
  const System sys = test::h200_system();
  const ServingModel sm = make_serving_model(test::llama3_8b(), Precision{});
  WorkerPlan w;
  StepLoad l;
  l.decode_seqs = 1;
  l.decode_ctx = 1;
  // Three kernels per block and three per step at 2.858 us each (decode_gemm_table.cc, h200), plus the
  // elementwise bytes (a few KiB per block at batch 1, well under a nanosecond each).
  const double floor = small_kernel_latency("h200-sxm-141gb")->v;
  const double kernels = 3.0 * sm.model.layers + 3.0;
  const StepTime t = step_time(sm, sys, w, l);
  CHECK(t.other.v == doctest::Approx(kernels * floor).epsilon(0.01));
  // A GPU the table does not have charges the profile's kernel overhead per small kernel instead.
  System other = test::round_system();
  other.gpu.eff.kernel_overhead = us(4);
  const StepTime u = step_time(sm, other, w, l);
  CHECK(u.other.v == doctest::Approx(kernels * 4e-6).epsilon(0.01));
  // Prefill: the same kernels, now bound by the bytes they move (8192 tokens x 4096 x 2 B x 6 passes per block).
  StepLoad p;
  p.prefill_tokens = 8192;
  p.prefill_keys = 4096;
  p.prefill_seqs = 1;
  const StepTime pt = step_time(sm, sys, w, p);
  CHECK(pt.other.v > 8192.0 * 4096 * 2 * 6 * sm.model.layers / 4.8e12);
}

TEST_CASE("the step pays the engine's small kernels per block and its host time per step") {
  const System sys = test::h200_system();
  ServingModel neutral = make_serving_model(test::llama3_8b(), Precision{});
  ServingModel sglang = neutral;
  sglang.engine = engine_step(Engine::sglang, "0.5.6.post2", neutral.model);
  WorkerPlan w;
  StepLoad l;
  l.decode_seqs = 1;
  l.decode_ctx = 1;
  const double floor = small_kernel_latency("h200-sxm-141gb")->v;
  const StepTime a = step_time(neutral, sys, w, l), b = step_time(sglang, sys, w, l);
  // SGLang's RoPE and KV-write kernels: two more floors per block (engine_step.cc).
  CHECK((b.other - a.other).v == doctest::Approx(2.0 * floor * neutral.model.layers).epsilon(1e-6));
  CHECK(a.host.v == 0);
  // A host time per step adds to the step once, whatever the load.
  ServingModel hosted = neutral;
  hosted.engine.host_per_step = ms(1.5);
  const StepTime h = step_time(hosted, sys, w, l);
  CHECK(h.host.v == doctest::Approx(1.5e-3));
  CHECK((h.total - a.total).v == doctest::Approx(1.5e-3));
  CHECK(h.total.v == doctest::Approx((h.linear + h.attention + h.moe + h.comm + h.other + h.host).v));
}

TEST_CASE("QK-norm's bytes join the elementwise passes: a read and a write of the rank's q and k") {
  const System sys = test::h200_system();
  const ServingModel plain = make_serving_model(test::llama3_8b(), Precision{});  // 32 heads, 8 kv heads of 128
  ServingModel qk = plain;
  qk.model.qk_norm = QkNorm::per_head;  // same engine kernels (neutral engine): only the bytes differ
  WorkerPlan w;
  w.tp = 2;
  StepLoad p;
  p.prefill_tokens = 8192;
  p.prefill_keys = 4096;
  p.prefill_seqs = 1;
  const StepTime a = step_time(plain, sys, w, p), b = step_time(qk, sys, w, p);
  const double bytes = 8192.0 * (32 / 2 + 8 / 2) * 128 * 4.0 * plain.model.layers;
  CHECK((b.other - a.other).v == doctest::Approx(elementwise_time(sys.gpu, Bytes(bytes)).v).epsilon(0.05));
  CHECK(b.linear == a.linear);
  CHECK(b.attention == a.attention);
}

TEST_CASE("a verification step of k + 1 tokens per sequence runs (k + 1) x batch GEMM rows and reads the K/V once") {
  const System sys = test::round_system();
  const ServingModel sm = make_serving_model(test::llama3_8b(), Precision{});
  WorkerPlan w;
  StepLoad one;
  one.decode_seqs = 4;
  one.decode_ctx = 8192;
  StepLoad verify = one;
  verify.decode_tokens_per_seq = 4;  // k = 3
  StepLoad wide = one;               // the same rows as 16 separate sequences
  wide.decode_seqs = 16;
  const StepTime a = step_time(sm, sys, w, one), v = step_time(sm, sys, w, verify), s = step_time(sm, sys, w, wide);
  CHECK(step_time(sm, sys, w, one).total == a.total);  // the default is one token per sequence
  CHECK(v.linear.v == doctest::Approx(s.linear.v));    // GEMMs and LM head: 16 rows either way
  CHECK(v.other.v == doctest::Approx(s.other.v));
  // Attention: four sequences' caches read once, not sixteen: memory-bound GQA decode costs about the same as one
  // token per sequence.
  CHECK(v.attention.v == doctest::Approx(a.attention.v).epsilon(0.05));
  CHECK(v.attention < s.attention * 0.5);
}
