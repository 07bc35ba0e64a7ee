#include "modeler/io/llama_offload_validation.h"

#include <algorithm>
#include <cmath>

#include "modeler/problems.h"
#include "modeler/serving/expert_bias.h"
#include "modeler/serving/host_rates.h"
#include "modeler/serving/offload.h"

namespace shardplan::io {

namespace {

serving::WeightFormat fmt_of(const std::string& s) { return *serving::parse_weight_format(s); }

}  // namespace

// The platforms of the CPUs the offload rows name: memory channels x the vendor's rated DDR data rate (the peak
// by serving::dram_peak_gbps), as the vendor's specification pages state them (Intel ARK "Memory
// Specifications": Max # of Memory Channels, Memory Types; AMD's product page "Connectivity": Memory Channels,
// System Memory Specification), and the ISA class of the host rule's per-core matmul rate: avx512 for Zen 4, where
// it was measured; the Intel parts' AVX-512 (Cascade Lake-X) is not that measurement, so they take the AVX2 rate,
// as does Zen 3 (AVX2 only). Verification (2026-12-02, the reference search corpora): neither vendor page is
// stored there; the AMD figures are confirmed by secondary sources [S] (named per part), the Intel ones are not
// [U: recalled from Intel ARK, to be checked against the page].
//
// A row's host.cpu is looked up by its exact name, as the row states it: a neighbour in the same family (a K or
// X3D part, a non-X i9) is a different part with its own page and is not in the table (the row is then skipped
// unless it states memory_bw_gbps, and takes two channels and AVX2).
namespace {
struct CpuTableRow {
  const char* name;
  CpuPlatform platform;
};
constexpr CpuTableRow kCpuTable[] = {
    // Intel ARK, Intel Core i7-10700 Processor (Comet Lake-S): 2 channels, DDR4-2933 [U].
    {"Intel Core i7-10700", {2, 2933, serving::CpuIsa::avx2}},
    // Intel ARK, Intel Core i9-10900X X-series Processor (Cascade Lake-X): 4 channels, DDR4-2933 [U]. The four
    // channels are also the llmfit #755 submitter's ("quad-channel DDR4", of this machine) [S]. AVX2 class: ggml's
    // x86 Q4_K and Q6_K dot products have AVX2 and AVX code only, no AVX-512 branch
    // (ggml-org/llama.cpp@04e1dd75:ggml/src/ggml-cpu/arch/x86/quants.c, ggml_vec_dot_q4_K_q8_K / _q6_K_q8_K).
    {"Intel Core i9-10900X", {4, 2933, serving::CpuIsa::avx2}},
    // amd.com, AMD Ryzen Threadripper PRO 5975WX (Zen 3, sWRX8): 8 channels, DDR4 up to 3200 MT/s (the eight DDR4
    // channels of the 5000WX series in SweClockers' 2021-12 report of the series [S]; the 3200 MT/s [U]).
    {"AMD Ryzen Threadripper PRO 5975WX", {8, 3200, serving::CpuIsa::avx2}},
    // amd.com, AMD Ryzen 9 7950X (Zen 4, AM5): 2 channels, DDR5 2x1R 5200 MT/s (DDR5-5200 for the Ryzen 7000
    // series in Hardware Times' report of Apacer's 2022 release, dual channel in hwsetup.it's report of the same
    // slide [S]).
    {"AMD Ryzen 9 7950X", {2, 5200, serving::CpuIsa::avx512}},
    // amd.com, AMD Ryzen 7 5800X (Zen 3, AM4, one CCD): 8 cores / 16 threads, base 3.8 GHz, boost up to 4.7 GHz,
    // 32 MB L3 (visualfoodie.com's copy of the spec table [S]); 2 channels, DDR4 up to 3200 MT/s (the AM4 I/O die
    // it shares with Ryzen 3000, whose JEDEC DDR4-3200 on two channels, 51.2 GB/s, thefpsreview.com 2019-05-24 and
    // elchapuzasinformatico.com 2019-05 report [S]; the 5000 series' own page [U]). AVX2 class: Zen 3 has AVX2 and
    // two 256-bit FMA pipes, no AVX-512, the core of the 5975WX measurement the AVX2 rate comes from.
    {"AMD Ryzen 7 5800X", {2, 3200, serving::CpuIsa::avx2}},
};
}  // namespace

std::optional<CpuPlatform> cpu_platform(const std::string& cpu) {
  for (const CpuTableRow& r : kCpuTable)
    if (cpu == r.name) return r.platform;
  return std::nullopt;
}

std::optional<double> cpu_peak_memory_gbps(const std::string& cpu) {
  const auto p = cpu_platform(cpu);
  if (!p) return std::nullopt;
  return serving::dram_peak_gbps(p->channels, p->mega_transfers_per_s);
}

std::string host_assumption(const serving::Host& host, bool measured_dram) {
  const std::string dram = num(host.memory_bw.v / 1e9, "%.0f") + " GB/s";
  const std::string rest = num(host.cpu_flops.v / 1e12, "%.2f") + " TFLOP/s";
  const std::string pcie = "PCIe " + num(host.pcie_bw.v / 1e9, "%.1f") + " GB/s";
  if (measured_dram) return "host: " + dram + " (measured machine rate), " + rest + " and " + pcie + " (host rule)";
  return "host: " + dram + ", " + rest + ", " + pcie + " (host rule)";
}

// The host is the host rule (modeler/serving/host_rates.h) on what the row and the CPU table state, with the DRAM
// rate of the CPU-only decode run published for the machine the row names (host.machine) where it names one.
void predict_llama_offload_row(const ServingRun& r, const GpuProfile& gpu, ServeRowResult* out) {
  auto skip = [&](std::string why) {
    out->skipped = true;
    out->skip_reason = std::move(why);
  };
  if (!r.host) return skip("offload row without a host");
  // The -ngl / tensor-placement model charges host-resident weights to a PCIe link (offload.h); a unified-memory
  // GPU (system.h) has none: its CPU layers read the same DRAM.
  if (gpu.gpu.unified_memory) return skip("unified-memory GPU: the PCIe offload model does not apply");
  const ServingHost& h = *r.host;
  const std::optional<CpuPlatform> plat = cpu_platform(h.cpu);
  std::optional<double> peak = h.memory_bw_gbps;
  if (!peak) peak = cpu_peak_memory_gbps(h.cpu);
  if (!peak) return skip("host memory bandwidth not stated and CPU '" + h.cpu + "' not in the table");
  if (!h.cores) return skip("host core count not stated");
  serving::HostSpec spec;
  spec.name = h.cpu;
  spec.memory_gib = h.memory_gib.value_or(64);
  spec.dram_peak_gbps = *peak;
  spec.memory_channels = plat ? plat->channels : 2;
  if (!plat) out->assumed.push_back("CPU not in the table: 2 memory channels, AVX2");
  spec.isa = plat ? plat->isa : serving::CpuIsa::avx2;
  spec.cores = *h.cores;
  if (h.pcie_gen && h.pcie_lanes) {
    spec.pcie_gen = *h.pcie_gen;
    spec.pcie_link_gbps = serving::pcie_link_gbps(*h.pcie_gen, *h.pcie_lanes);
  } else {
    // The GPU's own link (its profile's host_link_gbps), its generation from the rate per lane of x16
    // (PCI-SIG: ~0.98 GB/s Gen 3, ~1.97 Gen 4, ~3.94 Gen 5), so a Gen 3 card takes Gen 3's measured fraction.
    spec.pcie_link_gbps = gpu.gpu.host_link_bw.v / 1e9;
    const double per_lane = spec.pcie_link_gbps / 16;
    spec.pcie_gen = per_lane > 3.0 ? 5 : per_lane > 1.5 ? 4 : 3;
  }
  // The machine the row names (host.machine): its published CPU-only decode run is the host's DRAM rate.
  const serving::MachineDecodeRun* measured = nullptr;
  if (!h.machine.empty()) {
    measured = serving::machine_decode_run(h.machine);
    if (!measured) throw ConfigError("row '" + r.id + "': host.machine '" + h.machine + "' is not a named machine");
    spec.measured_decode_gbps = measured->gbps();
  }
  const serving::Host host = serving::llama_host(spec);
  if (measured)
    out->assumed.push_back("host DRAM rate measured on " + measured->machine + " (" + measured->source + ")");
  out->assumed.push_back(host_assumption(host, measured != nullptr));
  serving::Precision prec;
  prec.weights = fmt_of(r.weights_precision);
  prec.moe_weights = fmt_of(r.moe_weights_precision);
  prec.kv_bytes = r.kv_precision ? *serving::parse_kv_bytes(*r.kv_precision) : 2.0;
  if (!r.kv_precision) out->assumed.push_back("kv 16-bit");
  const serving::ServingModel sm = serving::make_serving_model(r.model, prec);
  const ServingOffload& o = *r.offload;
  serving::OffloadSetup st;
  st.model = &sm;
  st.gpu = &gpu.gpu;
  st.host = host;
  st.vram = gpu.gpu.hbm_capacity;
  st.decode_batch = r.batch_size.value_or(1);
  st.op_offload_min_batch = serving::kLlamaCppOpOffloadMinBatch;
  // CUDA graphs in a decode step with graph splits: off in the builds serving::cuda_graphs_off_with_splits names
  // (by the row's engine_build_date and the GPU's compute capability); then each host run costs the measured
  // graphs-off figure (PR #18934's, measured on Ampere and newer: applied below Ampere too, where the launches
  // it measures are the same host-side work).
  const serving::GraphsVerdict graphs =
      serving::cuda_graphs_off_with_splits(r.engine, r.engine_build_date.value_or(""), gpu.gpu.compute_capability);
  if (graphs.off) st.decode_host_run_s = serving::kGraphsOffCostPerHostRunS;
  if (!graphs.why.empty()) out->assumed.push_back(graphs.why);
  // -ngl's order: the output layer first since llama.cpp PR #18148, the blocks first before it.
  st.ngl_output_first = serving::llama_ngl_output_first(r.engine, r.engine_build_date.value_or(""));
  if (!st.ngl_output_first && o.gpu_layers && *o.gpu_layers <= r.model.layers)
    out->assumed.push_back("-ngl fills blocks before the output layer (llama.cpp before PR #18148)");
  // The prompt runs in ubatch-sized steps (llama_decode splits n_batch into n_ubatch pieces).
  const double in = r.input_len.value_or(0), outl = r.output_len.value_or(128);
  const double ub = o.n_ubatch.value_or(kLlamaCppDefaultUbatch);
  if (!o.n_ubatch && r.input_len) out->assumed.push_back("n_ubatch 512 (llama.cpp default)");
  const double steps = in > 0 ? std::ceil(in / ub) : 1;
  st.prefill_tokens = in > 0 ? in / steps : ub;
  st.context = std::max(1.0, r.context_depth.value_or(0) + in + outl / 2.0);
  st.prefill_keys = in > 0 ? r.context_depth.value_or(0) + in / 2.0 : 0;
  const auto items = serving::offload_items(st);
  std::vector<std::string> cpu;
  for (const std::string& ov : o.tensor_overrides) {
    const auto eq = ov.rfind('=');
    if (eq != std::string::npos && ov.compare(eq + 1, 3, "CPU") == 0) cpu.push_back(ov.substr(0, eq));
  }
  serving::Placement p;
  try {
    p = serving::flags_placement(items, st, o.gpu_layers.value_or(r.model.layers + 1), o.n_cpu_moe.value_or(0), cpu);
  } catch (const ConfigError& e) {
    return skip(std::string("offload flags: ") + e.what());
  }
  // ik_llama.cpp adds a host-resident expert bias on the CPU in prefill (serving/expert_bias.h).
  if (r.engine == "ik_llama.cpp") {
    const bool moves = serving::ik_n_cpu_moe_moves_biases(r.engine_build_date.value_or(""));
    const auto bias = serving::host_bias_blocks(r.model.layers, o.n_cpu_moe.value_or(0), moves, cpu);
    if (serving::add_host_bias_prefill(items, st, bias, &p) > 0)
      out->assumed.push_back(
          "expert biases in host memory: prefill bias add on the CPU (ik_llama.cpp op-offload rule)");
  }
  out->predicted[2] = st.decode_batch / p.step[1].v;
  // Every ubatch of the prompt costs the same step here (attention over the growing cache is averaged into the
  // context above), so the prompt's rate is one step's.
  if (r.input_len) out->predicted[3] = st.prefill_tokens / p.step[0].v;
}

}  // namespace shardplan::io
