#include "modeler/serving/transforms.h"

#include <doctest/doctest.h>

#include <string>

#include "modeler/serving/serve_predict.h"
#include "modeler/serving/step_time.h"
#include "modeler/serving/tensors.h"
#include "tests/modeler/serving/serving_fixtures.h"

using namespace shardplan;
using namespace shardplan::serving;

namespace {

// One block, hidden 64, plain (non-gated) MLP of 128, 4 heads of 16, vocab 100: every tensor's bytes by hand.
ModelDesc tiny() { return test::plain_model("tiny", 1, 64, 128, 4, 4, 16, 100); }

// Two blocks, hidden 1024, plain MLP of 4096, 8 heads of 128, vocab 1000: big enough that the block linears are
// most of a step, small enough to count by hand. A block's linears hold 4 x 1024 x 1024 (q, k, v, o) +
// 2 x 4096 x 1024 (up, down) = 12 Mi weights.
ModelDesc small() { return test::plain_model("small", 2, 1024, 4096, 8, 8, 128, 1000); }

const WeightTensor& find(const std::vector<WeightTensor>& ts, const std::string& name) {
  for (const auto& t : ts)
    if (t.name == name) return t;
  FAIL("no tensor " << name);
  return ts.front();
}

Transform quantize(WeightFormat f) {
  Transform t;
  t.kind = Transform::Kind::quantize;
  t.format = f;
  return t;
}

std::string error_of(const std::vector<Transform>& xs, WeightFormat f = WeightFormat::bf16) {
  Precision p;
  p.weights = p.moe_weights = f;
  std::vector<WeightTensor> ts = model_tensors(tiny(), p);
  try {
    apply_transforms(&ts, xs);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("2:4, block sparsity and low rank give the hand-computed bytes of a tiny model's tensors") {
  const Precision bf16;
  std::vector<WeightTensor> ts = model_tensors(tiny(), bf16);
  // ffn_up: 128 x 64 = 8192 elements, 16384 bytes dense in bf16.
  CHECK(find(ts, "blk.0.ffn_up").bytes.v == 16384);
  std::vector<WeightTensor> s = ts;
  apply_transforms(&s, {parse_sparsity("--sparsity", "2:4:mlp")});
  // Kept half 4096 x 2 bytes + 2 bits of metadata per kept value (1024 bytes).
  CHECK(find(s, "blk.0.ffn_up").bytes.v == 4096 * 2 + 1024);
  CHECK(find(s, "blk.0.attn_q").bytes.v == 64 * 64 * 2);  // attention not targeted
  CHECK(find(s, "token_embd").bytes.v == find(ts, "token_embd").bytes.v);
  std::vector<WeightTensor> b = ts;
  apply_transforms(&b, {parse_sparsity("--sparsity", "block:0.25:8")});
  // 2048 kept elements x 2 bytes + 32 kept 8x8 blocks x 4-byte column index.
  CHECK(find(b, "blk.0.ffn_up").bytes.v == 2048 * 2 + 32 * 4);
  std::vector<WeightTensor> r = ts;
  apply_transforms(&r, {parse_low_rank("--low-rank", "8")});
  // 8 x (128 + 64) elements x 2 bytes.
  CHECK(find(r, "blk.0.ffn_up").bytes.v == 8 * 192 * 2);
  CHECK(find(r, "blk.0.attn_k").bytes.v == 8 * 128 * 2);
  CHECK(find(r, "output").bytes.v == find(ts, "output").bytes.v);  // the LM head is never transformed
}

TEST_CASE("sparsify then quantize costs the same as quantize then sparsify") {
  const Precision bf16;
  std::vector<WeightTensor> a = model_tensors(tiny(), bf16), b = a;
  const Transform sp = parse_sparsity("--sparsity", "2:4"), q = quantize(WeightFormat::fp8);
  apply_transforms(&a, {sp, q});
  apply_transforms(&b, {q, sp});
  for (size_t i = 0; i < a.size(); ++i) {
    CHECK(a[i].bytes.v == b[i].bytes.v);
    CHECK(a[i].format == b[i].format);
  }
  // fp8 2:4: 4096 kept bytes + 1024 bytes of metadata.
  CHECK(find(a, "blk.0.ffn_up").bytes.v == 4096 + 1024);
  // And the step times agree (the same state gives the same kernels).
  const System sys = test::round_system();
  Precision fp8;
  fp8.weights = fp8.moe_weights = WeightFormat::fp8;
  const ServingModel x = make_serving_model(small(), bf16, {sp, q});
  const ServingModel y = make_serving_model(small(), fp8, {sp});
  StepLoad l;
  l.prefill_tokens = 4096;
  l.prefill_keys = 2048;
  CHECK(step_time(x, sys, WorkerPlan{}, l).total.v
      == doctest::Approx(step_time(y, sys, WorkerPlan{}, l).total.v).scale(0));
}

TEST_CASE("combinations no kernel runs are refused whatever the order") {
  const Transform sp = parse_sparsity("--sparsity", "2:4");
  CHECK(error_of({sp}, WeightFormat::q4_k_m).find("no sparse kernel runs q") != std::string::npos);
  CHECK(error_of({sp, quantize(WeightFormat::q4_k)}).find("no sparse kernel runs q4_k") != std::string::npos);
  CHECK(error_of({quantize(WeightFormat::int4_wo), sp}).find("int4_wo") != std::string::npos);
  CHECK(error_of({sp}, WeightFormat::nvfp4).find("nvfp4") != std::string::npos);
  CHECK(error_of({sp, parse_sparsity("--sparsity", "block:0.5:16")}).find("one sparsity per tensor") !=
        std::string::npos);
  // 64 x 64: rank 32 keeps 32 x 128 = 4096 elements, no saving.
  CHECK(error_of({parse_low_rank("--low-rank", "32:attn")}).find("needs rank < n*k/(n+k)") != std::string::npos);
  CHECK(error_of({parse_low_rank("--low-rank", "31:attn")}).empty());
  CHECK(error_of({sp}).empty());
}

TEST_CASE("low-rank routed experts are refused; sparse experts shrink by the 2:4 ratio") {
  ModelDesc m = tiny();
  MoeDesc e;
  e.experts = 4;
  e.top_k = 2;
  e.expert_ffn_hidden = 32;
  m.moe = e;
  std::vector<WeightTensor> ts = model_tensors(m, Precision{});
  std::vector<WeightTensor> lr = ts;
  CHECK_THROWS_WITH_AS(apply_transforms(&lr, {parse_low_rank("--low-rank", "4:experts")}),
                       doctest::Contains("routed experts"), ConfigError);
  std::vector<WeightTensor> sp = ts;
  apply_transforms(&sp, {parse_sparsity("--sparsity", "2:4:experts")});
  CHECK(find(sp, "blk.0.ffn_up_exps").bytes.v == doctest::Approx(find(ts, "blk.0.ffn_up_exps").bytes.v * 9.0 / 16));
}

TEST_CASE("flag specs: defaults, targets and errors naming the flag and the constraint") {
  const Transform t = parse_sparsity("--sparsity", "2:4");
  CHECK(t.targets == (kTargetAttn | kTargetMlp | kTargetExperts));
  CHECK(parse_sparsity("--sparsity", "2:4:attn,mlp").targets == (kTargetAttn | kTargetMlp));
  CHECK(parse_low_rank("--low-rank", "256").targets == (kTargetAttn | kTargetMlp));
  CHECK_THROWS_WITH_AS(parse_sparsity("--sparsity", "1:4"), doctest::Contains("--sparsity: expected 2:4"),
                       ConfigError);
  CHECK_THROWS_WITH_AS(parse_sparsity("--sparsity", "2:4:ffn"), doctest::Contains("unknown target 'ffn'"),
                       ConfigError);
  CHECK_THROWS_WITH_AS(parse_sparsity("--sparsity", "block:1.5:32"), doctest::Contains("density must be in (0, 1)"),
                       ConfigError);
  CHECK_THROWS_WITH_AS(parse_sparsity("--sparsity", "block:0.1:2.5"), doctest::Contains("block size must be"),
                       ConfigError);
  CHECK_THROWS_WITH_AS(parse_low_rank("--low-rank", "0"), doctest::Contains("--low-rank: rank must be a positive"),
                       ConfigError);
  CHECK_THROWS_WITH_AS(parse_low_rank("--low-rank", "x"), doctest::Contains("rank must be a number"), ConfigError);
}

TEST_CASE("the sparse-kernel table speeds up the compute-bound side only") {
  LinearTransform x;
  CHECK(sparse_compute_speedup(x, 8192, 4096, 4096) == 1.0);
  x.sparsity = Sparsity::two_four;
  x.density = 0.5;
  const double s = sparse_compute_speedup(x, 13008, 4096, 1024);
  CHECK(s == doctest::Approx(1.24));
  CHECK(s < 2.0);  // never above the Sparse Tensor Cores' 2x math rate
  const Gpu g = test::round_system().gpu;
  // Compute-bound: the time divides by the speedup; memory-bound (m = 1): the bytes decide, not the speedup.
  const double dense = weight_gemm_time(g, Dtype::bf16, 65536, 8192, 8192, Bytes(8192.0 * 8192 * 2)).v;
  const double sparse = weight_gemm_time(g, Dtype::bf16, 65536, 8192, 8192, Bytes(8192.0 * 8192 * 2), 1.25).v;
  CHECK(sparse == doctest::Approx(dense / 1.25).epsilon(0.01).scale(0));
  CHECK(weight_gemm_time(g, Dtype::bf16, 1, 8192, 8192, Bytes(1e6), 1.25).v ==
        doctest::Approx(weight_gemm_time(g, Dtype::bf16, 1, 8192, 8192, Bytes(1e6)).v).scale(0));
  x.sparsity = Sparsity::block;
  x.density = 0.05;
  CHECK(sparse_compute_speedup(x, 1, 1, 1) == doctest::Approx(16.7));  // BLaST's measured point
}

TEST_CASE("a low-rank linear runs as two GEMMs with r (n + k) FLOPs per token") {
  // Unbounded bandwidth, so that every GEMM is compute-bound: the r-wide intermediate and the outputs of a
  // 16K-token step are otherwise memory-bound at 1 TB/s.
  System sys = test::round_system();
  sys.gpu.hbm_bw = GBps(1e9);
  const ServingModel dense = make_serving_model(small(), Precision{});
  const ServingModel lr = make_serving_model(small(), Precision{}, {parse_low_rank("--low-rank", "128")});
  StepLoad l;
  l.prefill_tokens = 16384;
  l.prefill_keys = 1;
  const double t_dense = step_time(dense, sys, WorkerPlan{}, l).linear.v;
  const double t_lr = step_time(lr, sys, WorkerPlan{}, l).linear.v;
  // Compute-bound at efficiency 1, so the time ratio is the FLOPs ratio of a block's linears (prefill_seqs 0: no
  // row reaches the LM head). Dense: 12 Mi weights (small()). Rank 128: q, k, v, o 4 x 128 x (1024 + 1024) = 1 Mi,
  // up and down 2 x 128 x (4096 + 1024) = 1.25 Mi: 2.25 Mi / 12 Mi = 3/16.
  CHECK(t_lr / t_dense == doctest::Approx(3.0 / 16).epsilon(0.03).scale(0));
}

TEST_CASE("tensor parallelism keeps one factor of a low-rank linear whole") {
  LinearTransform x;
  x.rank = 16;
  // n 96, k 32: B holds 16 x 32 = 512 elements (a quarter), A 16 x 96 = 1536.
  const Bytes all(2048 * 2);
  CHECK(low_rank_rank_bytes(96, 32, x, all, true, 4).v == doctest::Approx(2 * (512 + 1536 / 4.0)));
  CHECK(low_rank_rank_bytes(96, 32, x, all, false, 4).v == doctest::Approx(2 * (512 / 4.0 + 1536)));
  CHECK(low_rank_rank_bytes(96, 32, LinearTransform{}, all, true, 4).v == doctest::Approx(4096 / 4.0));
}

TEST_CASE("serve predict: 2:4 shrinks the weights and the memory-bound decode step") {
  const System sys = test::round_system();
  Precision fp8;
  fp8.weights = fp8.moe_weights = WeightFormat::fp8;
  const ServingModel dense = make_serving_model(small(), fp8);
  const ServingModel sparse = make_serving_model(small(), fp8, {parse_sparsity("--sparsity", "2:4")});
  ServeInputs in;
  in.system = &sys;
  in.workload.concurrency = 1;
  in.model = &dense;
  const ServePrediction a = serve_predict(in);
  in.model = &sparse;
  const ServePrediction b = serve_predict(in);
  CHECK(b.memory.weights < a.memory.weights);
  CHECK(b.kv_tokens > a.kv_tokens);
  // Batch 1 decode reads the weights: the block linears shrink to 5/8 in fp8 2:4.
  CHECK(b.decode_step.linear.v < a.decode_step.linear.v * 0.75);
  CHECK(b.decode_step.linear.v > a.decode_step.linear.v * 0.55);
}

TEST_CASE("2:4 needs Sparse Tensor Cores and fp8 sparse weights need fp8 tensor cores") {
  Precision fp8;
  fp8.weights = WeightFormat::fp8;
  const ServingModel sm = make_serving_model(tiny(), fp8, {parse_sparsity("--sparsity", "2:4")});
  Gpu old;
  old.name = "v100-like";
  old.peak[static_cast<int>(Dtype::fp16)] = TFlops(125);
  const Problems p = check_transform_kernels(sm.tensors, old);
  REQUIRE(p.size() == 1);
  CHECK(p[0].message.find("no Sparse Tensor Cores") != std::string::npos);
  Gpu a100 = old;
  a100.name = "a100-like";
  a100.peak[static_cast<int>(Dtype::bf16)] = TFlops(312);
  const Problems q = check_transform_kernels(sm.tensors, a100);
  REQUIRE(q.size() == 1);
  CHECK(q[0].message.find("no fp8 tensor cores") != std::string::npos);
  CHECK(check_transform_kernels(sm.tensors, test::round_system().gpu).empty());
  // Apple GPUs have no tensor cores; their profiles store the 16-bit ALU rate as bf16 (hwprofiles/gpus/apple-*).
  Gpu apple = a100;
  apple.name = "apple-m2-ultra-76c";
  const Problems m = check_transform_kernels(sm.tensors, apple);
  REQUIRE_FALSE(m.empty());
  CHECK(m[0].message.find("no Sparse Tensor Cores") != std::string::npos);
}

TEST_CASE("techniques.md 8 (b): a 4096 x 14336 layer at 95% block sparsity, block 32, matches the BSR formula") {
  LinearTransform x;
  x.sparsity = Sparsity::block;
  x.density = 0.05;
  x.block = 32;
  const double kept = 4096.0 * 14336 * 0.05;
  CHECK(transformed_bytes(14336, 4096, 0, WeightFormat::bf16, x).v == doctest::Approx(kept * 2 + kept / 1024 * 4));
  CHECK(transformed_bytes(14336, 4096, 0, WeightFormat::fp8, x).v == doctest::Approx(kept * 1 + kept / 1024 * 4));
}

TEST_CASE("techniques.md 8 (a): Llama-3.2-1B with 95% MLP sparsity stores 2.5-3x fewer weight bytes") {
  // Llama-3.2-1B config.json: 16 layers, hidden 2048, MLP 8192, 32 heads of 64, 8 KV heads, vocab 128256, tied.
  ModelDesc m = test::plain_model("llama-3.2-1b", 16, 2048, 8192, 32, 8, 64, 128256);
  m.gated_mlp = true;
  m.tied_embeddings = true;
  std::vector<WeightTensor> ts = model_tensors(m, Precision{});
  const double dense = total_bytes(ts).v;
  apply_transforms(&ts, {parse_sparsity("--sparsity", "block:0.05:32:mlp")});
  const double ratio = dense / total_bytes(ts).v;
  CHECK(ratio > 2.5);
  CHECK(ratio < 3.0);
}
