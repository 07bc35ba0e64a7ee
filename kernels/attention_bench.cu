// Fused attention forward, causal or not, with GQA, head dim 64 or 128: a flash-style kernel of our own (tiles of
// K/V in shared memory, online softmax, no S x S matrix in memory; FlashAttention, Dao et al. 2022, Alg. 1).
// It runs on CUDA cores, not tensor cores, so it is far slower than FlashAttention-2/3 or cuDNN: its rows carry
// "kernel": "reference" and `calibrate fit` does not write them into the flash2/flash3 tables. cuDNN's fused
// attention needs the cudnn-frontend graph API, which this build does not have; production-kernel rows come from
// kernels/attention_torch.py (PyTorch SDPA, flash backend). Backward is measured there too.
//
// FLOPs follow the FlashAttention papers: forward 4 * batch * heads * seq^2 * head_dim, halved when causal.
#include <cuda_bf16.h>

#include <cmath>
#include <cstdio>

#include "kernels/cuda_common.cuh"

namespace shardplan::bench {
namespace {

constexpr int kBlock = 64;  // query rows per block = keys per tile

__host__ __device__ inline float qkv_at(long long i, int which) {
  return float(static_cast<int>((i * (7 + which) + which) % 17) - 8) / 16.0f;
}

__global__ void fill(__nv_bfloat16* x, long long n, int which) {
  for (long long i = blockIdx.x * 1LL * blockDim.x + threadIdx.x; i < n; i += 1LL * gridDim.x * blockDim.x)
    x[i] = __float2bfloat16(qkv_at(i, which));
}

/// One thread per query row; Q, K, V, O are [batch, seq, heads, D] (kv_heads for K and V).
template <int D>
__global__ void attention_fwd(const __nv_bfloat16* __restrict__ q, const __nv_bfloat16* __restrict__ k,
                              const __nv_bfloat16* __restrict__ v, __nv_bfloat16* __restrict__ o, int seq, int heads,
                              int kv_heads, bool causal) {
  __shared__ __nv_bfloat16 ks[kBlock][D];
  __shared__ __nv_bfloat16 vs[kBlock][D];
  const int b = blockIdx.z, h = blockIdx.y, kvh = h / (heads / kv_heads);
  const int row = blockIdx.x * kBlock + threadIdx.x;
  const float scale = rsqrtf(float(D));
  float qr[D], acc[D];
  const size_t qoff = ((size_t(b) * seq + min(row, seq - 1)) * heads + h) * D;
  for (int d = 0; d < D; ++d) {
    qr[d] = __bfloat162float(q[qoff + d]) * scale;
    acc[d] = 0;
  }
  float m = -INFINITY, l = 0;
  const int last_tile = causal ? blockIdx.x : (seq - 1) / kBlock;
  for (int tile = 0; tile <= last_tile; ++tile) {
    for (int idx = threadIdx.x; idx < kBlock * D; idx += kBlock) {
      const int r = idx / D, d = idx % D, key = tile * kBlock + r;
      const size_t off = ((size_t(b) * seq + min(key, seq - 1)) * kv_heads + kvh) * D + d;
      ks[r][d] = k[off];
      vs[r][d] = v[off];
    }
    __syncthreads();
    for (int r = 0; r < kBlock; ++r) {
      const int key = tile * kBlock + r;
      if (key >= seq || (causal && key > row)) continue;
      float s = 0;
      for (int d = 0; d < D; ++d) s += qr[d] * __bfloat162float(ks[r][d]);
      const float m_new = fmaxf(m, s), corr = __expf(m - m_new), p = __expf(s - m_new);
      l = l * corr + p;
      for (int d = 0; d < D; ++d) acc[d] = acc[d] * corr + p * __bfloat162float(vs[r][d]);
      m = m_new;
    }
    __syncthreads();
  }
  if (row >= seq) return;
  for (int d = 0; d < D; ++d) o[qoff + d] = __float2bfloat16(acc[d] / l);
}

/// Host reference of output row `row` (batch b, head h), one element d.
double reference(int b, int h, int row, int d, int seq, int heads, int kv_heads, int hd, bool causal) {
  const int kvh = h / (heads / kv_heads);
  const auto idx = [&](int s, int hh, int nh, int dd) { return ((static_cast<long long>(b) * seq + s) * nh + hh) * hd + dd; };
  std::vector<double> scores;
  double mx = -1e30;
  for (int key = 0; key < seq && (!causal || key <= row); ++key) {
    double s = 0;
    for (int dd = 0; dd < hd; ++dd)
      s += double(qkv_at(idx(row, h, heads, dd), 0)) * qkv_at(idx(key, kvh, kv_heads, dd), 1);
    scores.push_back(s / std::sqrt(double(hd)));
    mx = std::max(mx, scores.back());
  }
  double num = 0, den = 0;
  for (size_t key = 0; key < scores.size(); ++key) {
    const double p = std::exp(scores[key] - mx);
    den += p;
    num += p * qkv_at(idx(int(key), kvh, kv_heads, d), 2);
  }
  return num / den;
}

int body(int argc, char** argv) {
  const Args args(argc, argv);
  args.check_known({"seqs", "head-dims", "batch", "heads", "kv-heads", "causal", "warmup", "reps", "skip-done",
                    "device", "help"},
                   "shardplan_bench_attention: reference flash-style attention forward, one JSON line per result\n"
                   "  --seqs LIST (default 512,1024,2048,4096)  --head-dims LIST (64,128)  --batch B (default 4)\n"
                   "  --heads H (default 16)  --kv-heads G (default 4: GQA)  --causal LIST (default 1,0)\n"
                   "  --warmup N (default 2) --reps R (default 3) --device D --skip-done FILE\n");
  const int device = static_cast<int>(args.integer("device", 0));
  CUDA_CHECK(cudaSetDevice(device));
  Reporter rep("attention", "shardplan-reference", args);
  rep.context(cuda_context(device));
  const int batch = static_cast<int>(args.integer("batch", 4)), heads = static_cast<int>(args.integer("heads", 16));
  const int kv_heads = static_cast<int>(args.integer("kv-heads", 4));
  if (kv_heads <= 0 || heads % kv_heads) throw BenchFailure("--kv-heads must divide --heads");
  const int warmup = static_cast<int>(args.integer("warmup", 2)), reps = static_cast<int>(args.integer("reps", 3));
  for (const auto& hd_s : split(args.str("head-dims", "64,128"), ',')) {
    const int hd = std::stoi(hd_s);
    if (hd != 64 && hd != 128) throw BenchFailure("--head-dims: 64 or 128");
    for (const auto& seq_s : split(args.str("seqs", "512,1024,2048,4096"), ',')) {
      const int seq = std::stoi(seq_s);
      for (const auto& causal_s : split(args.str("causal", "1,0"), ',')) {
        const bool causal = causal_s == "1";
        const nlohmann::json params = {{"dir", "fwd"}, {"batch", batch}, {"heads", heads}, {"kv_heads", kv_heads},
                                       {"seq", seq}, {"head_dim", hd}, {"causal", causal}, {"dtype", "bf16"}};
        if (rep.done(params)) continue;
        const long long nq = 1LL * batch * seq * heads * hd, nkv = 1LL * batch * seq * kv_heads * hd;
        __nv_bfloat16 *q, *k, *v, *o;
        CUDA_CHECK(cudaMalloc(&q, nq * 2));
        CUDA_CHECK(cudaMalloc(&k, nkv * 2));
        CUDA_CHECK(cudaMalloc(&v, nkv * 2));
        CUDA_CHECK(cudaMalloc(&o, nq * 2));
        fill<<<1024, 256>>>(q, nq, 0);
        fill<<<1024, 256>>>(k, nkv, 1);
        fill<<<1024, 256>>>(v, nkv, 2);
        const dim3 grid((seq + kBlock - 1) / kBlock, heads, batch);
        const auto launch = [&] {
          if (hd == 64) attention_fwd<64><<<grid, kBlock>>>(q, k, v, o, seq, heads, kv_heads, causal);
          else attention_fwd<128><<<grid, kBlock>>>(q, k, v, o, seq, heads, kv_heads, causal);
        };
        launch();
        CUDA_CHECK(cudaGetLastError());
        CUDA_CHECK(cudaDeviceSynchronize());
        long long wrong = 0;
        for (int s = 0; s < 8; ++s) {
          const int b = s % batch, h = (s * 5) % heads, row = (seq - 1) * s / 7, d = (s * 13) % hd;
          __nv_bfloat16 got;
          CUDA_CHECK(cudaMemcpy(&got, o + ((static_cast<long long>(b) * seq + row) * heads + h) * hd + d, 2, cudaMemcpyDeviceToHost));
          const double ref = reference(b, h, row, d, seq, heads, kv_heads, hd, causal);
          if (std::abs(__bfloat162float(got) - ref) > 2e-2 * std::abs(ref) + 1e-2) ++wrong;
        }
        const Timing t = time_cuda(launch, 0, warmup, reps, 0.02);
        const double flops = 4.0 * batch * heads * double(seq) * seq * hd * (causal ? 0.5 : 1.0);
        rep.result(params, t, flops, double(2 * nq + 2 * nkv) * 2, wrong, {{"kernel", "reference"}});
        CUDA_CHECK(cudaFree(q));
        CUDA_CHECK(cudaFree(k));
        CUDA_CHECK(cudaFree(v));
        CUDA_CHECK(cudaFree(o));
      }
    }
  }
  return 0;
}

}  // namespace
}  // namespace shardplan::bench

int main(int argc, char** argv) {
  return shardplan::bench::guarded_main("shardplan_bench_attention", shardplan::bench::body, argc, argv);
}
