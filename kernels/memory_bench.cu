// Memory-bound kernels: STREAM copy and triad, and the memory-bound ops of a transformer layer (RMSNorm,
// LayerNorm, softmax over rows, an elementwise activation). Bytes are the analytic minimum each kernel must move
// (read inputs once, write outputs once), the number the memory efficiency table divides by.
#include <cuda_bf16.h>

#include <cmath>
#include <cstdio>

#include "kernels/cuda_common.cuh"

namespace shardplan::bench {
namespace {

constexpr int kHidden = 4096;  // row length of the row-wise ops (a 7-8B model's hidden size)
constexpr int kThreads = 256;

__host__ __device__ inline float input_at(size_t i) { return static_cast<float>(static_cast<int>(i * 7 % 13) - 6) / 8.0f; }

__global__ void fill_f32(float* x, size_t n) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) x[i] = input_at(i);
}
__global__ void fill_bf16(__nv_bfloat16* x, size_t n) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
    x[i] = __float2bfloat16(input_at(i));
}
__global__ void copy_k(const float* __restrict__ a, float* __restrict__ b, size_t n) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) b[i] = a[i];
}
__global__ void triad_k(const float* __restrict__ b, const float* __restrict__ c, float* __restrict__ a, size_t n) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) a[i] = b[i] + 3.0f * c[i];
}
__global__ void silu_k(const __nv_bfloat16* __restrict__ x, __nv_bfloat16* __restrict__ y, size_t n) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    const float v = __bfloat162float(x[i]);
    y[i] = __float2bfloat16(v / (1.0f + __expf(-v)));
  }
}

__device__ float block_sum(float v) {
  __shared__ float s[kThreads / 32];
  for (int o = 16; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffff, v, o);
  if (threadIdx.x % 32 == 0) s[threadIdx.x / 32] = v;
  __syncthreads();
  float t = 0;
  for (int w = 0; w < kThreads / 32; ++w) t += s[w];
  __syncthreads();
  return t;
}
__device__ float block_max(float v) {
  __shared__ float s[kThreads / 32];
  for (int o = 16; o > 0; o /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffff, v, o));
  if (threadIdx.x % 32 == 0) s[threadIdx.x / 32] = v;
  __syncthreads();
  float t = -INFINITY;
  for (int w = 0; w < kThreads / 32; ++w) t = fmaxf(t, s[w]);
  __syncthreads();
  return t;
}

/// One block per row. mode 0 RMSNorm, 1 LayerNorm, 2 softmax (weights are 1, so the check is simple).
__global__ void row_k(const __nv_bfloat16* __restrict__ x, __nv_bfloat16* __restrict__ y, int mode) {
  const __nv_bfloat16* xr = x + size_t(blockIdx.x) * kHidden;
  __nv_bfloat16* yr = y + size_t(blockIdx.x) * kHidden;
  float v[kHidden / kThreads];
  float sum = 0, sq = 0, mx = -INFINITY;
  for (int j = 0; j < kHidden / kThreads; ++j) {
    v[j] = __bfloat162float(xr[threadIdx.x + j * kThreads]);
    sum += v[j];
    sq += v[j] * v[j];
    mx = fmaxf(mx, v[j]);
  }
  if (mode == 2) {
    mx = block_max(mx);
    float e = 0;
    for (int j = 0; j < kHidden / kThreads; ++j) e += __expf(v[j] - mx);
    const float inv = 1.0f / block_sum(e);
    for (int j = 0; j < kHidden / kThreads; ++j) yr[threadIdx.x + j * kThreads] = __float2bfloat16(__expf(v[j] - mx) * inv);
    return;
  }
  const float mean = mode == 1 ? block_sum(sum) / kHidden : 0.0f;
  const float var = block_sum(sq) / kHidden - mean * mean;
  const float r = rsqrtf(var + 1e-5f);
  for (int j = 0; j < kHidden / kThreads; ++j) yr[threadIdx.x + j * kThreads] = __float2bfloat16((v[j] - mean) * r);
}

/// Host reference of one output element.
double reference(const std::string& op, size_t i) {
  if (op == "copy") return input_at(i);
  if (op == "triad") return input_at(i) + 3.0 * input_at(i);
  if (op == "elementwise") {
    const double v = input_at(i);
    return v / (1 + std::exp(-v));
  }
  const size_t row = i / kHidden * kHidden;
  double sum = 0, sq = 0, mx = -1e30;
  for (size_t j = row; j < row + kHidden; ++j) {
    sum += input_at(j);
    sq += input_at(j) * input_at(j);
    mx = std::max(mx, double(input_at(j)));
  }
  if (op == "softmax") {
    double e = 0;
    for (size_t j = row; j < row + kHidden; ++j) e += std::exp(input_at(j) - mx);
    return std::exp(input_at(i) - mx) / e;
  }
  const double mean = op == "layernorm" ? sum / kHidden : 0.0;
  return (input_at(i) - mean) / std::sqrt(sq / kHidden - mean * mean + 1e-5);
}

int body(int argc, char** argv) {
  const Args args(argc, argv);
  args.check_known({"ops", "min-bytes", "max-bytes", "factor", "warmup", "reps", "skip-done", "device", "help"},
                   "shardplan_bench_memory: streaming kernels, one JSON line per result\n"
                   "  --ops LIST        copy,triad,rmsnorm,layernorm,softmax,elementwise (default all)\n"
                   "  --min-bytes SIZE  smallest bytes moved (default 1M)   --max-bytes SIZE (default 2G)\n"
                   "  --factor F (default 2) --warmup N (default 3) --reps R (default 5) --device D\n"
                   "  --skip-done FILE  resume: skip rows already in FILE\n");
  const int device = static_cast<int>(args.integer("device", 0));
  CUDA_CHECK(cudaSetDevice(device));
  Reporter rep("memory", "cuda", args);
  rep.context(cuda_context(device));
  const auto sizes = size_sweep(args.integer("min-bytes", 1 << 20), args.integer("max-bytes", 2LL << 30),
                                args.number("factor", 2));
  const int warmup = static_cast<int>(args.integer("warmup", 3)), reps = static_cast<int>(args.integer("reps", 5));
  const size_t max_bytes = sizes.empty() ? 0 : sizes.back();
  void *a = nullptr, *b = nullptr, *c = nullptr;
  CUDA_CHECK(cudaMalloc(&a, max_bytes / 2 + 4096));
  CUDA_CHECK(cudaMalloc(&b, max_bytes / 2 + 4096));
  CUDA_CHECK(cudaMalloc(&c, max_bytes / 2 + 4096));
  for (const std::string& op : split(args.str("ops", "copy,triad,rmsnorm,layernorm,softmax,elementwise"), ',')) {
    const bool f32 = op == "copy" || op == "triad";
    const bool rows = op == "rmsnorm" || op == "layernorm" || op == "softmax";
    if (!f32 && !rows && op != "elementwise") throw BenchFailure("--ops: unknown op '" + op + "'");
    const int streams = op == "triad" ? 3 : 2;  // arrays touched once each
    const size_t elt = f32 ? 4 : 2;
    for (const auto want : sizes) {
      size_t n = want / (streams * elt);
      if (rows) n = n / kHidden * kHidden;
      if (n == 0) continue;
      const double bytes = double(n) * elt * streams;
      const nlohmann::json params = {{"op", op}, {"elems", n}, {"dtype", f32 ? "fp32" : "bf16"}};
      if (rep.done(params)) continue;
      const unsigned grid = 4 * 132 * 8;
      if (f32) {
        fill_f32<<<grid, kThreads>>>(static_cast<float*>(a), n);
        fill_f32<<<grid, kThreads>>>(static_cast<float*>(c), n);
      } else {
        fill_bf16<<<grid, kThreads>>>(static_cast<__nv_bfloat16*>(a), n);
      }
      const auto launch = [&] {
        if (op == "copy") copy_k<<<grid, kThreads>>>(static_cast<float*>(a), static_cast<float*>(b), n);
        else if (op == "triad") triad_k<<<grid, kThreads>>>(static_cast<float*>(a), static_cast<float*>(c), static_cast<float*>(b), n);
        else if (op == "elementwise") silu_k<<<grid, kThreads>>>(static_cast<__nv_bfloat16*>(a), static_cast<__nv_bfloat16*>(b), n);
        else row_k<<<unsigned(n / kHidden), kThreads>>>(static_cast<__nv_bfloat16*>(a), static_cast<__nv_bfloat16*>(b),
                                                       op == "rmsnorm" ? 0 : op == "layernorm" ? 1 : 2);
      };
      launch();
      CUDA_CHECK(cudaGetLastError());
      CUDA_CHECK(cudaDeviceSynchronize());
      long long wrong = 0;
      for (int s = 0; s < 16; ++s) {
        const size_t i = (n - 1) * s / 15;
        double got = 0;
        if (f32) {
          float v;
          CUDA_CHECK(cudaMemcpy(&v, static_cast<float*>(b) + i, 4, cudaMemcpyDeviceToHost));
          got = v;
        } else {
          __nv_bfloat16 v;
          CUDA_CHECK(cudaMemcpy(&v, static_cast<__nv_bfloat16*>(b) + i, 2, cudaMemcpyDeviceToHost));
          got = __bfloat162float(v);
        }
        const double ref = reference(op, i);
        if (std::abs(got - ref) > 1e-2 * std::abs(ref) + 1e-3) ++wrong;
      }
      const Timing t = time_cuda(launch, 0, warmup, reps);
      rep.result(params, t, 0.0, bytes, wrong);
    }
  }
  CUDA_CHECK(cudaFree(a));
  CUDA_CHECK(cudaFree(b));
  CUDA_CHECK(cudaFree(c));
  return 0;
}

}  // namespace
}  // namespace shardplan::bench

int main(int argc, char** argv) { return shardplan::bench::guarded_main("shardplan_bench_memory", shardplan::bench::body, argc, argv); }
