#include "modeler/io/llama_offload_validation.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "modeler/io/paths.h"
#include "modeler/io/serving_validation.h"
#include "modeler/serving/host_rates.h"
#include "modeler/serving/offload.h"

using namespace shardplan;

namespace {
io::ServingRun shipped_row(const std::string& id) {
  const auto runs = io::load_serving_runs(io::data_root() + "/tests/validation/serving/serving_runs.yaml");
  for (const auto& r : runs)
    if (r.id == id) return r;
  FAIL("no row " << id);
  return {};
}
io::ServeRowResult predict(const io::ServingRun& r) {
  io::ServeRowResult out;
  out.run = &r;
  io::predict_llama_offload_row(r, io::load_gpu_profile(r.gpu), &out);
  return out;
}
bool assumed(const io::ServeRowResult& out, const std::string& what) {
  return std::any_of(out.assumed.begin(), out.assumed.end(),
                     [&](const std::string& a) { return a.find(what) != std::string::npos; });
}
}  // namespace

TEST_CASE("offload rows: the prompt runs in the row's ubatches; the host experts' copy is paid once per ubatch") {
  // ik_llama.cpp PR #829: gpt-oss-120b with -ot exps=CPU, llama-sweep-bench -ub 4096 (PP = one ubatch).
  io::ServingRun r = shipped_row("ikllama_pr829_rtx4080_gptoss120b_exps_cpu_kv0");
  REQUIRE(r.offload->n_ubatch);
  CHECK(*r.offload->n_ubatch == 4096);
  const io::ServeRowResult big = predict(r);
  REQUIRE_FALSE(big.skipped);
  CHECK_FALSE(assumed(big, "n_ubatch"));
  r.offload->n_ubatch.reset();
  const io::ServeRowResult dflt = predict(r);
  REQUIRE_FALSE(dflt.skipped);
  CHECK(assumed(dflt, "n_ubatch 512 (llama.cpp default)"));
  // ~61 GB of MXFP4 experts cross PCIe per ubatch whatever its size: 8x the tokens per copy is several times the
  // rate (not 8x: the GPU's own work grows with the ubatch).
  CHECK(*big.predicted[3] > 4.0 * *dflt.predicted[3]);
  // Decode does not depend on the prefill step.
  CHECK(*big.predicted[2] == doctest::Approx(*dflt.predicted[2]));
}

TEST_CASE("offload rows: a short prompt is one step of its own length, not a default ubatch") {
  io::ServingRun r = shipped_row("ikllama_pr841_rtx4080_gptoss20b_cpumoe");
  const io::ServeRowResult at2048 = predict(r);
  r.offload->n_ubatch = 8192;  // larger than the prompt: the step is still the 2048-token prompt
  const io::ServeRowResult at8192 = predict(r);
  REQUIRE(at2048.predicted[3]);
  CHECK(*at8192.predicted[3] == doctest::Approx(*at2048.predicted[3]));
}

TEST_CASE("the CPU table: each part's memory channels and rated DDR data rate as its vendor page states them") {
  struct Row {
    const char* cpu;
    int channels;
    double mts;
    serving::CpuIsa isa;
  };
  // Intel ARK (i7-10700, i9-10900X: DDR4-2933 on 2 and 4 channels), amd.com (5975WX: 8 channels of DDR4-3200;
  // 7950X: 2 channels of DDR5-5200; 5800X: 2 channels of DDR4-3200); AVX-512's rate is the measured Zen 4 one only.
  for (const Row& r : {Row{"Intel Core i7-10700", 2, 2933, serving::CpuIsa::avx2},
                       Row{"Intel Core i9-10900X", 4, 2933, serving::CpuIsa::avx2},
                       Row{"AMD Ryzen Threadripper PRO 5975WX", 8, 3200, serving::CpuIsa::avx2},
                       Row{"AMD Ryzen 9 7950X", 2, 5200, serving::CpuIsa::avx512},
                       Row{"AMD Ryzen 7 5800X", 2, 3200, serving::CpuIsa::avx2}}) {
    CAPTURE(r.cpu);
    const std::optional<io::CpuPlatform> p = io::cpu_platform(r.cpu);
    REQUIRE(p.has_value());
    CHECK(p->channels == r.channels);
    CHECK(p->mega_transfers_per_s == r.mts);
    CHECK(p->isa == r.isa);
    CHECK(*io::cpu_peak_memory_gbps(r.cpu) == doctest::Approx(r.channels * 8.0 * r.mts / 1000.0));
  }
}

TEST_CASE("the CPU table matches a row's CPU by its exact name, not a part of it") {
  // Each of these contains a table name (or is contained in one) but is another part: until 2026-12-03 the table
  // matched substrings and took the first four for the part whose name they contain.
  for (const char* near_miss :
       {"AMD Ryzen 9 7950X3D", "Intel Core i7-10700K", "Intel Core i9-10900XE",
        "AMD Ryzen Threadripper PRO 5975WX (32 cores)", "Intel Core i9-10900", "AMD Ryzen 9 7950",
        "intel core i9-10900x", "AMD Ryzen 7 5800X3D", "AMD Ryzen 7 5800"}) {
    CAPTURE(near_miss);
    CHECK_FALSE(io::cpu_platform(near_miss));
    CHECK_FALSE(io::cpu_peak_memory_gbps(near_miss));
  }
  // Every offload row the shipped file predicts names a CPU the table has by its exact name.
  std::vector<io::ServingRun> runs;
  for (io::ServingRun& r : io::load_serving_runs(io::data_root() + "/tests/validation/serving/serving_runs.yaml"))
    if (r.engine == "llama.cpp" || r.engine == "ik_llama.cpp") runs.push_back(std::move(r));
  int offload_rows = 0;
  for (const io::ServeRowResult& out : io::run_serve_validation(runs).rows) {
    if (out.family != "llama.cpp offload" || out.skipped) continue;
    CAPTURE(out.run->id);
    REQUIRE(out.run->host);
    CHECK(io::cpu_platform(out.run->host->cpu).has_value());
    ++offload_rows;
  }
  CHECK(offload_rows == 9);  // 7 until the 5800X (llama.cpp PR #12922's two rows) was in the table
}

TEST_CASE("offload rows: the host comes from the row, else from the CPU's platform table, else the row is skipped") {
  const io::ServeRowResult stated = predict(shipped_row("llamacpp_llmfit774_rtx2080_qwen3_14b_ngl32"));
  // The row's 102 GB/s on the i9-10900X's four channels (a many-channel part): 0.73 x 102, the host rule.
  CHECK(assumed(stated, "host: 74 GB/s"));
  CHECK(io::cpu_peak_memory_gbps("AMD Ryzen Threadripper PRO 5975WX") == doctest::Approx(204.8));
  CHECK(io::cpu_peak_memory_gbps("Intel Core i7-10700") == doctest::Approx(46.928));  // 2 x 8 B x 2933 MT/s
  CHECK(io::cpu_platform("AMD Ryzen 9 7950X")->isa == serving::CpuIsa::avx512);
  CHECK(io::cpu_platform("Intel Core i9-10900X")->channels == 4);
  CHECK_FALSE(io::cpu_peak_memory_gbps("Some Unknown CPU"));
  io::ServingRun r = shipped_row("ikllama_pr841_rtx4080_gptoss20b_cpumoe");
  r.host->cpu = "Some Unknown CPU";
  const io::ServeRowResult unknown = predict(r);
  CHECK(unknown.skipped);
  CHECK(unknown.skip_reason.find("Some Unknown CPU") != std::string::npos);
}

TEST_CASE("offload rows: llama.cpp PR #12922's Ryzen 7 5800X rows run on the CPU table's DDR4-3200 platform") {
  // Two channels of DDR4-3200 (51.2 GB/s) read at the host rule's client fraction: 42 GB/s, for both rows.
  const double rate =
      serving::llama_cpu_decode_fraction(serving::MemoryPlatform::client) * serving::dram_peak_gbps(2, 3200) * 1e9;
  for (const char* id :
       {"llamacpp_pr12922_rtx3070_dsv2lite_q6k_ngl0_t8", "llamacpp_pr12922_rtx3070_dsv2lite_q6k_ngl0_t4"}) {
    CAPTURE(id);
    const io::ServingRun r = shipped_row(id);
    REQUIRE(r.host);
    CHECK_FALSE(r.host->memory_bw_gbps);  // the row states no figure the validator reads
    const io::ServeRowResult out = predict(r);
    REQUIRE_FALSE(out.skipped);
    CHECK(assumed(out, "host: 42 GB/s"));
    REQUIRE(out.predicted[2]);
  }
  // -ngl 0: a decode step reads every weight from host DRAM, and the weights' CPU time is their bytes at the host
  // rate (Q6_K's ~2.4 FLOP a byte is far below 8 cores' matmul rate over 42 GB/s), so their bytes per token are
  // that time x the rate. At the 8-thread row's measured 20.13 tok/s those bytes alone need more than the 34.1 GB/s
  // peak of the two DDR4-2133 sticks the row's notes state, and less than the rated DDR4-3200 peak: the run's DIMMs
  // cannot have run at 2133 MT/s, so the notes' figure is not used.
  const io::ServingRun t8 = shipped_row("llamacpp_pr12922_rtx3070_dsv2lite_q6k_ngl0_t8");
  serving::Precision prec;
  prec.weights = *serving::parse_weight_format(t8.weights_precision);
  prec.moe_weights = *serving::parse_weight_format(t8.moe_weights_precision);
  const serving::ServingModel sm = serving::make_serving_model(t8.model, prec);
  const io::GpuProfile gpu = io::load_gpu_profile(t8.gpu);
  serving::OffloadSetup st;
  st.model = &sm;
  st.gpu = &gpu.gpu;
  serving::HostSpec spec;
  spec.name = t8.host->cpu;
  spec.dram_peak_gbps = serving::dram_peak_gbps(2, 3200);
  spec.cores = *t8.host->cores;
  st.host = serving::llama_host(spec);
  REQUIRE(st.host.memory_bw.v == doctest::Approx(rate));
  st.op_offload_min_batch = serving::kLlamaCppOpOffloadMinBatch;
  double weight_bytes = 0;
  for (const serving::OffloadItem& it : serving::offload_items(st)) {
    if (it.kv) continue;
    REQUIRE(it.host_home[1] == serving::Home::cpu);
    weight_bytes += it.t_cpu[1] * rate;
  }
  const double measured_read = *t8.decode_tokens_per_s * weight_bytes;
  CHECK(measured_read > serving::dram_peak_gbps(2, 2133) * 1e9);
  CHECK(measured_read < serving::dram_peak_gbps(2, 3200) * 1e9);
}

TEST_CASE("offload rows: the graphs-off cost follows the row's build date and the GPU's compute capability") {
  // llmfit #755: llama.cpp on a Turing RTX 2080 (cc 7.5) dated the day PR #25749 opened: graphs off, 36 host runs.
  io::ServingRun r = shipped_row("llamacpp_llmfit755_rtx2080_qwen3_30b_a3b_ncpumoe36");
  REQUIRE(r.engine_build_date);
  const io::ServeRowResult off = predict(r);
  CHECK(assumed(off, "below Ampere"));
  r.engine_build_date = "2026-07-30";  // a build after PR #25749: a graph per split
  const io::ServeRowResult on = predict(r);
  CHECK_FALSE(assumed(on, "CUDA graphs off"));
  REQUIRE(off.predicted[2]);
  REQUIRE(on.predicted[2]);
  CHECK(1 / *off.predicted[2] ==
        doctest::Approx(1 / *on.predicted[2] + 36 * serving::kGraphsOffCostPerHostRunS).scale(0));
}

TEST_CASE("offload rows: ik_llama.cpp adds host expert biases on the CPU in prefill; decode does not change") {
  // PR #829: -ot exps=CPU puts every ffn_*_exps tensor in host memory, biases included (the PR's own words).
  io::ServingRun r = shipped_row("ikllama_pr829_rtx4080_gptoss120b_exps_cpu_kv0");
  REQUIRE(r.model.moe);
  CHECK(r.model.moe->expert_bias);  // the row states it (gpt-oss's public config)
  const io::ServeRowResult with = predict(r);
  REQUIRE_FALSE(with.skipped);
  CHECK(assumed(with, "prefill bias add on the CPU"));
  r.model.moe->expert_bias = false;
  const io::ServeRowResult without = predict(r);
  CHECK_FALSE(assumed(without, "prefill bias add on the CPU"));
  // 36 blocks, each 2 x 188.7 MB over 26.2 GB/s and through the machine's measured 55.8 GB/s: ~0.76 s on a ~3.5 s
  // ubatch of 4096 tokens.
  const double extra = 4096 / *with.predicted[3] - 4096 / *without.predicted[3];
  CHECK(extra > 0.7);
  CHECK(extra < 0.8);
  CHECK(*with.predicted[2] == doctest::Approx(*without.predicted[2]).epsilon(1e-3));
  // PR #841: --cpu-moe moved the biases until that PR; a build after it keeps them on the GPU.
  io::ServingRun moe = shipped_row("ikllama_pr841_rtx4080_gptoss20b_cpumoe");
  const io::ServeRowResult before = predict(moe);
  CHECK(assumed(before, "prefill bias add on the CPU"));
  moe.engine_build_date = "2025-10-21";
  const io::ServeRowResult after = predict(moe);
  CHECK_FALSE(assumed(after, "prefill bias add on the CPU"));
  CHECK(*after.predicted[3] > *before.predicted[3] * 1.2);
}

TEST_CASE("offload rows: the machine a row names (host.machine) sets its host's DRAM rate; no name, the rule") {
  // PR #841 ran on ikawrakow's 7950X: 55.4 GB/s measured (GPT-OSS-20B CPU-only, Discussion #758) instead of the
  // rule's 0.82 x DDR5-5200.
  io::ServingRun r = shipped_row("ikllama_pr841_rtx4080_gptoss20b_cpumoe");
  REQUIRE(r.host);
  CHECK(r.host->machine == "ikawrakow-ryzen9-7950x");
  const io::ServeRowResult mine = predict(r);
  CHECK(assumed(mine, "measured on ikawrakow's Ryzen 9 7950X"));
  CHECK(assumed(mine, "host: 55 GB/s"));
  // The same row and CPU without the machine's name takes the rule: 68 GB/s, a faster decode. The source no
  // longer matters: only host.machine does.
  r.host->machine.clear();
  const io::ServeRowResult rule = predict(r);
  CHECK_FALSE(assumed(rule, "measured on"));
  CHECK(assumed(rule, "host: 68 GB/s"));
  REQUIRE(mine.predicted[2]);
  REQUIRE(rule.predicted[2]);
  CHECK(*rule.predicted[2] > *mine.predicted[2] * 1.1);
  // A name outside the table (rows built in code; the parser refuses it in a file) is an error naming the row.
  r.host->machine = "someone-elses-7950x";
  CHECK_THROWS_WITH_AS(predict(r), doctest::Contains("host.machine 'someone-elses-7950x'"), ConfigError);
}

TEST_CASE("offload rows: the host line labels the DRAM rate as the machine's measured rate or the host rule's") {
  // A row on a named machine: its DRAM rate is measured there; the matmul and PCIe rates stay the rule's.
  const io::ServeRowResult mine = predict(shipped_row("ikllama_pr841_rtx4080_gptoss20b_cpumoe"));
  CHECK(std::count(mine.assumed.begin(), mine.assumed.end(),
                   "host: 55 GB/s (measured machine rate), 2.36 TFLOP/s and PCIe 26.2 GB/s (host rule)") == 1);
  CHECK_FALSE(assumed(mine, "GB/s, 2.36 TFLOP/s, PCIe"));
  // A row on a host without a name: every rate is the rule's.
  const io::ServeRowResult rule = predict(shipped_row("llamacpp_llmfit774_rtx2080_qwen3_14b_ngl32"));
  CHECK(std::count(rule.assumed.begin(), rule.assumed.end(),
                   "host: 74 GB/s, 0.81 TFLOP/s, PCIe 12.4 GB/s (host rule)") == 1);
  CHECK_FALSE(assumed(rule, "measured"));
  // The text itself, on a host built here.
  serving::Host h;
  h.memory_bw = GBps(55.4);
  h.cpu_flops = TFlops(2.363);
  h.pcie_bw = GBps(26.18);
  CHECK(io::host_assumption(h, true) ==
        "host: 55 GB/s (measured machine rate), 2.36 TFLOP/s and PCIe 26.2 GB/s (host rule)");
  CHECK(io::host_assumption(h, false) == "host: 55 GB/s, 2.36 TFLOP/s, PCIe 26.2 GB/s (host rule)");
}

TEST_CASE("offload rows: a row that states its DRAM data rate uses it, not the CPU table's rated one") {
  // llama.cpp PR #11397 (abc-nix, 2025-02-16): "i7-10700 with 128GiB RAM (DDR4- 3867 MT/s)"; the part has two
  // channels (the CPU table). The row states the peak, 2 x 8 B x 3867 MT/s, and the host rule reads 0.82 of it.
  io::ServingRun r = shipped_row("llamacpp_pr11397_wizardlm2_8x22b_q4km_ngl33");
  REQUIRE(r.host);
  REQUIRE(r.host->memory_bw_gbps);
  CHECK(*r.host->memory_bw_gbps == doctest::Approx(2 * 8.0 * 3867 / 1000).epsilon(1e-3));
  const io::ServeRowResult stated = predict(r);
  CHECK(assumed(stated, "host: 51 GB/s"));
  // Without the stated rate the validator falls back to Intel's rated DDR4-2933 (46.9 GB/s peak, 38 GB/s read):
  // a slower CPU side, so a slower decode; prefill streams the host weights over PCIe and barely moves.
  r.host->memory_bw_gbps.reset();
  const io::ServeRowResult rated = predict(r);
  CHECK(assumed(rated, "host: 38 GB/s"));
  REQUIRE(stated.predicted[2]);
  REQUIRE(rated.predicted[2]);
  CHECK(*stated.predicted[2] > *rated.predicted[2] * 1.2);
  CHECK(*stated.predicted[3] == doctest::Approx(*rated.predicted[3]).epsilon(0.01));
}

TEST_CASE("offload rows: a GPU profile's Gen 3 x16 link takes Gen 3's measured pinned fraction, not Gen 4's") {
  // The RTX 2080 profile's host link is 15.75 GB/s (Gen 3 x16); the row states no pcie_gen, so the generation
  // comes from the rate per lane: 0.790 of the link (bandwidthTest, gearshifft PR #82), 12.4 GB/s, not 0.831's 13.1.
  const io::ServeRowResult out = predict(shipped_row("llamacpp_llmfit774_rtx2080_qwen3_14b_ngl32"));
  CHECK(assumed(out, "PCIe 12.4 GB/s (host rule)"));
  CHECK_FALSE(assumed(out, "PCIe 13.1 GB/s"));
}

TEST_CASE("offload rows: a unified-memory GPU is skipped, not charged a PCIe link it does not have") {
  const io::ServingRun r = shipped_row("llamacpp_llmfit774_rtx2080_qwen3_14b_ngl32");
  io::GpuProfile gpu = io::load_gpu_profile(r.gpu);
  gpu.gpu.unified_memory = true;
  gpu.gpu.host_link_bw = BytesPerSec(0);
  io::ServeRowResult out;
  out.run = &r;
  io::predict_llama_offload_row(r, gpu, &out);
  CHECK(out.skipped);
  CHECK(out.skip_reason == "unified-memory GPU: the PCIe offload model does not apply");
  CHECK_FALSE(predict(r).skipped);
}
