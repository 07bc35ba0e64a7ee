#include "kernels/cuda_common.cuh"

#include <cstdio>

namespace shardplan::bench {

nlohmann::json cuda_context(int device) {
  cudaDeviceProp p{};
  CUDA_CHECK(cudaGetDeviceProperties(&p, device));
  int driver = 0, runtime = 0, sm_khz = 0, mem_khz = 0;
  CUDA_CHECK(cudaDriverGetVersion(&driver));
  CUDA_CHECK(cudaRuntimeGetVersion(&runtime));
  // Attributes may be unavailable on some drivers; 0 then means "not reported".
  if (cudaDeviceGetAttribute(&sm_khz, cudaDevAttrClockRate, device) != cudaSuccess) sm_khz = 0;
  if (cudaDeviceGetAttribute(&mem_khz, cudaDevAttrMemoryClockRate, device) != cudaSuccess) mem_khz = 0;
  cudaGetLastError();
  return {{"gpu", p.name},
          {"compute_capability", std::to_string(p.major) + "." + std::to_string(p.minor)},
          {"sm_count", p.multiProcessorCount},
          {"memory_gib", static_cast<double>(p.totalGlobalMem) / (1024.0 * 1024 * 1024)},
          {"clocks_mhz", {{"sm_max", sm_khz / 1000}, {"memory_max", mem_khz / 1000}}},
          {"driver", std::to_string(driver / 1000) + "." + std::to_string(driver % 1000 / 10)},
          {"cuda", std::to_string(runtime / 1000) + "." + std::to_string(runtime % 1000 / 10)},
          {"hosts", {hostname()}},
          {"device", device}};
}

int guarded_main(const char* name, int (*body)(int, char**), int argc, char** argv) {
  try {
    return body(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s on %s: %s\n", name, hostname().c_str(), e.what());
    return 1;
  }
}

}  // namespace shardplan::bench
