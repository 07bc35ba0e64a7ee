// The host rule: what a CPU host sustains for CPU offload, from its DRAM channels and data rate, its cores and
// ISA, and its PCIe link, each rate a published measurement (docs/serving-offload.md, "The host rule"). The
// llama.cpp offload validator (modeler/io/llama_offload_validation.cc) builds every row's host with it, and the
// host and offload-machine profiles (hwprofiles/hosts/, hwprofiles/machines/) state values derived by it (a test
// checks each profile against the rule).
#pragma once

#include <string>
#include <vector>

#include "modeler/serving/serving_types.h"

namespace shardplan::serving {

/// Two memory platforms sustain different fractions of their channel peak: a client part with two 64-bit DDR
/// channels, and a many-channel part (four or more channels: HEDT, workstation and server, with a mesh or an IO
/// die between the cores and the controllers, and higher loaded latency).
enum class MemoryPlatform { client, many_channel };
MemoryPlatform memory_platform(int channels);  // <= 2 channels: client; more: many_channel

/// The SIMD ISA llama.cpp's CPU matmuls run on: AVX2 (every x86 CPU of the rows) or AVX-512 (Zen 4).
enum class CpuIsa { avx2, avx512 };

/// JEDEC arithmetic: channels x 8 bytes (a 64-bit channel; a DDR5 DIMM's two 32-bit sub-channels count as one)
/// x data rate (MT/s), in GB/s.
double dram_peak_gbps(int channels, double mega_transfers_per_s);

/// STREAM-class sustained bandwidth (copy/triad, AIDA64 read) as a fraction of the channel peak: for traffic
/// that is not llama.cpp's (FlexGen's PyTorch CPU attention, pageable staging copies).
double stream_fraction(MemoryPlatform p);

/// llama.cpp's CPU token generation: bytes read per token x tokens/s over the channel peak, from llama-bench /
/// llama-cli runs on CPU only. This is the rate the CPU backend streams weights and KV in decode.
double llama_cpu_decode_fraction(MemoryPlatform p);

/// Per-core rate of llama.cpp-family CPU matmuls on a prompt (PP-512 tokens/s x 2 x parameters / threads), GFLOP/s.
double llama_cpu_gflops_per_core(CpuIsa isa);

/// PCIe link rate per direction, GB/s: lanes x transfer rate x 128/130 (Gen 3-5) / 8.
double pcie_link_gbps(int gen, int lanes);

/// Pinned host-to-device copies (cudaMemcpy, copy engine) as a fraction of the link rate, from nvbandwidth.
double pinned_h2d_fraction(int gen);

/// What a host states, the inputs of the rule.
struct HostSpec {
  std::string name;
  double memory_gib = 64;
  double dram_peak_gbps = 0;  // channels x 8 B x MT/s, or a figure the source states
  int memory_channels = 2;
  int cores = 0;  // physical cores: llama.cpp's default threads (common.cpp postprocess_cpu_params: cpu_get_num_math)
  CpuIsa isa = CpuIsa::avx2;
  int pcie_gen = 4;
  double pcie_link_gbps = 31.5;  // per direction: pcie_link_gbps(gen, lanes), or the GPU profile's host link
  /// > 0: what this machine's CPU was measured to sustain in llama.cpp-family token generation (GB/s, a
  /// MachineDecodeRun), used for the host's DRAM rate instead of the rule's fraction x peak.
  double measured_decode_gbps = 0;
};

/// A named machine (a serving-runs row's host.machine) with a CPU-only token-generation run published on it:
/// tokens/s x the bytes a token reads is what that machine's CPU sustains in decode, its DIMM population and
/// speed included. It measures the machine, not the part, so only rows that name the machine take it.
struct MachineDecodeRun {
  std::string name;         // the key a row's host.machine names it by
  std::string machine;      // whose machine, in words
  std::string cpu;          // its CPU, as a row's host.cpu states it (the parser checks the two agree)
  double tokens_per_s = 0;
  double bytes_per_token = 0;
  std::string source;       // where the run is published
  double gbps() const { return tokens_per_s * bytes_per_token / 1e9; }
};

/// The named machines (host_rates.cc cites each run and derives its bytes per token).
const std::vector<MachineDecodeRun>& machine_decode_runs();

/// The machine of that name, or nullptr.
const MachineDecodeRun* machine_decode_run(const std::string& name);

/// The host llama.cpp runs on: DRAM at llama.cpp's CPU decode rate (the machine's measured rate when the spec
/// has one, else the rule's fraction x peak), matmuls at its per-core rate x cores, pinned copies at the measured
/// fraction of the link.
Host llama_host(const HostSpec& s);

}  // namespace shardplan::serving
