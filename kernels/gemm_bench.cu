// GEMM through cuBLASLt (the library PyTorch and Megatron call), D = A^T B in the TN layout fp8 requires:
// A stored k x m, B k x n, D m x n, column-major, fp32 accumulation. dtypes: bf16, fp16, tf32 (fp32 data),
// fp8 e4m3 (bf16 output; compute capability 8.9+, skipped elsewhere). Shapes: the cube of --sizes, or the exact
// "m,n,k" lines of --shapes FILE (e.g. the GEMMs of a model and plan).
#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <cmath>
#include <cstdio>
#include <fstream>

#include "kernels/cuda_common.cuh"

namespace shardplan::bench {
namespace {

#define LT_CHECK(call)                                                                                    \
  do {                                                                                                    \
    const cublasStatus_t s_ = (call);                                                                     \
    if (s_ != CUBLAS_STATUS_SUCCESS)                                                                      \
      throw BenchFailure(std::string(__FILE__) + ":" + std::to_string(__LINE__) + ": cuBLASLt status " + \
                         std::to_string(static_cast<int>(s_)) + " in " #call);                            \
  } while (0)

struct Shape {
  long long m, n, k;
};

// Inputs in {-1, 0, 1}: exact in every dtype, and D(i,j) is an integer the host recomputes for the check.
__host__ __device__ inline float a_at(long long i, long long p) { return float((i + 2 * p) % 3) - 1.0f; }
__host__ __device__ inline float b_at(long long p, long long j) { return float((2 * j + p) % 3) - 1.0f; }

template <class T>
__global__ void fill(T* x, long long rows, long long inner, bool is_a) {
  // element (p, r) of a k x rows column-major matrix: index p + r * inner
  const long long total = rows * inner;
  for (long long idx = blockIdx.x * 1LL * blockDim.x + threadIdx.x; idx < total; idx += 1LL * gridDim.x * blockDim.x) {
    const long long p = idx % inner, r = idx / inner;
    x[idx] = T(is_a ? a_at(r, p) : b_at(p, r));
  }
}

struct DtypeSpec {
  const char* name;
  cudaDataType_t ab, d;
  cublasComputeType_t compute;
  size_t ab_size, d_size;
};

const DtypeSpec kSpecs[] = {
    {"bf16", CUDA_R_16BF, CUDA_R_16BF, CUBLAS_COMPUTE_32F, 2, 2},
    {"fp16", CUDA_R_16F, CUDA_R_16F, CUBLAS_COMPUTE_32F, 2, 2},
    {"tf32", CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32, 4, 4},
    {"fp8", CUDA_R_8F_E4M3, CUDA_R_16BF, CUBLAS_COMPUTE_32F, 1, 2},
};

void fill_inputs(const DtypeSpec& s, void* a, void* b, const Shape& sh) {
  const unsigned grid = 1024, threads = 256;
  if (s.ab == CUDA_R_16BF) {
    fill<<<grid, threads>>>(static_cast<__nv_bfloat16*>(a), sh.m, sh.k, true);
    fill<<<grid, threads>>>(static_cast<__nv_bfloat16*>(b), sh.n, sh.k, false);
  } else if (s.ab == CUDA_R_16F) {
    fill<<<grid, threads>>>(static_cast<__half*>(a), sh.m, sh.k, true);
    fill<<<grid, threads>>>(static_cast<__half*>(b), sh.n, sh.k, false);
  } else if (s.ab == CUDA_R_32F) {
    fill<<<grid, threads>>>(static_cast<float*>(a), sh.m, sh.k, true);
    fill<<<grid, threads>>>(static_cast<float*>(b), sh.n, sh.k, false);
  } else {
    fill<<<grid, threads>>>(static_cast<__nv_fp8_e4m3*>(a), sh.m, sh.k, true);
    fill<<<grid, threads>>>(static_cast<__nv_fp8_e4m3*>(b), sh.n, sh.k, false);
  }
  CUDA_CHECK(cudaGetLastError());
}

double read_d(const DtypeSpec& s, const void* d, long long idx) {
  if (s.d == CUDA_R_32F) {
    float v;
    CUDA_CHECK(cudaMemcpy(&v, static_cast<const float*>(d) + idx, 4, cudaMemcpyDeviceToHost));
    return v;
  }
  if (s.d == CUDA_R_16F) {
    __half v;
    CUDA_CHECK(cudaMemcpy(&v, static_cast<const __half*>(d) + idx, 2, cudaMemcpyDeviceToHost));
    return __half2float(v);
  }
  __nv_bfloat16 v;
  CUDA_CHECK(cudaMemcpy(&v, static_cast<const __nv_bfloat16*>(d) + idx, 2, cudaMemcpyDeviceToHost));
  return __bfloat162float(v);
}

std::vector<Shape> read_shapes(const Args& args) {
  std::vector<Shape> out;
  if (args.has("shapes")) {
    std::ifstream in(args.str("shapes", ""));
    if (!in) throw BenchFailure("--shapes: cannot open " + args.str("shapes", ""));
    std::string line;
    for (int no = 1; std::getline(in, line); ++no) {
      if (line.empty() || line[0] == '#') continue;
      Shape s{};
      if (std::sscanf(line.c_str(), "%lld,%lld,%lld", &s.m, &s.n, &s.k) != 3 || s.m <= 0 || s.n <= 0 || s.k <= 0)
        throw BenchFailure(args.str("shapes", "") + ":" + std::to_string(no) + ": expected m,n,k");
      out.push_back(s);
    }
    return out;
  }
  std::vector<long long> sizes;
  for (const auto& v : split(args.str("sizes", "512,1024,2048,4096,8192"), ',')) sizes.push_back(std::stoll(v));
  for (auto m : sizes)
    for (auto n : sizes)
      for (auto k : sizes) out.push_back({m, n, k});
  return out;
}

int body(int argc, char** argv) {
  const Args args(argc, argv);
  args.check_known({"dtypes", "sizes", "shapes", "warmup", "reps", "skip-done", "device", "help"},
                   "shardplan_bench_gemm: cuBLASLt GEMMs, one JSON line per result\n"
                   "  --dtypes LIST   bf16,fp16,tf32,fp8 (default all the GPU supports)\n"
                   "  --sizes LIST    m, n and k values of the shape cube (default 512,1024,2048,4096,8192)\n"
                   "  --shapes FILE   exact shapes instead, one 'm,n,k' per line\n"
                   "  --warmup N (default 3) --reps R (default 5) --device D --skip-done FILE\n");
  const int device = static_cast<int>(args.integer("device", 0));
  CUDA_CHECK(cudaSetDevice(device));
  cudaDeviceProp prop{};
  CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  Reporter rep("gemm", "cublasLt", args);
  auto ctx = cuda_context(device);
  ctx["cublasLt"] = std::to_string(cublasLtGetVersion());
  rep.context(ctx);
  const auto shapes = read_shapes(args);
  const int warmup = static_cast<int>(args.integer("warmup", 3)), reps = static_cast<int>(args.integer("reps", 5));
  long long max_mk = 0, max_nk = 0, max_mn = 0;
  for (const auto& s : shapes) {
    max_mk = std::max(max_mk, s.m * s.k);
    max_nk = std::max(max_nk, s.n * s.k);
    max_mn = std::max(max_mn, s.m * s.n);
  }
  void *a = nullptr, *b = nullptr, *d = nullptr, *ws = nullptr;
  const size_t ws_bytes = 64ull << 20;
  CUDA_CHECK(cudaMalloc(&a, max_mk * 4));
  CUDA_CHECK(cudaMalloc(&b, max_nk * 4));
  CUDA_CHECK(cudaMalloc(&d, max_mn * 4));
  CUDA_CHECK(cudaMalloc(&ws, ws_bytes));
  cublasLtHandle_t lt;
  LT_CHECK(cublasLtCreate(&lt));
  const bool fp8_ok = prop.major * 10 + prop.minor >= 89;
  for (const std::string& dname : split(args.str("dtypes", fp8_ok ? "bf16,fp16,tf32,fp8" : "bf16,fp16,tf32"), ',')) {
    const DtypeSpec* spec = nullptr;
    for (const auto& s : kSpecs)
      if (dname == s.name) spec = &s;
    if (!spec) throw BenchFailure("--dtypes: unknown dtype '" + dname + "'");
    if (dname == "fp8" && !fp8_ok) {
      std::fprintf(stderr, "fp8 GEMMs need compute capability 8.9+; skipped on %s\n", prop.name);
      continue;
    }
    for (const Shape& sh : shapes) {
      const nlohmann::json params = {{"dtype", dname}, {"m", sh.m}, {"n", sh.n}, {"k", sh.k}};
      if (rep.done(params)) continue;
      cublasLtMatmulDesc_t op;
      LT_CHECK(cublasLtMatmulDescCreate(&op, spec->compute, CUDA_R_32F));
      const cublasOperation_t t = CUBLAS_OP_T, nt = CUBLAS_OP_N;
      LT_CHECK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &t, sizeof(t)));
      LT_CHECK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &nt, sizeof(nt)));
      cublasLtMatrixLayout_t la, lb, ld;
      LT_CHECK(cublasLtMatrixLayoutCreate(&la, spec->ab, sh.k, sh.m, sh.k));
      LT_CHECK(cublasLtMatrixLayoutCreate(&lb, spec->ab, sh.k, sh.n, sh.k));
      LT_CHECK(cublasLtMatrixLayoutCreate(&ld, spec->d, sh.m, sh.n, sh.m));
      cublasLtMatmulPreference_t pref;
      LT_CHECK(cublasLtMatmulPreferenceCreate(&pref));
      LT_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws_bytes,
                                                    sizeof(ws_bytes)));
      cublasLtMatmulHeuristicResult_t heur{};
      int found = 0;
      const cublasStatus_t hs = cublasLtMatmulAlgoGetHeuristic(lt, op, la, lb, ld, ld, pref, 1, &heur, &found);
      if (hs == CUBLAS_STATUS_SUCCESS && found > 0) {
        fill_inputs(*spec, a, b, sh);
        const float alpha = 1.0f, beta = 0.0f;
        const auto launch = [&] {
          LT_CHECK(cublasLtMatmul(lt, op, &alpha, a, la, b, lb, &beta, d, ld, d, ld, &heur.algo, ws, ws_bytes, 0));
        };
        launch();
        CUDA_CHECK(cudaDeviceSynchronize());
        long long wrong = 0;
        for (int s = 0; s < 16; ++s) {
          const long long i = (sh.m - 1) * s / 15, j = (sh.n - 1) * ((s * 7) % 16) / 15;
          double ref = 0;
          for (long long p = 0; p < sh.k; ++p) ref += double(a_at(i, p)) * b_at(p, j);
          if (std::abs(read_d(*spec, d, i + j * sh.m) - ref) > 1e-2 * std::abs(ref) + 1.0) ++wrong;
        }
        const Timing tm = time_cuda(launch, 0, warmup, reps);
        const double flops = 2.0 * sh.m * sh.n * sh.k;
        const double bytes = double(sh.m * sh.k + sh.k * sh.n) * spec->ab_size + double(sh.m * sh.n) * spec->d_size;
        rep.result(params, tm, flops, bytes, wrong);
      } else {
        std::fprintf(stderr, "no cuBLASLt algorithm for %s %lldx%lldx%lld; skipped\n", dname.c_str(), sh.m, sh.n, sh.k);
      }
      cublasLtMatmulPreferenceDestroy(pref);
      cublasLtMatrixLayoutDestroy(la);
      cublasLtMatrixLayoutDestroy(lb);
      cublasLtMatrixLayoutDestroy(ld);
      cublasLtMatmulDescDestroy(op);
    }
  }
  cublasLtDestroy(lt);
  CUDA_CHECK(cudaFree(a));
  CUDA_CHECK(cudaFree(b));
  CUDA_CHECK(cudaFree(d));
  CUDA_CHECK(cudaFree(ws));
  return 0;
}

}  // namespace
}  // namespace shardplan::bench

int main(int argc, char** argv) { return shardplan::bench::guarded_main("shardplan_bench_gemm", shardplan::bench::body, argc, argv); }
