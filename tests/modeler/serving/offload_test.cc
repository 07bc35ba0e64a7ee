#include "modeler/serving/offload.h"

#include <doctest/doctest.h>

#include "modeler/problems.h"
#include "tests/modeler/serving/serving_fixtures.h"

using namespace shardplan;
using namespace shardplan::serving;

namespace {
Host desktop() {
  Host h;
  h.name = "test-host";
  h.memory = GiB(64);
  h.memory_bw = GBps(60);
  h.cpu_flops = TFlops(1);
  h.pcie_bw = GBps(25);
  return h;
}
/// The setup every case starts from: `sm` on `sys`'s GPU beside the desktop host, with `vram` of it for weights.
OffloadSetup setup(const ServingModel& sm, const System& sys, Bytes vram = Bytes(0)) {
  OffloadSetup s;
  s.model = &sm;
  s.gpu = &sys.gpu;
  s.host = desktop();
  s.vram = vram;
  return s;
}
ModelDesc small_moe() {
  ModelDesc m = test::llama3_8b();
  m.moe = MoeDesc{32, 4, 2048, 0, 0, 0, false, false};
  return m;
}
/// The fixture of the MoE cases: the small MoE model in bf16 on the round system beside the desktop host, and its
/// items. `s` points into the object, so it is built in place and never copied.
struct MoeCase {
  System sys = test::round_system();
  ServingModel sm = make_serving_model(small_moe(), Precision{});
  OffloadSetup s = setup(sm, sys);
  std::vector<OffloadItem> items = offload_items(s);
  MoeCase() = default;
  MoeCase(const MoeCase&) = delete;
  MoeCase& operator=(const MoeCase&) = delete;
};
}  // namespace

TEST_CASE("tensor placement is never slower than the best -ngl split at equal VRAM") {
  System sys = test::round_system();
  for (const ModelDesc& m : {test::llama3_8b(), small_moe()}) {
    for (WeightFormat f : {WeightFormat::q4_k_m, WeightFormat::fp16}) {
      Precision p;
      p.weights = p.moe_weights = f;
      const ServingModel sm = make_serving_model(m, p);
      for (double gib : {2.0, 4.0, 8.0, 12.0}) {
        OffloadSetup s = setup(sm, sys, GiB(gib));
        const auto items = offload_items(s);
        const Placement layer = best_layer_placement(items, s);
        const Placement tensor = tensor_placement(items, s);
        for (int ph = 0; ph < 2; ++ph) {
          CHECK(tensor.step[ph].v <= layer.step[ph].v * (1 + 1e-9));
          CHECK(tensor.gpu_bytes[ph].v <= s.vram.v);
          CHECK(layer.gpu_bytes[ph].v <= s.vram.v);
        }
      }
    }
  }
}

TEST_CASE("decode computes host tensors on the CPU, prefill streams them") {
  System sys = test::round_system();
  const ServingModel sm = make_serving_model(test::llama3_8b(), Precision{});
  OffloadSetup s = setup(sm, sys, GiB(4));
  const auto items = offload_items(s);
  const Placement p = layer_placement(items, s, 0);  // nothing on the GPU
  int cpu_decode = 0, stream_prefill = 0;
  for (size_t i = 0; i < items.size(); ++i) {
    if (items[i].kv) continue;
    cpu_decode += p.home[1][i] == Home::cpu;
    stream_prefill += p.home[0][i] == Home::stream;
  }
  CHECK(cpu_decode > 0);
  CHECK(stream_prefill > 0);
}

TEST_CASE("-ngl counts the output layer: blocks + 1 puts everything on the GPU") {
  System sys = test::round_system();
  const ServingModel sm = make_serving_model(test::llama3_8b(), Precision{});
  OffloadSetup s = setup(sm, sys);
  const auto items = offload_items(s);
  const Placement all = layer_placement(items, s, 33), one = layer_placement(items, s, 1);
  for (size_t i = 0; i < items.size(); ++i) {
    CHECK(all.home[1][i] == Home::gpu);
    CHECK((one.home[1][i] == Home::gpu) == (items[i].name == "output"));
  }
  CHECK(llama_cpp_flags(items, all, 1) == "-ngl 999");
  // Before llama.cpp PR #18148 -ngl N filled the last N blocks and the output layer only for N > blocks.
  s.ngl_output_first = false;
  const Placement old_one = layer_placement(items, s, 1), old_all = layer_placement(items, s, 33);
  for (size_t i = 0; i < items.size(); ++i) {
    CHECK((old_one.home[1][i] == Home::gpu) == (items[i].layer == 31));  // the last block (weights and KV)
    CHECK(old_all.home[1][i] == Home::gpu);
  }
  const Placement old_blocks = layer_placement(items, s, 32);  // every block in, the output still out
  for (size_t i = 0; i < items.size(); ++i) CHECK((old_blocks.home[1][i] == Home::gpu) == (items[i].name != "output"));
  CHECK(llama_ngl_output_first("llama.cpp", "2026-01-05"));
  CHECK_FALSE(llama_ngl_output_first("llama.cpp", "2025-12-17"));
  CHECK_FALSE(llama_ngl_output_first("ik_llama.cpp", "2025-10-13"));
  CHECK(llama_ngl_output_first("llama.cpp", ""));  // unknown date: the current rule
  CHECK(llama_ngl_output_first("vllm", "2024-01-01"));
}

TEST_CASE_FIXTURE(MoeCase, "experts of the first N blocks on the host read as --n-cpu-moe N") {
  Placement p = layer_placement(items, s, 33);
  for (size_t i = 0; i < items.size(); ++i)
    if (items[i].expert && items[i].layer < 3) p.home[1][i] = Home::cpu;
  CHECK(llama_cpp_flags(items, p, 1) == "-ngl 999 --n-cpu-moe 3");
  p.home[1][0] = Home::cpu;  // blk.0.attn_q as well: needs -ot
  CHECK(llama_cpp_flags(items, p, 1).find("-ot 'blk\\.(0)\\.attn_q=CPU'") != std::string::npos);
}

TEST_CASE_FIXTURE(MoeCase, "llama.cpp flags as a placement: -ngl, --n-cpu-moe and -ot regexes; the flags round-trip") {
  // -ngl alone is the layer placement.
  const Placement ngl = flags_placement(items, s, 20, 0, {});
  CHECK(ngl.step[1].v == doctest::Approx(layer_placement(items, s, 20).step[1].v));
  // --n-cpu-moe 3 and the -ot regex that names the same tensors give the same placement.
  const Placement moe = flags_placement(items, s, 33, 3, {});
  const Placement ot = flags_placement(items, s, 33, 0, {"blk\\.[0-2]\\.ffn_(up|down)_exps"});
  CHECK(moe.step[1].v == doctest::Approx(ot.step[1].v));
  CHECK(llama_cpp_flags(items, moe, 1) == "-ngl 999 --n-cpu-moe 3");
  // Host experts are slower than resident ones and free their bytes.
  const Placement all = flags_placement(items, s, 33, 0, {});
  CHECK(moe.step[1].v > all.step[1].v);
  CHECK(moe.gpu_bytes[1].v < all.gpu_bytes[1].v);
  // "exps" matches every routed expert (regex_search, as llama.cpp does).
  const Placement exps = flags_placement(items, s, 33, 0, {"exps"});
  CHECK(exps.gpu_bytes[1].v < moe.gpu_bytes[1].v);
  CHECK_THROWS_AS(flags_placement(items, s, 33, 0, {"blk.(["}), ConfigError);
  // Only some of block 1's experts on the host: not --n-cpu-moe (it would move them all), -ot instead.
  Placement part = all;
  for (size_t i = 0; i < items.size(); ++i)
    if (items[i].expert && (items[i].layer == 0 || items[i].name == "blk.1.ffn_down_exps")) part.home[1][i] = Home::cpu;
  CHECK(llama_cpp_flags(items, part, 1).find("--n-cpu-moe") == std::string::npos);
  CHECK(llama_cpp_flags(items, part, 1).find("-ot 'blk\\.(0|1)\\.ffn_down_exps=CPU'") != std::string::npos);
}

TEST_CASE("llama.cpp's op-offload rule: a host weight streams from 32 tokens a step, the CPU computes it below") {
  System sys = test::round_system();
  const ServingModel sm = make_serving_model(test::llama3_8b(), Precision{});
  OffloadSetup s = setup(sm, sys);
  s.host.pcie_bw = GBps(0.5);  // a slow link: streaming is never the cheaper home
  s.vram = GiB(4);
  s.op_offload_min_batch = kLlamaCppOpOffloadMinBatch;
  for (double n : {31.0, 32.0}) {
    s.prefill_tokens = n;
    const auto items = offload_items(s);
    const Placement p = layer_placement(items, s, 0);
    for (size_t i = 0; i < items.size(); ++i) {
      if (items[i].kv) continue;
      INFO(items[i].name << " at " << n << " tokens");
      REQUIRE(items[i].t_cpu[0] < items[i].t_stream[0]);
      CHECK(p.home[0][i] == (n >= 32 ? Home::stream : Home::cpu));
      CHECK(p.home[1][i] == Home::cpu);  // decode: one token
    }
  }
  // The planner's default (0) takes the cheaper home instead: at 32 tokens over this link, the CPU.
  s.op_offload_min_batch = 0;
  const auto items = offload_items(s);
  const Placement p = layer_placement(items, s, 0);
  for (size_t i = 0; i < items.size(); ++i)
    if (!items[i].kv) CHECK(p.home[0][i] == Home::cpu);
}

TEST_CASE("engine rule: a host KV cache is attended where its step's weight ops run, not where it is cheaper") {
  System sys = test::round_system();
  const ServingModel sm = make_serving_model(test::llama3_8b(), Precision{});
  OffloadSetup s = setup(sm, sys);
  s.context = 32768;
  s.vram = GiB(1);
  s.prefill_tokens = 512;
  for (double link : {1000.0, 0.5}) {  // a link where streaming the cache is cheaper in both phases; one where not
    CAPTURE(link);
    s.host.pcie_bw = GBps(link);
    s.op_offload_min_batch = 0;  // the planner's default: the cheaper home
    const auto cheaper = offload_items(s);
    s.op_offload_min_batch = kLlamaCppOpOffloadMinBatch;
    const auto engine = offload_items(s);
    int kv = 0;
    for (size_t i = 0; i < engine.size(); ++i) {
      if (!engine[i].kv) continue;
      ++kv;
      const bool stream_cheaper = cheaper[i].t_stream[1] < cheaper[i].t_cpu[1];
      CHECK(stream_cheaper == (link > 1));
      CHECK(cheaper[i].host_home[1] == (stream_cheaper ? Home::stream : Home::cpu));
      CHECK(engine[i].host_home[1] == Home::cpu);     // decode: one token, its weight ops on the CPU
      CHECK(engine[i].host_home[0] == Home::stream);  // a 512-token ubatch: its weight ops streamed to the GPU
    }
    CHECK(kv == sm.model.layers);
    // -ngl 0 under the engine rule: every block and the output layer on the CPU in decode, one host run.
    CHECK(host_runs(engine, layer_placement(engine, s, 0).home[1]) == 1);
  }
}

TEST_CASE("prefill attention covers the cache before the ubatch: prefill_keys") {
  System sys = test::round_system();
  const ServingModel sm = make_serving_model(test::llama3_8b(), Precision{});
  OffloadSetup s = setup(sm, sys, GiB(80));
  s.prefill_tokens = 512;
  s.context = 32768;
  const auto empty = offload_items(s);  // prefill_keys 0: the ubatch's causal half
  s.prefill_keys = 256;                 // the same, stated
  const auto same = offload_items(s);
  s.prefill_keys = 16384 + 256;  // 16k tokens already cached
  const auto deep = offload_items(s);
  for (size_t i = 0; i < empty.size(); ++i) {
    if (!empty[i].kv) continue;
    CHECK(same[i].t_gpu[0] == doctest::Approx(empty[i].t_gpu[0]).scale(0));
    CHECK(deep[i].t_gpu[0] > 10 * empty[i].t_gpu[0]);  // 64x the keys: compute-bound attention
    CHECK(deep[i].t_gpu[1] ==
          doctest::Approx(empty[i].t_gpu[1]).scale(0));  // decode attends the whole cache either way
  }
}

TEST_CASE_FIXTURE(MoeCase,
                  "host runs: one per block with CPU experts, one for a run of whole CPU blocks, none on the GPU") {
  CHECK(host_runs(items, flags_placement(items, s, 33, 0, {}).home[1]) == 0);
  CHECK(host_runs(items, flags_placement(items, s, 33, 5, {}).home[1]) == 5);         // --n-cpu-moe 5
  CHECK(host_runs(items, flags_placement(items, s, 33, 0, {"exps"}).home[1]) == 32);  // -ot exps=CPU
  CHECK(host_runs(items, flags_placement(items, s, 20, 0, {}).home[1]) == 1);         // -ngl 20: blocks 0..12
  CHECK(host_runs(items, flags_placement(items, s, 0, 0, {}).home[1]) == 1);          // everything on the CPU
  // Blocks 0-12 whole on the CPU, then the experts of 13 and 14: the run of whole blocks, then one per block.
  CHECK(host_runs(items, flags_placement(items, s, 20, 15, {}).home[1]) == 3);
}

TEST_CASE_FIXTURE(MoeCase, "the graphs-off cost per host run is added to decode only, once per run") {
  const Placement before = flags_placement(items, s, 33, 6, {});
  s.decode_host_run_s = kGraphsOffCostPerHostRunS;
  const Placement after = flags_placement(items, s, 33, 6, {});
  CHECK(after.step[1].v == doctest::Approx(before.step[1].v + 6 * kGraphsOffCostPerHostRunS).scale(0));
  CHECK(after.step[0].v == doctest::Approx(before.step[0].v));
  // Nothing on the host: no run, no cost.
  CHECK(flags_placement(items, s, 33, 0, {}).step[1].v ==
        doctest::Approx(layer_placement(items, setup(sm, sys), 33).step[1].v));
}

TEST_CASE("kGraphsOffCostPerHostRunS is the slope of llama.cpp PR #18934's graphs-off minus per-split-graph time") {
  // GLM-4.5-Air IQ4_XS tg128, --n-cpu-moe K: t/s before (graphs off) and after (a CUDA graph per split).
  const double k[4] = {8, 16, 32, 64};
  const double off[4] = {60.84, 48.25, 32.84, 25.08}, on[4] = {63.12, 50.75, 35.03, 27.49};
  double mk = 0, md = 0, d[4];
  for (int i = 0; i < 4; ++i) {
    d[i] = 1 / off[i] - 1 / on[i];
    mk += k[i] / 4;
    md += d[i] / 4;
  }
  double sxy = 0, sxx = 0;
  for (int i = 0; i < 4; ++i) {
    sxy += (k[i] - mk) * (d[i] - md);
    sxx += (k[i] - mk) * (k[i] - mk);
  }
  CHECK(sxy / sxx == doctest::Approx(kGraphsOffCostPerHostRunS).epsilon(0.002).scale(0));
  // Linear in K: each step of the table is within 10% of the slope (50-55 us per layer).
  for (int i = 1; i < 4; ++i)
    CHECK((d[i] - d[i - 1]) / (k[i] - k[i - 1]) == doctest::Approx(sxy / sxx).epsilon(0.1).scale(0));
}

TEST_CASE("CUDA graphs with graph splits: off by engine, build date and compute capability") {
  // llama.cpp: off everywhere before PR #18934 (2026-01-19), below Ampere until PR #25749 (2026-07-16).
  CHECK(cuda_graphs_off_with_splits("llama.cpp", "2025-02-16", 8.6).off);
  CHECK(!cuda_graphs_off_with_splits("llama.cpp", "2026-03-01", 8.6).off);
  CHECK(cuda_graphs_off_with_splits("llama.cpp", "2026-03-01", 7.5).off);
  CHECK(cuda_graphs_off_with_splits("llama.cpp", "2026-07-16", 7.5).off);  // the opening day: the older build
  CHECK(!cuda_graphs_off_with_splits("llama.cpp", "2026-07-20", 7.5).off);
  CHECK(!cuda_graphs_off_with_splits("llama.cpp", "2026-03-01", 0).off);  // compute capability unknown
  CHECK(!cuda_graphs_off_with_splits("llama.cpp", "", 7.5).off);          // date unknown: said so
  CHECK(!cuda_graphs_off_with_splits("llama.cpp", "", 7.5).why.empty());
  // ik_llama.cpp: off until PR #1172 (2026-01-20), and when the date is unknown.
  CHECK(cuda_graphs_off_with_splits("ik_llama.cpp", "2025-10-13", 8.9).off);
  CHECK(cuda_graphs_off_with_splits("ik_llama.cpp", "", 8.9).off);
  CHECK(!cuda_graphs_off_with_splits("ik_llama.cpp", "2026-02-01", 8.9).off);
  CHECK(!cuda_graphs_off_with_splits("vllm", "2025-01-01", 7.5).off);
}
