#include "modeler/io/llama_offload_validation.h"

#include <algorithm>
#include <cmath>

#include "modeler/problems.h"
#include "modeler/serving/offload.h"

namespace shardplan::io {

namespace {

serving::WeightFormat fmt_of(const std::string& s) { return *serving::parse_weight_format(s); }

}  // namespace

// Channels x data rate x 8 bytes of each platform's specification (recalled, not re-checked here) [U].
std::optional<double> cpu_peak_memory_gbps(const std::string& cpu) {
  if (cpu.find("i7-10700") != std::string::npos) return 45.8;  // Intel ARK: 2 x DDR4-2933 [U]
  if (cpu.find("5975WX") != std::string::npos) return 204.8;    // AMD: 8 x DDR4-3200 [U]
  if (cpu.find("7950X") != std::string::npos) return 83.2;      // AMD: 2 x DDR5-5200 [U]
  return std::nullopt;
}

// Host rules, the same as hwprofiles/hosts/desktop-ddr5-5600-2ch-pcie4: sustained memory bandwidth 0.75 x peak,
// 62.5 GFLOP/s per core (that profile's 1.0 TFLOP/s over 16 Zen 4 cores), pinned copies at 26/31.5 of the PCIe
// link rate; every one of them [U].
void predict_llama_offload_row(const ServingRun& r, const GpuProfile& gpu, ServeRowResult* out) {
  auto skip = [&](std::string why) {
    out->skipped = true;
    out->skip_reason = std::move(why);
  };
  if (!r.host) return skip("offload row without a host");
  const ServingHost& h = *r.host;
  std::optional<double> peak = h.memory_bw_gbps;
  if (!peak) peak = cpu_peak_memory_gbps(h.cpu);
  if (!peak) return skip("host memory bandwidth not stated and CPU '" + h.cpu + "' not in the table");
  if (!h.cores) return skip("host core count not stated");
  serving::Host host;
  host.name = h.cpu;
  host.memory = GiB(h.memory_gib.value_or(64));
  host.memory_bw = GBps(0.75 * *peak);
  host.cpu_flops = TFlops(0.0625 * *h.cores);
  double link = gpu.gpu.host_link_bw.v / 1e9;
  if (h.pcie_gen && h.pcie_lanes) {
    const double lane = *h.pcie_gen <= 3 ? 0.985 : *h.pcie_gen == 4 ? 1.969 : 3.938;  // GB/s per lane, per direction
    link = lane * *h.pcie_lanes;
  }
  host.pcie_bw = GBps(link * 26.0 / 31.5);
  out->assumed.push_back("host: " + num(0.75 * *peak, "%.0f") + " GB/s, " + num(0.0625 * *h.cores, "%.2f") +
                         " TFLOP/s, PCIe " + num(link * 26.0 / 31.5, "%.1f") + " GB/s");
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
  out->predicted[2] = st.decode_batch / p.step[1].v;
  // Every ubatch of the prompt costs the same step here (attention over the growing cache is averaged into the
  // context above), so the prompt's rate is one step's.
  if (r.input_len) out->predicted[3] = st.prefill_tokens / p.step[0].v;
}

}  // namespace shardplan::io
