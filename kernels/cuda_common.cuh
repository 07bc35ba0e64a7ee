// CUDA parts of the harness: error checks that carry file:line up to main, event timing, the context record.
#pragma once

#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

#include "kernels/harness.h"

namespace shardplan::bench {

/// A failed CUDA/library call: thrown with file:line and caught in main, which prints it and exits 1, so a
/// failure is reported where it happened instead of corrupting the rest of the sweep.
struct BenchFailure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

#define CUDA_CHECK(call)                                                                                   \
  do {                                                                                                     \
    const cudaError_t e_ = (call);                                                                         \
    if (e_ != cudaSuccess)                                                                                 \
      throw ::shardplan::bench::BenchFailure(std::string(__FILE__) + ":" + std::to_string(__LINE__) +      \
                                             ": CUDA failure '" + cudaGetErrorString(e_) + "' in " #call); \
  } while (0)

/// Times `launch` on `stream` with CUDA events: `warmup` untimed launches, then `reps` samples of enough
/// back-to-back launches to last ~target_s each.
template <class F>
Timing time_cuda(F&& launch, cudaStream_t stream, int warmup, int reps, double target_s = 0.01) {
  cudaEvent_t start, stop;
  CUDA_CHECK(cudaEventCreate(&start));
  CUDA_CHECK(cudaEventCreate(&stop));
  const auto run = [&](int iters) {
    CUDA_CHECK(cudaEventRecord(start, stream));
    for (int i = 0; i < iters; ++i) launch();
    CUDA_CHECK(cudaEventRecord(stop, stream));
    CUDA_CHECK(cudaEventSynchronize(stop));
    float ms = 0;
    CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
    return ms * 1e-3 / iters;
  };
  for (int i = 0; i < warmup; ++i) launch();
  const int iters = iters_for(run(1), target_s);
  std::vector<double> samples;
  for (int r = 0; r < reps; ++r) samples.push_back(run(iters));
  CUDA_CHECK(cudaEventDestroy(start));
  CUDA_CHECK(cudaEventDestroy(stop));
  return summarize(samples, iters);
}

/// GPU name, compute capability, SMs, clocks, driver and runtime versions, host: the context record fields.
nlohmann::json cuda_context(int device);

/// Runs `body` and turns a BenchFailure into "host: <message>" on stderr and exit status 1.
int guarded_main(const char* name, int (*body)(int, char**), int argc, char** argv);

}  // namespace shardplan::bench
