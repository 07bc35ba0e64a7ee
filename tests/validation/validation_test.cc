// The validation tier: throughput and memory error against the published runs in published_runs.yaml (a copy of
// the shared published-runs file). Two kinds of bound:
//  - targets: issue 2's acceptance (Korthikanti <= 5%, Megatron-based <= 12%, all dense <= 20%, memory <= 12%)
//    and issue 3's (MoE rows <= 20%),
//    printed with whether they are met; the model does not meet them yet (see the issue notes);
//  - guards: the errors measured when this test was last changed, plus a small margin, asserted so that a model
//    change that makes accuracy worse fails here. Tighten a guard whenever the model improves; never loosen one
//    without saying why in the commit.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>

#include "modeler/io/validation_record_io.h"
#include "modeler/io/validation_run.h"

using namespace shardplan;

namespace {

const std::vector<io::PublishedRun>& runs() {
  static const std::vector<io::PublishedRun> all = io::load_published_runs(std::getenv("SHARDPLAN_RUNS"));
  return all;
}

/// design.md's rule: a null plan field takes the framework's default where it has one (the source ran it), else
/// the fastest setting that fits.
const io::ValidationReport& report() {
  static const io::ValidationReport rep = io::run_validation(runs());
  return rep;
}

/// `validate --fastest-fit`: a null field the run's framework sets by default takes the fastest setting that fits.
const io::ValidationReport& report_fastest_fit() {
  static const io::ValidationReport rep = io::run_validation(runs(), nullptr, true);
  return rep;
}

/// MAPE over the evaluated runs that `pick` selects.
io::GroupStats group(bool (*pick)(const io::PublishedRun&)) {
  io::GroupStats g;
  double sum = 0;
  for (const io::RunResult& r : report().results) {
    if (r.skipped || !pick(*r.run)) continue;
    sum += std::abs(r.error_pct);
    ++g.runs;
  }
  g.mape = g.runs ? sum / g.runs : 0;
  return g;
}

bool korthikanti(const io::PublishedRun& r) { return r.source.rfind("Korthikanti", 0) == 0; }
bool megatron_based(const io::PublishedRun& r) {
  return !r.moe && (r.framework == "megatron-lm" || r.framework == "nemo");
}
bool dense(const io::PublishedRun& r) { return !r.moe; }
bool moe(const io::PublishedRun& r) { return r.moe; }

}  // namespace

TEST_CASE("per-source and per-framework errors (printed for the record)") {
  for (const auto& [name, g] : report().by_source)
    std::printf("validation: source %-60s %3d runs %6.1f%%\n", name.c_str(), g.runs, g.mape);
  for (const auto& [name, g] : report().by_framework)
    std::printf("validation: framework %-57s %3d runs %6.1f%%\n", name.c_str(), g.runs, g.mape);
  CHECK(!report().by_source.empty());
}

TEST_CASE("every published run is evaluated, dense and MoE") {
  int evaluated = 0;
  for (const io::RunResult& r : report().results) {
    if (!r.skipped)
      ++evaluated;
    else
      MESSAGE(r.run->id << " skipped: " << r.skip_reason);
  }
  CHECK(evaluated == static_cast<int>(report().results.size()));
}

void report_target(const char* what, const io::GroupStats& g, double target, double guard) {
  std::printf("validation: %-16s %5.1f%% over %3d runs (target %4.1f%%: %s; regression guard %4.1f%%)\n", what, g.mape,
              g.runs, target, g.mape <= target ? "met" : "NOT met", guard);
}

TEST_CASE("throughput MAPE per group") {
  const io::GroupStats k = group(korthikanti), m = group(megatron_based), d = group(dense);
  // The MoE guard rose from 40.0 twice, each time with a fix the physics asked for: all-to-all stopped paying a
  // ring's n-1 latencies (collectives.cc; the NVLink-domain GB200/B200 rows lost an accidental slowdown, the H100
  // multi-node rows improved 53.6 -> 44.8 and 37.7 -> 18.5), then the memory model learned that Transformer
  // Engine keeps fp8 GEMM inputs and NeMo's recipes keep bf16 gradients, so more open plans fit without
  // recompute and run at the model's (still optimistic) MoE speed: 46.9%. Measured GEMM efficiency vs size
  // (OpenXLA's sm_90/sm_100 tables) then slowed the small expert GEMMs: 36.9%; casting every token-expert
  // pair's input to fp8 (TE GroupedLinear, counted once per dense layer's ffn before): 33.2%; the dispatcher's
  // sort of received pairs by local expert and back (Megatron-Core "permutation 2"): 25.3%. The guard then rose
  // with a correction the sources asked for: Megatron-Bridge's MoE providers set moe_permute_fusion, whose TE
  // kernels read each token once and write its top-k copies (and the reverse), not every pair's row twice as the
  // unfused index_select/scatter_add do: 28.8%.
  // Measured GEMM, attention and scale-up collective tables for every GPU (hwprofiles/tables/, one method: AIC's
  // median burst latency; the 8- and 4-bit GEMMs without the input cast they timed, which layer_cost.cc counts
  // as its own kernel): Megatron-based 12.7 -> 11.2%, all dense 15.9 -> 13.6%, MoE 28.8 -> 16.8% (the grid's
  // small-expert-GEMM and Blackwell attention rates). Korthikanti moved 3.6 -> 4.0% (A100): the measured A100
  // GEMMs run at ~0.80 of peak in AIC's short CUDA-graph bursts at boost clock, where the table they replace held
  // a >= 3 s sustained torch.matmul at 0.737 (the A100 sustains ~1305 of its 1410 MHz at its power limit,
  // NVIDIA HPL figure); AIC has no sustained measurement of the A100 to use instead.
  // Issue 10's recipe-aware validation then ran the features the sources state or their recipes turn on (the
  // Megatron-LM README's --tp-comm-overlap; NeMo's and Megatron-Bridge's TP overlap for tp > 1 and their fp8
  // recipes; torchtitan's torch.compile and AsyncTP) and each recipe's quantization kernels (cast, amax,
  // transposed copies of inputs, gradients and weights): Megatron-based 11.2 -> 13.0%, all dense 13.6 -> 15.1%,
  // MoE 16.8 -> 17.9%. The guards rise for the reason the issue names: exposed TP communication that the runs
  // did not have had been cancelling optimistic H100 rates (H100 bias +20%; the Megatron-LM README rows go from
  // -1..-12% to +6..+24% once their stated overlap is on).
  // Issue 13's launch costs (moe_host.h: the kernels Megatron-Core 0.14 and TE 2.7 GroupedLinear launch per MoE
  // layer, one GEMM and quantization per local expert, at measured per-kernel times), the DeepSeek-V3 H100 row's
  // stated DeepEP + combined 1F1B recipe, and the SMs overlapped DeepEP transfers hold: MoE 17.9 -> 15.8%.
  // The router's logits GEMM in 16 bits under fp8 recipes (Megatron-Core's router is no TE module; its
  // te_general_gemm runs on the bf16 input and weight): MoE 15.8 -> 16.0%, a sourced correction that moves away
  // (the measured fp8 tables run this narrow n = experts GEMM slower than bf16's at its size).
  // torchtitan's eager RoPE (fp32 complex multiply) and repeat_kv copies (models/llama/model.py @9dec370): all
  // dense 14.8 -> 14.7%, the torchtitan rows only.
  // Weight gradients into fp32 main_grad (gradient_accumulation_fusion, TE v2.7 GroupedLinear): MoE 16.0 -> 15.9%
  // (DeepSeek-V3 on B200 only; no dense row moves).
  // TE v2.7 current scaling's 4 GPU operations per expert split (memset, amax, scale, cast; moe_host.cc), of
  // which 2 were counted: MoE 15.9 -> 13.6% (every MoE row slower; no dense row moves). Then the fused
  // permutation's backward as TE v2.7 runs it (each pass's backward is the other pass: the forward's bytes, not
  // twice) and the fused router's bytes (top-k, aux-loss scores and loss: 30 per logit forward, 29 backward):
  // MoE 13.6 -> 16.9%, a sourced correction that moves away from the target (no dense row moves).
  // A null pipeline micro-batch takes torchtitan's default, pp micro-batches per rank's batch (the source ran it;
  // torchtitan@9dec370 pipelining_utils.py), not the fastest that fits: all dense 14.7 -> 14.3% (the two 405B
  // pipeline-schedule rows +54.1 -> +11.8% and +32.9 -> +14.1%; no other row moves).
  // The same 4 operations per quantization for every current-scaling linear, dense ones included (memset and the
  // 1x1 scale kernel at the GPU's fixed kernel time; precision_recipe.cc): MoE 16.9 -> 16.4%, Blackwell bias
  // +5.1 -> +4.6%, every tensorwise fp8 row 0.1-1.4 points slower. Then no transposed fp8 copy on Blackwell
  // (Transformer Engine v2.7 quantizer.cpp: non-TN fp8 GEMMs from compute capability 10.0): every B200/GB200 fp8
  // row 0.2-1.5 points faster, MoE 16.4 -> 17.1%, Blackwell bias +4.6 -> +5.5% (a sourced overcharge removed).
  // The two GB200 Llama fp8 rows run their recipe's CPU activation offload without recompute (Megatron-Bridge
  // v0.1.0rc3 scripts/performance/configs, cpu_offloading_num_layers 40 and 95), not the full recompute the
  // fastest fitting completion took: -27.4 -> -4.4% and -26.0 -> -2.6%; Megatron-based 12.0 -> 11.0%, all dense
  // 14.3 -> 13.9% (no other row moves).
  // TE v2.7 GroupedLinear's per-expert cuBLAS GEMMs each at the measured latency of its shape (the kernel overhead
  // the GEMM table was inverted with, once per expert, not once per grouped linear; mlp_cost.cc
  // grouped_gemm_time): every MoE row 0.1-3.8 points slower, MoE 17.1 -> 15.8%, no dense row moves.
  // PyTorch's ring-loop copies over torchtitan's repeated K/V heads, fp32 dK/dV accumulation and the exposed last
  // dK/dV transfer (_attention.py), AsyncTP's unpaired dX reduce-scatters (micro_pipeline_tp) and no backward
  // re-gather where the gathered inputs are saved: all dense 14.3 -> 13.9% (torchtitan rows only). The three
  // together (merged 2026-12-02): all dense 14.3 -> 13.5%.
  // Issue 13, ninth session: the DeepSeek-V3 rows' fp32 router backward (Megatron-Bridge's provider sets
  // moe_router_dtype fp32; RouterGatingLinearFunction's TF32 dgrad/wgrad and casts, mlp_cost.cc) and their
  // recipe's stated recompute modules (run_script.py: mla_up_proj, + mlp on H100): MoE 15.8 -> 15.3%, the
  // DeepSeek-V3 rows 1.0-1.7 points slower; no dense row moves.
  // Compiled PyTorch CP waits every collective at issue (framework.h cp_comm_waited_at_issue): all dense 13.5 ->
  // 13.1% (the six torchtitan CP 2-8 rows only).
  // The DeepSeek-V3 rows with the recipes' MTP module and pipeline layouts (plan.mtp_layers, pipeline_layout):
  // MoE 15.3 -> 18.8% (B200 +14.7 -> +40.3, GB200 +16.5 -> +21.8, H100 +18.7 -> +18.6; docs/moe.md); dense unchanged.
  // Qwen3's QK-norm (model.qk_norm: per_head; two TE RMSNorm passes over the rank's q and k, twice in backward, and
  // their saved inputs, layer_parts.cc qk_norm_time, memory_model.cc): MoE 15.3 -> 14.5%, the six Qwen3 rows
  // 0.7-1.6 points slower; no dense row moves.
  // Each layout rank's own MoE layers counted by index (Sharding::moe_layer_share; DeepSeek-V3's dense layers 0-2
  // sit on the first stage, so the other ranks hold MoE layers only, not the 58/61 mean): MoE 18.8 -> 18.03% (B200
  // +40.3 -> +37.7, GB200 +21.8 -> +20.0, H100 +18.6 -> +16.5; docs/moe.md "Twelfth round"); dense unchanged.
  // All three: MoE 17.2% (DeepSeek-V3 24.7, Qwen3-235B 12.5, Qwen3-30B 14.3).
  // MLA's attention backward at (3 qk + 2 v) / (qk + v) of the forward (attention_cost.cc) and TEGroupedMLP's fp8
  // row padding of dropless splits (moe_host.h fp8_pads_expert_rows): MoE 17.2 -> 16.8% (B200 +37.6 -> +37.2,
  // GB200 +20.0 -> +19.6, H100 +16.5 -> +14.1; docs/moe.md "Fourteenth round"); dense unchanged.
  constexpr double kGuardKorthikanti = 5.0, kGuardMegatron = 11.5, kGuardDense = 13.6, kGuardMoe = 16.9;
  const io::GroupStats e = group(moe);
  report_target("Korthikanti", k, 5.0, kGuardKorthikanti);
  report_target("Megatron-based", m, 12.0, kGuardMegatron);
  report_target("all dense", d, 20.0, kGuardDense);
  report_target("MoE (issue 3)", e, 20.0, kGuardMoe);
  CHECK(k.runs == 8);
  CHECK(k.mape <= kGuardKorthikanti);
  CHECK(m.mape <= kGuardMegatron);
  CHECK(d.mape <= kGuardDense);
  CHECK(e.runs == 9);
  CHECK(e.mape <= kGuardMoe);
}

TEST_CASE("memory MAPE on runs with a measured peak") {
  const io::GroupStats& mem = report().memory;
  // 11.3% until FSDP's sharded fp32 master + gathered bf16 copy, pipelining's deferred fp32 gradients, torchao's
  // uncached fp8 weights, the interleaved warm-up cap and DTensor's loss_parallel peak were modelled: 7.8%; then
  // op-level selective checkpointing's re-materialised layer: 7.2%.
  // The measured tables then changed which open plans are fastest-that-fit: 6.5%. torchao's fp8 FSDP all-gather
  // keeps the gathered copy in fp8 (1 byte, not bf16; torchtitan docs/float8.md): 7.1% here, where the 405B
  // pipeline rows take mbs 1 (fastest that fits), and 6.0 -> 5.1% with --framework-defaults (their pp
  // micro-batches), below. PyTorch FSDP's root module (embedding, final norm, LM head) stays gathered through the
  // step, the final norm's and the LM head's inputs are held until the head's backward, DTensor TP saves gathered
  // linear inputs and eager RMSNorm its fp32 upcast (memory_model.cc): 7.1 -> 5.1% (throughput unchanged).
  // torchtitan's pipeline micro-batch default (local batch / pp) as the completion of a null micro-batch: the
  // 405B pipeline rows' memory -35.4 -> -7.0% and -10.9 -> +5.6%: 5.1 -> 3.3%. The all-gather K/V exchange's
  // gathered buffer (cp x the local K/V, one layer's at a time): the six CP rows, 3.3 -> 3.0%.
  constexpr double kGuardMemory = 3.5;
  report_target("memory", mem, 12.0, kGuardMemory);
  CHECK(mem.runs >= 12);
  CHECK(mem.mape <= kGuardMemory);
}

TEST_CASE("torchtitan's pipelined rows run its pp micro-batches; --fastest-fit the old completion") {
  // torchtitan 9dec370 splits each rank's batch into pp micro-batches when none is set (pipelining_utils.py
  // build_pipeline_schedule); the 405B PP rows leave it open. History of this guard (it held the
  // --framework-defaults figures until they became the default): 19.4% with the measured tables; 25.4% once the
  // rows ran what the benchmark states (torch.compile, AsyncTP, torchao's tensorwise fp8 kernels and fp8 FSDP
  // gathers; the AsyncTP row predicts ~30% faster than plain 2D where the measured gain is 5.7%); 25.0 -> 24.1%
  // with torchtitan's eager RoPE and repeat_kv copies (model.py @9dec370); 24.1 -> 21.1% with PyTorch's CP ring
  // copies and exposed dK/dV transfer and AsyncTP's unpaired dX reduce-scatters (docs/validation.md); 21.1 ->
  // 20.5% with torchtitan's default all-gather rotater (context_parallel_rotate_method, the 405B CP 4/8 rows);
  // 20.5 -> 17.5% with the compiled CP loop's collectives waited at issue (torch.compile traces it, fullgraph).
  // 17.5 -> 18.3% with torchao's fp8 tensor-parallel all-gathers and amax all-reduces (the tp 8 rows; faster).
  constexpr double kGuardTorchtitan = 18.8;
  const io::ValidationReport& rep = report();
  report_target("torchtitan", rep.by_framework.at("torchtitan"), 10.0, kGuardTorchtitan);
  CHECK(rep.by_framework.at("torchtitan").mape <= kGuardTorchtitan);
  int defaulted = 0;
  for (const io::RunResult& r : rep.results)
    for (const std::string& c : r.resolution.chosen) defaulted += c.find("pp micro-batches)") != std::string::npos;
  CHECK(defaulted == 6);  // the six torchtitan rows with pp > 1 and a null micro-batch
  // The fastest-that-fits completion (mbs 1 and 2 on the 405B schedule rows) is further off, in throughput
  // (27.5% when set) and in memory (5.1%): a guard that the default is the better completion.
  const io::ValidationReport& fast = report_fastest_fit();
  CHECK(rep.by_framework.at("torchtitan").mape < fast.by_framework.at("torchtitan").mape);
  CHECK(rep.memory.mape < fast.memory.mape);
  int fastest = 0;
  for (const io::RunResult& r : fast.results)
    for (const std::string& c : r.resolution.chosen) fastest += c.find("pp micro-batches)") != std::string::npos;
  CHECK(fastest == 0);
}

TEST_CASE("issue 10 targets, per GPU family and precision (printed; guards on what is measured now)") {
  // Targets: all dense <= 10%, Megatron-based <= 8%, Korthikanti <= 4%, fp8 rows <= 10%, |bias| <= 5% per GPU
  // family (A100, H100, Blackwell), memory <= 6%. Guards: the figures when this test was set, plus 0.5.
  std::map<std::string, io::GroupStats> family;
  io::GroupStats fp8;
  for (const io::RunResult& r : report().results) {
    if (r.skipped) continue;
    const std::string gen = gpu_generation(r.run->gpu);
    io::GroupStats* gs[] = {&family[gen],
                            r.run->precision_name == "bf16" || r.run->precision_name == "fp16" ? nullptr : &fp8};
    for (io::GroupStats* g : gs) {
      if (!g) continue;
      g->mape = (g->mape * g->runs + std::abs(r.error_pct)) / (g->runs + 1);
      g->bias = (g->bias * g->runs + r.error_pct) / (g->runs + 1);
      ++g->runs;
    }
  }
  // Blackwell 16.0 -> 17.2 with issue 13: its 11 rows hold 6 MoE rows, which moved when the MoE memory terms
  // followed Megatron-Core (no fc2 output saved) and no longer fall back to full recompute (docs/moe.md); its
  // dense rows are unchanged.
  // H100 21.0 -> 20.8 and fp8 19.4 -> 19.3 with torchtitan's eager RoPE and repeat_kv copies (torchtitan rows only).
  // H100 20.8 -> 20.0 and fp8 19.3 -> 18.0 with torchtitan's pipeline micro-batch default (two 405B fp8 H100 rows).
  // Blackwell 15.2 -> 11.0 (bias +5.5 -> +9.7: the two pessimistic rows no longer cancel the optimistic MoE rows)
  // and fp8 18.2 -> 17.2 with the GB200 rows' recipe CPU offload (above).
  // H100 20.1 -> 19.4 and fp8 18.2 -> 17.0 with PyTorch's CP ring copies and AsyncTP's unpaired reduce-scatters.
  // Merged with the GB200 offload rows and the per-expert GEMMs: H100 19.4, Blackwell 10.1 (bias +8.8), fp8 15.7.
  // H100 19.4 -> 19.2 and fp8 15.7 -> 15.5 with torchtitan's all-gather rotater (the 405B CP 4/8 rows).
  // Transformer Engine 1.x's per-linear casts, fp8 SP all-gathers and per-micro-batch amax all-reduces for the
  // NeMo 24.07 rows (precision_recipe.h; docs/validation.md): fp8 15.7 -> 15.7 (bias +14.8 -> +15.0), H100 19.4
  // unchanged; the rows move -1.0..+2.4 points, no other row moves. Guards unchanged (nothing better).
  // Blackwell 10.1 -> 9.8 (bias +8.8 -> +8.5) with the DeepSeek-V3 rows' fp32 router and recompute modules.
  // H100 19.2 -> 18.5 and fp8 15.4 -> 14.2 with the compiled CP loop's collectives exposed (torchtitan CP rows).
  // Blackwell 9.8 -> 12.6, fp8 14.2 -> 14.9 with the DeepSeek-V3 recipes' MTP module and pipeline layouts;
  // 12.6 -> 12.1 and 14.9 -> 14.7 with Qwen3's QK-norm.
  // Blackwell 12.1 -> 11.7, fp8 14.7 -> 14.6 with each layout rank's own MoE share (Sharding::moe_layer_share).
  // fp8 14.6 -> 15.0 (bias +13.8 -> +14.2), H100 18.5 -> 18.7 with the fp8 tensor-parallel all-gathers of
  // Transformer Engine 2.x per-tensor recipes and torchao, and current scaling's amax all-reduces over tp
  // (precision_recipe.h; docs/validation.md "Gathers in fp8"): sourced, and away from the measurements.
  // Blackwell 11.7 -> 11.6, fp8 15.0 -> 14.9 with MLA's attention backward FLOPs and the fp8 row padding
  // (docs/moe.md, fourteenth round).
  const std::map<std::string, double> guard_mape = {{"A100", 7.2}, {"H100", 19.0}, {"Blackwell", 11.7}};
  for (const auto& [gen, g] : family) {
    const std::string generation = gen;  // clang 14 cannot capture a structured binding (CAPTURE's lambda)
    std::printf("validation: %-10s %5.1f%% bias %+5.1f%% over %3d runs (target |bias| 5.0%%: %s)\n", gen.c_str(),
                g.mape, g.bias, g.runs, std::abs(g.bias) <= 5.0 ? "met" : "NOT met");
    CAPTURE(generation);
    if (guard_mape.count(gen)) CHECK(g.mape <= guard_mape.at(gen));
  }
  report_target("fp8 rows", fp8, 10.0, 15.0);
  CHECK(fp8.mape <= 15.0);
}

TEST_CASE("torchtitan's context-parallel and AsyncTP rows (issue 10), each guarded") {
  // Errors when set, plus 0.5: the CP 2-8 rows after PyTorch's ring-loop copies and exposed last dK/dV transfer
  // (before: +9.3 +46.8 +53.7 / +31.8 +32.1 +52.5), the 70B 2D rows after AsyncTP's unpaired dX reduce-scatters
  // and no re-gather of saved inputs (before: -0.3 / +12.7). The CP 4/8 and AsyncTP rows are still off for
  // reasons not modelled (docs/validation.md, "The torchtitan rows"). With torchtitan's default all-gather rotater
  // (one K/V all-gather per pass behind the first ring step only; dK/dV by the ring) the 405B CP 4/8 rows, whose
  // CP ranks sit in different nodes, move +20.7 -> +18.9 and +38.9 -> +30.0; the 8B rows' NVLink gathers hide.
  // Compiled (torch.compile traces the CP loop; each collective waited at issue, none behind a kernel): 8B
  // +5.8 / +42.0 / +48.6 -> +4.1 / +38.1 / +43.6, 405B +20.9 / +18.9 / +30.0 -> +11.4 / +3.2 / +12.5.
  // torchao's fp8 tensor-parallel all-gathers (Float8ColwiseParallel; precision_recipe.h): 70B 2D +0.5 -> +7.7,
  // AsyncTP +12.2 -> +15.2 (the AsyncTP gain over plain 2D predicted 13% where 18% before; measured 5.7%), 405B
  // CP 2 / 4 / 8 +11.4 / +3.2 / +12.5 -> +12.0 / +3.6 / +12.8.
  const std::map<std::string, double> guard = {
      {"torchtitan_h100_t2_8b_g8_cp2_s65536", 4.6},      {"torchtitan_h100_t2_8b_g8_cp4_s131072", 38.6},
      {"torchtitan_h100_t2_8b_g8_cp8_s262144", 44.1},    {"torchtitan_h100_t6_405b_g512_cp2_s65536", 12.5},
      {"torchtitan_h100_t6_405b_g512_cp4_s131072", 4.1}, {"torchtitan_h100_t6_405b_g512_cp8_s262144", 13.3},
      {"torchtitan_h100_t4_70b_g256_2d", 8.2},           {"torchtitan_h100_t4_70b_g256_2d_asynctp", 15.7}};
  int found = 0;
  for (const io::RunResult& r : report().results) {
    const auto it = guard.find(r.run->id);
    if (it == guard.end()) continue;
    ++found;
    CAPTURE(r.run->id);
    CHECK(std::abs(r.error_pct) <= it->second);
  }
  CHECK(found == static_cast<int>(guard.size()));
}

TEST_CASE("the shipped validation record is what validate produces now") {
  // predict and search quote hwprofiles/validation_record.yaml; when the model or its tables change, regenerate it
  // with the command in the file (io::kRecordCommand).
  const std::optional<ValidationRecord> shipped = io::load_shipped_record();
  REQUIRE(shipped.has_value());
  const ValidationRecord fresh = io::record_from_report(report(), "tests/validation/published_runs.yaml");
  INFO("regenerate with: ", io::kRecordCommand);
  REQUIRE(shipped->groups.size() == fresh.groups.size());
  for (size_t i = 0; i < fresh.groups.size(); ++i) {
    const RecordGroup &a = shipped->groups[i], &b = fresh.groups[i];
    CAPTURE(b.generation);
    CAPTURE(b.framework);
    CHECK(a.generation == b.generation);
    CHECK(a.framework == b.framework);
    CHECK(a.runs == b.runs);
    CHECK(std::fabs(a.mape_pct - b.mape_pct) < 0.051);
    CHECK(std::fabs(a.bias_pct - b.bias_pct) < 0.051);
  }
}

TEST_CASE("Megatron-LM rows: --tp-comm-overlap states sequence parallelism; the r0.8.0 micro-batch stays open") {
  // megatron/training/arguments.py@core_r0.8.0 validate_args asserts sequence_parallel whenever tp_comm_overlap is
  // set, before it turns SP off at tp 1: a Megatron-LM row that states the overlap at tp > 1 states SP on too.
  int overlapped = 0;
  for (const io::PublishedRun& r : runs()) {
    if (r.framework != "megatron-lm" || !r.plan.tp_comm_overlap.value_or(false) || r.plan.plan.tp <= 1) continue;
    ++overlapped;
    CAPTURE(r.id);
    CHECK(r.plan.sequence_parallel.value_or(false));
  }
  CHECK(overlapped >= 8);  // the Megatron-Core r0.8.0 weak-scaling rows at tp 2..8
  // The README (core_r0.8.0 and later), its table image and the repository's scripts at that tag state no
  // micro-batch or recompute for these runs (docs/h100-gap.md): the point is the fastest completion and the
  // bracket reaches the slower ones, at least 10 points below for the four single-stage rows (+45 .. +18 now).
  int open = 0;
  for (const io::RunResult& r : report().results) {
    if (r.run->id.rfind("mcore080_h100_weak_", 0) != 0) continue;
    CAPTURE(r.run->id);
    CHECK(!r.run->plan.micro_batch);
    CHECK(r.best_error_pct == doctest::Approx(r.error_pct).epsilon(1e-6));
    if (r.run->plan.plan.pp == 1) {
      ++open;
      CHECK(r.worst_error_pct < r.best_error_pct - 10.0);
    }
  }
  CHECK(open == 4);
}
