#include "modeler/serving/host_rates.h"

#include "modeler/problems.h"

namespace shardplan::serving {

MemoryPlatform memory_platform(int channels) {
  return channels <= 2 ? MemoryPlatform::client : MemoryPlatform::many_channel;
}

double dram_peak_gbps(int channels, double mega_transfers_per_s) {
  return channels * 8.0 * mega_transfers_per_s / 1000.0;
}

double stream_fraction(MemoryPlatform p) {
  // client: AIDA64 memory read, dual-channel DDR4-3200 on an Intel desktop, ~46 GB/s of 51.2 (guru3d, G.Skill
  // TridentZ Royal DDR4-3200 review, p. 9-10) = 0.90.
  // many_channel: STREAM copy 73,876.7 MB/s on 2 x Xeon E5-2637 v3 with 8 channels of DDR4 at 1600 MT/s
  // (102.4 GB/s peak; Microway, "DDR4 Memory on Xeon E5-2600v3 with 3 DIMMs per channel") = 0.72.
  return p == MemoryPlatform::client ? 0.90 : 0.72;
}

double llama_cpu_decode_fraction(MemoryPlatform p) {
  // client: llama.cpp issue #4716 (2023-12-31), CPU only, Mixtral-8x7B Q8_0, both machines 128 GB at 3600 MT/s
  // on two channels (57.6 GB/s peak): Ryzen 9 5900X DDR4 3.58 tok/s, Ryzen 9 7950X DDR5 3.37 tok/s. A token reads
  // 12.748e9 weights (32 layers x (41.9M attention + 2 of 8 experts x 176.2M) + the 131.1M output layer; public
  // config) x 34/32 bytes (Q8_0) = 13.55 GB: 48.5 and 45.7 GB/s, 0.842 and 0.793 of peak; mean 0.82.
  // many_channel: llama.cpp issue #11744 (2025-02-08), CPU only, dual EPYC 9175F with 16 x DDR5-6400 (819.2 GB/s
  // peak), Llama-3.1-70B f16, 4.31 tok/s: 69.5e9 weights read (70.55e9 less the 1.05e9 input embedding, of which
  // one row is read) x 2 bytes = 139.0 GB, 599 GB/s = 0.73 of peak. Microway's STREAM copy on a many-channel
  // server (0.72, stream_fraction) agrees.
  return p == MemoryPlatform::client ? 0.82 : 0.73;
}

double llama_cpu_gflops_per_core(CpuIsa isa) {
  // ik_llama.cpp PR #121 (2024-12-03), PP-512 of LLaMA-3.1-8B Q5_0 (before its repacked _R4 layout): Zen 4
  // (Ryzen 9 7950X, AVX-512) 157.46 tok/s on 16 threads, AVX2 (Threadripper PRO 5975WX, Zen 3) 171.99 tok/s on
  // 32. A token is 2 x 7.505e9 FLOP (8.03e9 parameters less the 0.525e9 input embedding): 2.36 and 2.58 TFLOP/s,
  // 147.7 and 80.7 GFLOP/s per thread (one per core).
  return isa == CpuIsa::avx512 ? 147.7 : 80.7;
}

double pcie_link_gbps(int gen, int lanes) {
  double gt = 0, encoding = 128.0 / 130.0;  // PCI-SIG: Gen 3-5 use 128b/130b, Gen 1-2 8b/10b
  switch (gen) {
    case 1: gt = 2.5, encoding = 0.8; break;
    case 2: gt = 5.0, encoding = 0.8; break;
    case 3: gt = 8.0; break;
    case 4: gt = 16.0; break;
    case 5: gt = 32.0; break;
    default: throw ConfigError("PCIe generation " + std::to_string(gen) + " is not 1..5");
  }
  return lanes * gt * encoding / 8.0;
}

double pinned_h2d_fraction(int gen) {
  // Gen 5: nvbandwidth host_to_device_memcpy_ce on 8 x RTX 5090 (Xeon 8458P host), 56.30-56.41 GB/s, median
  // 56.34 of 63.0 (tinygrad/open-gpu-kernel-modules issue #29, 2025-07-24) = 0.894.
  // Gen 4: nvbandwidth host_to_device_memcpy_ce on 8 x RTX 4090, 23.90-26.38 GB/s, median 26.19 of 31.5
  // (NVIDIA/nvbandwidth issue #15, 2024-01-06) = 0.831.
  // Gen 3 (and below): CUDA samples bandwidthTest on a Tesla P100-PCIE-16GB, 32 MiB pinned host-to-device,
  // NUMA-local, 12150.7 "MB/s" (mpicbg-scicomp/gearshifft PR #82, 2017-03-27; bandwidthTest.cu's MB/s is
  // 1.024e6 B/s) = 12.44 GB/s of 15.75 = 0.790, the measurement the T4 machine profile carries
  // (hwprofiles/machines/gcp-n1-highmem-32-t4.yaml).
  if (gen >= 5) return 0.894;
  return gen == 4 ? 0.831 : 0.790;
}

const std::vector<MachineDecodeRun>& machine_decode_runs() {
  static const std::vector<MachineDecodeRun> runs = [] {
    std::vector<MachineDecodeRun> v;
    // ikawrakow's Ryzen 9 7950X (his 7950X + RTX-4080 rig, the machine of the ik_llama.cpp PR #841 row): ik_llama.cpp
    // Discussion #758 (2025-09-04), CPU only, `llama-sweep-bench -t 16 -ctk q8_0 -fa -fmoe`, GPT-OSS-20B MXFP4 (the
    // ggml-org file), N_KV 0: TG 21.62 tok/s (mainline llama.cpp 21.70 in the same post; PR #757 the same 21.62). A
    // token reads the 4 routed of 32 experts in 24 blocks, 24 x 4 x 3 x 2880 x 2880 weights at MXFP4's 4.25 bits, and
    // every other multiplied weight: attention 24 x (2 x 2880 x 4096 + 2 x 2880 x 512), the router 24 x 2880 x 32 and
    // the 201088 x 2880 output layer, at Q8_0's 8.5 bits (the file's 11.266 GiB less its 19.11e9 expert weights at
    // 4.25 bits leaves 8.6 bits for its other 1.80e9, ik_llama.cpp issue #822's load log): 1.269 + 1.294 = 2.563 GB,
    // 55.4 GB/s (0.67 of DDR5-5200's 83.2).
    const double experts = 24.0 * 4 * 3 * 2880 * 2880 * 4.25 / 8;
    const double others = (24.0 * (2 * 2880 * 4096 + 2 * 2880 * 512 + 2880 * 32) + 201088.0 * 2880) * 8.5 / 8;
    v.push_back({"ikawrakow-ryzen9-7950x", "ikawrakow's Ryzen 9 7950X", "AMD Ryzen 9 7950X", 21.62, experts + others,
                 "ik_llama.cpp Discussion #758 (2025-09-04): CPU-only GPT-OSS-20B MXFP4 TG 21.62 tok/s at N_KV 0"});
    // ikawrakow's Threadripper PRO 5975WX (his 5975WX + RTX-4080 rig, that of the PR #829 rows): ik_llama.cpp PR #13
    // (2024-08-06), CPU only, TriLM-3.9B IQ2_TN (1.08 GiB file), TG-128 on 1/2/4/8/16 threads
    // 15.71/26.50/41.63/48.62/48.09 tok/s: flat from 8 threads, the DRAM ceiling. A token reads at most the file
    // (every tensor but the input embedding): 1.08 GiB x 48.09 = 55.8 GB/s, 0.27 of 8 x DDR4-3200's 204.8 (the
    // machine's DIMMs are not stated). The same machine's LLaMA-3.1-8B IQ3_KS TG of 18.46 tok/s (PR #566, 2025-07-01)
    // at ~3.1-3.2 GB a token agrees (57-59 GB/s).
    v.push_back({"ikawrakow-threadripper-pro-5975wx", "ikawrakow's Threadripper PRO 5975WX",
                 "AMD Ryzen Threadripper PRO 5975WX", 48.09, 1.08 * 1073741824.0,
                 "ik_llama.cpp PR #13 (2024-08-06): CPU-only TriLM-3.9B IQ2_TN TG-128 48.09 tok/s on 16 threads"});
    return v;
  }();
  return runs;
}

const MachineDecodeRun* machine_decode_run(const std::string& name) {
  for (const MachineDecodeRun& r : machine_decode_runs())
    if (r.name == name) return &r;
  return nullptr;
}

Host llama_host(const HostSpec& s) {
  if (s.dram_peak_gbps <= 0) throw ConfigError("host '" + s.name + "': DRAM peak must be positive");
  if (s.pcie_link_gbps <= 0) throw ConfigError("host '" + s.name + "': PCIe link rate must be positive");
  if (s.cores <= 0) throw ConfigError("host '" + s.name + "': core count must be positive");
  Host h;
  h.name = s.name;
  h.memory = GiB(s.memory_gib);
  h.memory_bw = GBps(s.measured_decode_gbps > 0
                         ? s.measured_decode_gbps
                         : llama_cpu_decode_fraction(memory_platform(s.memory_channels)) * s.dram_peak_gbps);
  h.cpu_flops = FlopsPerSec(llama_cpu_gflops_per_core(s.isa) * 1e9 * s.cores);
  h.pcie_bw = GBps(s.pcie_link_gbps * pinned_h2d_fraction(s.pcie_gen));
  h.sources = {"serving::llama_host (modeler/serving/host_rates.cc)"};
  return h;
}

}  // namespace shardplan::serving
