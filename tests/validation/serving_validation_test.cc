// Validation tier for serving: the shipped serving-runs file predicted as `serve validate` does, with guards at
// the errors measured when this test was written (they fail if the model gets worse), and the offload check over
// every offload row of the file.
#include "modeler/io/serving_validation.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <string>

#include "modeler/io/serving_host_io.h"
#include "modeler/io/system_io.h"
#include "modeler/serving/offload.h"

using namespace shardplan;

namespace {
std::string runs_path() {
  const char* p = std::getenv("SHARDPLAN_SERVING_RUNS");
  return p ? p : "tests/validation/serving/serving_runs.yaml";
}
}  // namespace

TEST_CASE("serve validate on the shipped serving runs: errors at or below the measured figures") {
  const auto runs = io::load_serving_runs(runs_path());
  REQUIRE(runs.size() == 1393);
  const io::ServeValidationReport rep = io::run_serve_validation(runs);
  const auto& o = rep.overall;
  MESSAGE("TPOT MAPE " << o[1].mape << "% over " << o[1].runs << "; TTFT MAPE " << o[0].mape << "% over " << o[0].runs
                       << "; decode MAPE " << o[2].mape << "% over " << o[2].runs);
  // Measured at commit time (serve validate --runs tests/validation/serving/serving_runs.yaml), with the
  // AIConfigurator rows simulated as their closed-loop benchmark ran (closed_loop.h), decode attention at the
  // measured rate (decode_attention_table.cc), decode-sized MoE layers at the measured MoE-layer rate
  // (moe_table.cc), disaggregated runs on whole nodes, aggregated rows run on concurrency / max_batch workers and
  // the generator-deployed rows with AIConfigurator's token budgets (serving_validation.cc), and the llama.cpp
  // offload rows evaluated from their flags: TPOT 21.8% over 1299, TTFT 58.9% over 1305 (135.2% before the
  // worker count), decode 38.0% over 16 (llama.cpp full-GPU 14.4% over 9, offload 68.3% over 7; 69.9% with
  // the host rule, below).
  // Prefill-sized GEMMs at AIConfigurator's measured rate per GPU and format (prefill_gemm_table.cc; the
  // profiles' curve ran Hopper fp8 at ~0.76 of peak where the engines' kernels measure 0.58-0.62): TPOT 21.8% ->
  // 21.1%, TTFT 59.0% -> 60.0% (median -53% -> -50%; the SGLang Llama-3.1-8B H200 rows, already over-predicted,
  // +105% -> +146% median), the TRT-LLM static-batch throughput rows 32.1% -> 23.4% over 21. MoE layers beyond
  // 16 rows per expert at the measured FLOP rate (moe_table.cc, moe_layer_flop_rate): TPOT 21.1% -> 21.0%, TTFT
  // 60.0% -> 58.4% (median -50% -> -45%; Qwen3-235B's prefill had run 2.6x faster than the measured layer).
  // TP all-reduces inside a node at the engines' measured custom all-reduce latency (allreduce_table.cc; the
  // collective model charged ~20 us for a 64 KiB all-reduce over 8 GPUs where the kernels take ~5): TPOT 21.0% ->
  // 21.5% (median -5.7% -> -9.4%). DeepSeek-V3 at tp 8 comes right (TRT-LLM +22.2% -> -2.8% median over 130,
  // SGLang +12.0% -> -2.4% over 65), the dense models at tp 4-8 turn fast (TRT-LLM Llama-3.1-8B tp 8 -1.0% ->
  // -18.6%, vLLM Qwen3-32B tp 8 -7.3% -> -20.6%): the excess had been standing in for a per-step cost the dense
  // steps still lack (docs/serving.md). A sourced correction that moves the total away from the target.
  // Three small kernels per block (the two residual-add RMSNorms and the gated activation) and three per step at
  // the measured floor of a kernel under CUDA-graph replay (decode_gemm_table.cc, 2.9 us on Hopper), where one
  // 4 us [U] overhead per block stood for them: TPOT 21.5% -> 20.8% (trtllm 17.1 -> 16.4, sglang 25.3 -> 24.9,
  // vllm 32.7 -> 31.6), decode 32.3% -> 31.1% (llama.cpp full-GPU 14.4% -> 12.0%), throughput 20.0% -> 19.3%.
  // The engine's own small kernels (engine_step.cc): vLLM and SGLang launch RoPE and the KV-cache write as
  // kernels of their own (two more floors per non-MLA block), TRT-LLM inside its attention op: TPOT 20.8% ->
  // 20.5% (sglang 24.9 -> 24.4, vllm 31.6 -> 30.4, trtllm 16.4 unchanged).
  // NVL72 tp 8 all-reduces (two 4-GPU trays, one NVLink domain) at the same-generation HGX part's measured custom
  // all-reduce latency (allreduce_table.cc) instead of the collective model's latency-bound ring: TPOT 20.5% ->
  // 19.2% (trtllm 16.4 -> 14.2, disaggregated 25.5 -> 13.8; sglang 24.4 -> 24.1, disaggregated 17.3 -> 16.3).
  // Decode GEMMs of 17-127 rows at AIConfigurator's measured m = 17..112 rows (decode_gemm_table.cc) instead of
  // the m <= 16 curve: TPOT 19.2% -> 18.9% (trtllm 14.2 -> 13.8, sglang 24.1 -> 24.0, vllm 30.4 -> 30.2;
  // H100 10.8 -> 10.2, B200/GB200/GB300 +0.1 each), TTFT 58.6% unchanged.
  // SGLang's --kv-cache-dtype auto (a bf16 cache) on the SGLang sweeps the generator did not deploy, where an fp8
  // cache had been assumed (aic_quantised_kv_bytes, aic_benchmark.h): TPOT 18.9% -> 18.4% (sglang 24.0 -> 22.2;
  // Llama-3.1-8B H200 45.5% -> 31.9% over 46, Qwen3-235B-A22B-FP8 H200 11.9% -> 9.6% over 24), TTFT 58.6% ->
  // 58.7% (the Llama-3.1-8B rows, already over-predicted at +153% median, 162.4% -> 165.2%): a sourced engine
  // default that moves TTFT slightly away; the guard was loosened for it, not fitted.
  // MoE decode layers per rows per touched expert (moe_table.cc, touched experts counted by replaying the
  // collectors' balanced routing): TPOT 18.9% -> 18.3% alone (trtllm 13.8 -> 13.4, vllm 30.2 -> 27.5, sglang 24.0 ->
  // 24.1), TTFT 58.6% -> 59.1% (vllm 57.3 -> 61.8, below). Both together: TPOT 17.8%, TTFT 59.2%.
  // Qwen3's QK-norm (model_desc.h QkNorm, inferred from the Qwen3 configs; engine_step.cc qk_norm_kernels and its
  // bytes in step_time.cc): TPOT 18.4% -> 18.1% (vllm 30.2 -> 28.8, trtllm 13.8 -> 13.7, sglang 22.2 -> 22.1),
  // TTFT 58.7% -> 58.8% (vLLM's over-predicted Qwen3-235B-A22B-FP8 H200 prefills 82.4% -> 84.3% over 51: a
  // sourced kernel list that moves them away; loosened for it, not fitted).
  // All four together: TPOT 17.6%, TTFT 59.4%.
  // A stated fp8 on a block-scaled checkpoint (the DeepSeek-V3 and Qwen3-235B-A22B-FP8 configs' weight_block_size
  // [128, 128]) runs fp8_block kernels, as the engines load it (formats.h checkpoint_kernel_format): TPOT 17.6% ->
  // 18.5% (trtllm 13.3 -> 14.1, disaggregated 12.1 -> 15.0; vllm 26.3 -> 29.0; sglang 22.4 -> 22.6), TTFT 59.4% ->
  // 58.4% (vllm 62.5 -> 58.2). The measured MoE-layer table's fp8_block layers are faster than its per-tensor fp8
  // ones, so the already fast vLLM Qwen3-235B-A22B-FP8 H200 decodes (median -29.7% -> -43.0% over 51) and the
  // TRT-LLM DeepSeek-V3 H200 ones (-0.3% -> -10.8% over 55) get faster: the kernels the engines run, shipped
  // whatever the direction; the guards moved to the measured figures.
  CHECK(o[1].runs >= 1290);
  CHECK(o[1].mape <= 18.6);
  // The disaggregated rows' KV transfer (kv_transfer.h: the prompt's cache over the decode GPUs' links, after the
  // prefill step): TTFT 58.4% -> 58.3% (trtllm disaggregated 80.7 -> 79.7, sglang disaggregated 70.5 -> 70.2).
  CHECK(o[0].runs >= 1300);
  CHECK(o[0].mape <= 58.3);
  const auto& dc = rep.by_family.at("datacenter");
  CHECK(dc[4].runs >= 21);
  CHECK(dc[4].mape <= 19.1);  // 23.4% with the prefill GEMMs alone, 19.5% with the MoE FLOP rate, 20.0% with
                              // the measured all-reduce, 19.3% with the small kernels, 19.0% with the
                              // measured decode GEMMs of 17-127 rows
  CHECK(o[2].runs >= 16);
  // 31.1% -> 20.3% over 19 with the ik_llama.cpp offload rows' hosts at their machines' measured CPU decode rate
  // (serving::machine_decode_run, below). 20.0% -> 22.7% with PR #11397's stated DDR4-3867 (below).
  // 22.5% over 19 -> 25.3% over 24 with the five full-GPU rows the new profiles predict (below).
  // 25.3% over 24 -> 27.2% over 26 with llama.cpp PR #12922's two CPU-only-decode rows (the Ryzen 7 5800X in the
  // CPU table, below).
  // 27.2% -> 20.7% with the GGUF formats' kernel work (below).
  CHECK(o[2].mape <= 20.8);
  const auto& full = rep.by_family.at("llama.cpp full-GPU");
  // 12.0% over 9 -> 20.5% over 14 (prefill 24.4% -> 24.9%) with the rtx-3070 and Apple profiles
  // (hwprofiles/gpus, 2026-12-03): RTX 3070 +6.9% decode / -10.3% prefill; the Apple rows on datasheet
  // bandwidth and the [U] NVIDIA efficiency placeholders run fast: M2 Ultra +30.2% / +6.9%, M3 Max +43.5%,
  // M1 Max +92.2% (docs/serving.md). Not fitted: no published Apple efficiency was found.
  // 20.5% -> 8.5% with the GGUF formats' kernel work added to the weight stream (layer_kernels.cc
  // gguf_kernel_extra_time): on Metal one int-to-float conversion per weight at a quarter of the FMA lanes' rate
  // (metal-benchmarks), M2 Ultra Q4_K_M +30.2% -> -2.3%, M3 Max +43.5% -> +14.1%, M1 Max +92.2% -> +33.7%; on
  // CUDA ggml's q8_1 activation kernel before each quantised matmul, RTX 4090 Q4_K_M +19.1% -> +6.2% (8k:
  // +29.4% -> +16.4%), RTX 3090 +26.9% -> +13.9%, RTX 3070 +6.9% -> +0.8%, 2x4090 70B +5.1% -> +1.1%, 2x3090 70B
  // +13.7% -> +9.7%. The F16 rows and every prefill unchanged (24.9%).
  CHECK(full[2].runs >= 14);
  CHECK(full[2].mape <= 8.6);
  const auto& off = rep.by_family.at("llama.cpp offload");
  // Offload decode 68.3% -> 69.9% over 7 with the host rule (modeler/serving/host_rates.cc) in place of the
  // unsourced 0.75 x peak: llama.cpp's measured CPU decode reads 0.82 of the peak on two-channel desktops (the
  // i7-10700 and 7950X rows get faster, further from their measurements) and 0.73 on many-channel parts (the
  // 5975WX and i9-10900X rows get slightly slower). A sourced correction that moves away from the target.
  // 69.9% -> 63.4% with the graphs-off cost per host run (kGraphsOffCostPerHostRunS, 51.8 us, llama.cpp PR
  // #18934's measurement) on the ik_llama.cpp rows, whose engine disabled CUDA graphs under graph splits until
  // its PR #1172: PR #829 +118.8/+112.4% -> +98.6/+94.1%, PR #841 +33.1% -> +26.0%; the llama.cpp rows unchanged.
  // 63.4% -> 60.5% when the rule follows the rows' engine_build_date and the GPU's compute_capability
  // (serving::cuda_graphs_off_with_splits): llmfit #755's RTX 2080 (Turing) ran before llama.cpp PR #25749 turned
  // graphs on below Ampere, +81.7% -> +61.6%; PR #11397 (2025-02, before PR #18934) gains one host run, 52 us.
  // 60.5% -> 61.1% with -ngl's order by build date (llama.cpp PR #18148 put the output layer on the GPU first;
  // before it -ngl 33 of 56 blocks kept the output layer on the host): PR #11397 +67.2% -> +70.8%, a sourced
  // correction that moves away from the target (a 161 MB output layer on the CPU instead of a 430 MB block).
  // 61.1% -> 31.5% with the DRAM rate of a CPU-only decode run published for the row's machine
  // (serving::machine_decode_run, host_rates.cc; keyed on the rows' host.machine since 2026-12-03, figures
  // unchanged): the ik_llama.cpp rows ran on ikawrakow's 5975WX and 7950X, whose
  // CPU-only token generation reads 55.8 GB/s (TriLM-3.9B, ik_llama.cpp PR #13, flat from 8 to 16 threads) and
  // 55.4 GB/s (GPT-OSS-20B MXFP4, Discussion #758), not the rule's 149.5 and 68.2: PR #829 +98.6/+94.1% ->
  // -3.1/-1.8%, PR #841 +26.0% -> +7.2%. The llama.cpp rows (no published CPU-only run of their machines) are
  // unchanged.
  // 31.5% -> 38.7% with PR #11397's host at the DRAM data rate its author states (DDR4-3867 on the i7-10700's two
  // channels, 61.9 GB/s peak, read at the rule's 0.82: 50.7 GB/s) instead of Intel's rated DDR4-2933 (46.9, 38.5):
  // +70.8% -> +120.8%. A sourced row correction that moves away from the target: the row's CPU side would have to
  // read at 22 GB/s, 0.35 of its stated peak, so its missing time is not the DRAM peak (docs/serving-offload.md,
  // 2026-12-03). Prefill unchanged (the host weights stream over PCIe in a 512-token ubatch).
  // 38.7% over 7 -> 42.1% over 9 with llama.cpp PR #12922's two rows, whose host (AMD Ryzen 7 5800X) the CPU table
  // now has (2 x DDR4-3200, 0.82 of its 51.2 GB/s peak): -ngl 0, decode on the CPU alone, the 8-thread row 20.13 /
  // 19.49 (-3.2%), the 4-thread row 9.51 / 19.49 (+104.9%): the model has no per-thread decode ceiling and the
  // rows' schema no thread count (docs/serving-offload.md, 2026-12-04). 42.1% -> 41.0% with their build date
  // (engine_build_date 2025-04-14: graphs off, one host run) and a host KV cache attended where its step's weight
  // ops run (ggml_backend_sched's pass 2; offload.cc): decode on the CPU, 18.95 -> 17.75 (-5.8% -> -11.8%, the
  // 4-thread row +99.3% -> +86.6%); no other row moves.
  CHECK(off[2].runs >= 9);
  CHECK(off[2].mape <= 41.1);
  // Offload prefill: 58.5% over 4 before the prompt ran in the rows' ubatches (plan.offload.n_ubatch,
  // llama-sweep-bench's PP = one ubatch) with ggml-cuda's 32-token op-offload rule, 37.2% after, 24.5% once
  // prefill attention covered the cache before each ubatch (OffloadSetup::prefill_keys), 25.0% with the host
  // rule's measured pinned PCIe fraction (0.831 of Gen4 x16, nvbandwidth; was 26/31.5 = 0.825 [U]): the expert
  // copies of the over-predicted gpt-oss rows run 0.7% faster.
  // 25.0% -> 25.8% with -ngl's order by build date (above): PR #11397 +27.4% -> +30.7%, one fewer block's weights
  // streamed per ubatch.
  // 25.8% -> 13.2% with ik_llama.cpp's host expert-bias rule (serving/expert_bias.h: a host-resident down-projection
  // bias is added on the CPU in prefill, so the expert outputs cross PCIe twice per block): PR #829 +30.2% ->
  // +8.2% and +1.9% -> -11.0% (N_KV 28672, whose +1.9% the doc explains as partly luck), PR #841 +40.4% -> +3.0%.
  // 13.2% -> 12.4% with the machines' measured DRAM rate (above; the CPU's read and write of the expert outputs
  // in the bias round trip): PR #829 +8.2% -> +3.8%, -11.0% -> -13.8%, PR #841 +3.0% -> +1.3%.
  // 12.4% -> 11.2% with Gen 3's measured pinned fraction (0.790, host_rates.cc) on PR #11397's i7-10700 host.
  // 11.2% over 4 -> 344.0% over 6 with PR #12922's two rows: their pp4096 at -ngl 0 (76.48 and 62.5 t/s) is
  // predicted at 763.2, 10x fast. Their KV cache is in host memory, so the prompt's attention runs in the CPU
  // backend's flash-attention kernel, which the model charges at the CPU matmul rate and one read of the cache per
  // step; that kernel is far slower (docs/serving-offload.md). Not fitted; the other four rows keep their guard.
  CHECK(off[3].runs >= 6);
  CHECK(off[3].mape <= 344.1);
  double other_prefill = 0;
  int others = 0;
  for (const io::ServeRowResult& row : rep.rows) {
    if (row.skipped || row.family != "llama.cpp offload" || !row.error_pct[3]) continue;
    if (row.run->id.rfind("llamacpp_pr12922_", 0) == 0) continue;
    other_prefill += std::abs(*row.error_pct[3]);
    ++others;
  }
  REQUIRE(others == 4);
  CHECK(other_prefill / others <= 11.3);
  // The TRT-LLM dense aggregated rows, the best-covered family, stay within their measured error.
  const auto& trt = rep.by_engine.at("trtllm");
  CHECK(trt[1].mape <= 14.2);  // 18.0% before the measured prefill GEMM and MoE-layer rates, 16.8% after, 17.1%
                               // with the measured all-reduce, 16.4% with the small kernels per block, 14.2%
                               // with the NVL72 tp 8 all-reduce on NVLink, 13.8% with the measured decode
                               // GEMMs of 17-127 rows, 13.4% with the MoE layers per rows per touched expert, then
                               // QK-norm's kernel; 13.3% -> 14.1% with the checkpoint's fp8_block kernels (above)
  CHECK(rep.by_engine.at("sglang")[1].mape <= 22.7);  // 24.9% before its RoPE and KV-write kernels, 24.4% before
                                                      // the NVL72 tp 8 all-reduce, 24.1% before the measured
                                                      // decode GEMMs of 17-127 rows, 24.0% before the bf16
                                                      // cache of --kv-cache-dtype auto (above), 22.2% before
                                                      // the MoE layers per rows per touched expert (GB300
                                                      // DeepSeek-V3 15.5 -> 17.0) and QK-norm's kernel,
                                                      // 22.6% with the checkpoint's fp8_block kernels
  {
    // TRT-LLM disaggregated TPOT (AIConfigurator rows, the decode worker's step): 25.5% over 141 with the NVL72
    // tp 8 decode workers' all-reduces on the collective model (GB200/GB300 tp 8 median +36..+62%), 13.8% with
    // them at the HGX part's measured latency (allreduce_table.cc), 13.7% with the measured decode GEMMs of
    // 17-127 rows (decode_gemm_table.cc), 12.1% with the MoE layers per rows per touched expert (moe_table.cc),
    // 15.0% with the DeepSeek-V3 checkpoint's fp8_block kernels (above; GB200 15.1 -> 17.9 TPOT over 42 with the
    // aggregated rows, GB300 11.0 -> 13.7 over 30).
    int n = 0;
    double sum = 0;
    for (const io::ServeRowResult& row : rep.rows) {
      if (row.skipped || row.family != "datacenter" || row.run->engine != "trtllm" ||
          row.run->mode != serving::Mode::disaggregated || !row.error_pct[1])
        continue;
      ++n;
      sum += std::abs(*row.error_pct[1]);
    }
    CHECK(n >= 140);
    REQUIRE(n > 0);
    CHECK(sum / n <= 15.1);
  }
  CHECK(rep.by_engine.at("vllm")[1].mape <= 29.0);  // 31.6% before its RoPE and KV-write kernels, 30.4%
                                                    // before the measured decode GEMMs of 17-127 rows, 30.2%
                                                    // before the MoE layers per rows per touched expert and
                                                    // QK-norm's two kernels, 26.3% before the checkpoint's
                                                    // fp8_block kernels (above)
  // TTFT per engine (vLLM 56.2%, SGLang 72.6%, TRT-LLM 52.7% at commit time; SGLang's was 65.3% before its
  // generator-deployed rows ran with max_prefill_tokens = isl + 1500 and mixed chunks, and 72.0% before its
  // chunked_prefill_size followed the GPU's memory (16384 from 160 GiB, server_args.py): the sourced default
  // shortens the predicted TTFT of 41 B200/B300 rows that were already predicted short).
  // 56.9% and 76.0% with the measured prefill GEMM rates (above), 56.2% and 72.3% with the MoE FLOP rate.
  // vLLM 56.3% -> 56.8% with the small kernels per block: the Qwen3-235B-FP8 rows on H200 (79.4% -> 80.8% over
  // 51), whose over-predicted prefills pay three more kernel floors per block (a sourced cost that moves away).
  // 56.8% -> 57.3% with vLLM's RoPE and KV-write kernels (engine_step.cc), for the same reason: those rows'
  // over-predicted prefill steps pay two more floors per block (80.8% -> 82.4% over 51). Loosened for a
  // sourced kernel list, not a fit. 57.3% -> 61.8% with the MoE layers per rows per touched expert (moe_table.cc):
  // the same rows decode slower (TPOT 43.0% -> 34.3% over 51), so the queues the model already over-predicts on
  // the KV-bound tp 1/2 rows grow (e.g. 10.9 -> 14.2 s TTFT against 3.2 measured): loosened for measured rates.
  // QK-norm's two kernels per block on the Qwen3 rows move them further for the same reason (57.3% -> 57.9% alone).
  // 62.5% -> 58.2% with the checkpoint's fp8_block kernels (above; the Qwen3-235B-A22B-FP8 H200 rows 98.7% ->
  // 85.1%: faster decodes, shorter queues).
  CHECK(rep.by_engine.at("vllm")[0].mape <= 58.2);
  CHECK(rep.by_engine.at("sglang")[0].mape <= 72.8);  // 72.7% with the measured all-reduce, 72.8% -> 73.1% with
                                                      // the bf16 cache of --kv-cache-dtype auto (above), 73.0%
                                                      // -> 72.8% with the checkpoint's fp8_block kernels, 72.7%
                                                      // with the KV transfer
  CHECK(trt[0].mape <= 51.0);  // 51.7% -> 51.1% with the checkpoint's fp8_block kernels, 50.9% with the KV
                               // transfer
  {
    // Disaggregated TTFT per engine with the KV transfer (kv_transfer.h; every row's pools span nodes, so the
    // cache crosses the NIC): TRT-LLM 80.7% -> 79.7% over 141, SGLang 70.5% -> 70.2% over 92.
    std::map<std::string, std::pair<int, double>> by;
    for (const io::ServeRowResult& row : rep.rows) {
      if (row.skipped || row.family != "datacenter" || row.run->mode != serving::Mode::disaggregated ||
          !row.error_pct[0])
        continue;
      CHECK(std::find_if(row.assumed.begin(), row.assumed.end(),
                         [](const std::string& a) { return a.rfind("KV transfer: ", 0) == 0; }) != row.assumed.end());
      by[row.run->engine].first += 1;
      by[row.run->engine].second += std::abs(*row.error_pct[0]);
    }
    REQUIRE(by["trtllm"].first >= 140);
    REQUIRE(by["sglang"].first >= 90);
    CHECK(by["trtllm"].second / by["trtllm"].first <= 79.8);
    CHECK(by["sglang"].second / by["sglang"].first <= 70.3);
  }
  // AIConfigurator's rows give one worker's shape; its benchmark runs concurrency = workers x max_batch. The
  // Qwen3-32B NVFP4 run at concurrency 416 with max_batch 13 ran on 32 workers: without them its 416 clients
  // queue on one worker and the predicted TTFT is 260x the measured 0.72 s.
  bool found = false;
  for (const io::ServeRowResult& row : rep.rows) {
    if (row.run->id != std::string("aic_nvidia_qwen3_32b_nvfp4_nvidia_qwen3_32b_nvfp4_b200_sxm_trtllm_agg_") +
                           "15000x500_c416_tp2_0_epnone_2")
      continue;
    found = true;
    REQUIRE_FALSE(row.skipped);
    CHECK(std::find(row.assumed.begin(), row.assumed.end(),
                    "32 workers (concurrency / max_batch, AIConfigurator's rule)") != row.assumed.end());
    REQUIRE(row.error_pct[0]);
    CHECK(std::abs(*row.error_pct[0]) < 60.0);
  }
  CHECK(found);

  // The rows of a block-scaled checkpoint that state fp8 say what they ran; the others do not.
  int block_rows = 0;
  for (const io::ServeRowResult& row : rep.rows) {
    if (row.skipped) continue;
    const bool note = std::find(row.assumed.begin(), row.assumed.end(),
                                "fp8 on a 128x128 block-scaled checkpoint: fp8_block kernels") != row.assumed.end();
    const bool fp8 = row.run->weights_precision == "fp8" || row.run->moe_weights_precision == "fp8";
    CHECK(note == (fp8 && row.run->model.checkpoint_fp8_block == 128));
    block_rows += note ? 1 : 0;
  }
  CHECK(block_rows >= 295);  // predicted rows of vLLM Qwen3-235B-A22B-FP8, TRT-LLM and SGLang DeepSeek-V3, one TRT-LLM
                             // Qwen3-235B (302 with those skipped after the precision was set)
}

TEST_CASE("deployment: the AIConfigurator rows whose notes name the image or the database dump, and only they") {
  // The key replaced reading the notes text (serving_validation.cc); it must keep saying what the notes say.
  int generator = 0;
  for (const io::ServingRun& r : io::load_serving_runs(runs_path())) {
    const bool aic = r.source.find("AIConfigurator") != std::string::npos;
    const bool named = r.notes.find("image=") != std::string::npos || r.notes.find("db-dump") != std::string::npos;
    CHECK(r.deployment == (!aic    ? io::Deployment::unstated
                           : named ? io::Deployment::aic_generator
                                   : io::Deployment::sweep));
    generator += r.deployment == io::Deployment::aic_generator ? 1 : 0;
  }
  CHECK(generator == 529);
}

TEST_CASE("offload: tensor placement is never slower than the best -ngl split, every offload row x 8/12/16/24 GB") {
  const auto runs = io::load_serving_runs(runs_path());
  const io::GpuProfile gpu = io::load_gpu_profile("rtx-4090");
  const serving::Host host = io::load_host("desktop-ddr5-5600-2ch-pcie4");
  int rows = 0;
  for (const auto& r : runs) {
    if (!r.offload || (r.engine != "llama.cpp" && r.engine != "ik_llama.cpp")) continue;
    serving::Precision p;
    p.weights = *serving::parse_weight_format(r.weights_precision);
    p.moe_weights = *serving::parse_weight_format(r.moe_weights_precision);
    const serving::ServingModel sm = serving::make_serving_model(r.model, p);
    ++rows;
    for (double gib : {8.0, 12.0, 16.0, 24.0}) {
      serving::OffloadSetup s;
      s.model = &sm;
      s.gpu = &gpu.gpu;
      s.host = host;
      s.vram = GiB(gib) - serving::pinned_bytes(sm);
      s.context = r.input_len.value_or(512) + r.output_len.value_or(128);
      const auto items = serving::offload_items(s);
      const auto layer = serving::best_layer_placement(items, s);
      const auto tensor = serving::tensor_placement(items, s);
      // The -ngl optimum computed here, independently of best_layer_placement (which tensor_placement also
      // starts from): every -ngl value evaluated from its flags, its GPU bytes summed from the homes.
      const int blocks = sm.model.layers;
      for (int ph = 0; ph < 2; ++ph) {
        double best = 1e300;
        for (int ngl = 0; ngl <= blocks + 1; ++ngl) {
          const auto fp = serving::flags_placement(items, s, ngl, 0, {});
          double bytes = 0;
          for (size_t i = 0; i < items.size(); ++i)
            if (fp.home[ph][i] == serving::Home::gpu) bytes += items[i].bytes.v;
          if (bytes <= s.vram.v) best = std::min(best, fp.step[ph].v);
        }
        double tensor_bytes = 0;
        for (size_t i = 0; i < items.size(); ++i)
          if (tensor.home[ph][i] == serving::Home::gpu) tensor_bytes += items[i].bytes.v;
        INFO(r.id << " " << gib << " GiB phase " << ph);
        REQUIRE(best < 1e300);  // -ngl 0 always fits
        CHECK(tensor.step[ph].v <= best * (1 + 1e-9));
        CHECK(layer.step[ph].v == doctest::Approx(best).scale(0));
        CHECK(tensor_bytes <= s.vram.v);
      }
    }
  }
  CHECK(rows >= 20);
}

TEST_CASE("serve validate, FlexGen rows: throughput and decode errors at or below the measured figures") {
  const auto runs = io::load_serving_runs(runs_path());
  const io::ServeValidationReport rep = io::run_serve_validation(runs);
  // Measured at commit time (modeler/serving/flexgen.cc on hwprofiles/machines/gcp-n1-highmem-32-t4.yaml):
  // throughput 31.4% over 6 rows, decode 20.0% over 3; 30.7% / 18.6% with the machine's DRAM and PCIe from the
  // host rule (92.2 and 13.1 GB/s, was 96 and 13.0 [U]); 30.6% / 18.8% with the five bench_suite.py rows'
  // --debug fewer_batch decode projection; 25.5% / 17.4% with FlexGen's per-tensor weight placement, the hidden
  // copies on the default stream, the pin_memory() staging on the launching thread, the prefill's elementwise
  // passes and 13 bytes per decompressed value (flex_opt.py / pytorch_backend.py / compression.py, FlexLLMGen
  // 004ffef); 24.9% / 16.5% with the machine's pinned PCIe rates from a PCIe 3.0 x16 bandwidthTest (12.44 GB/s
  // host-to-device, 13.20 device-to-host; was the host rule's Gen 4 fraction, 13.09 both ways). The RTX 3090 row
  // states no policy and is skipped.
  const auto& fg = rep.by_family.at("flexgen");
  CHECK(fg[4].runs == 6);
  CHECK(fg[4].mape <= 25.1);
  CHECK(fg[2].runs == 3);
  CHECK(fg[2].mape <= 16.7);
}

TEST_CASE("serve validate, ShareGPT and request-rate rows: skipped for their lengths; a fixed-length rate row runs") {
  // The 8 ShareGPT rows (4 at a request rate, 4 with every prompt at once) need each request's lengths, which are
  // not carried (docs/serving.md, "Open loop"): skipped, with the reason. Move this when a sourced sample lands.
  const auto runs = io::load_serving_runs(runs_path());
  std::vector<io::ServingRun> share;
  for (const io::ServingRun& r : runs)
    if (r.dataset == "sharegpt") share.push_back(r);
  REQUIRE(share.size() == 8);
  // The same rate row with fixed lengths (made up for the test, not a measurement) takes the open-loop path.
  io::ServingRun fixed;
  for (const io::ServingRun& r : share)
    if (r.id == "sglang030_a100_llama31_8b_online_rps4") fixed = r;
  REQUIRE(fixed.request_rate);
  fixed.dataset = "fixed";
  fixed.input_len = 256;
  fixed.output_len = 256;
  share.push_back(fixed);
  const io::ServeValidationReport rep = io::run_serve_validation(share);
  int rate_rows = 0;
  for (size_t i = 0; i < 8; ++i) {
    const io::ServeRowResult& row = rep.rows[i];
    CHECK(row.skipped);
    CHECK(row.skip_reason == io::kShareGptSkip);
    rate_rows += row.run->request_rate ? 1 : 0;
  }
  CHECK(rate_rows == 4);
  const io::ServeRowResult& f = rep.rows[8];
  REQUIRE_FALSE(f.skipped);
  CHECK(f.family == "datacenter open loop");
  CHECK(std::find(f.assumed.begin(), f.assumed.end(), "open loop, Poisson, 1000 requests, medians") !=
        f.assumed.end());
  REQUIRE(f.predicted[0]);
  REQUIRE(f.predicted[1]);
  // 4 req/s of 256/256 on one A100 is far below its capacity: TTFT about one prefill, TPOT a small-batch step.
  CHECK(*f.predicted[0] > 1.0);
  CHECK(*f.predicted[0] < 200.0);
  CHECK(*f.predicted[1] > 5.0);
  CHECK(*f.predicted[1] < 40.0);
  CHECK(rep.by_family.count("datacenter open loop") == 1);
}
