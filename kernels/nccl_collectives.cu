// Collective benchmark, NCCL backend: one process per GPU (launched by mpirun or srun), the same sweep, buffer
// conventions and exact checks as the MPI backend (kernels/coll_harness.h). Groups are made with ncclCommSplit;
// time is measured with CUDA events per rank and the maximum over ranks is reported, as nccl-tests does.
#include <mpi.h>
#include <nccl.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

#include "kernels/coll_harness.h"
#include "kernels/cuda_common.cuh"
#include "kernels/mpi_util.h"

namespace shardplan::bench {
namespace {

#define NCCL_CHECK(call)                                                                                     \
  do {                                                                                                       \
    const ncclResult_t r_ = (call);                                                                          \
    if (r_ != ncclSuccess)                                                                                   \
      throw BenchFailure(std::string(__FILE__) + ":" + std::to_string(__LINE__) + ": NCCL failure '" +      \
                         ncclGetErrorString(r_) + "' in " #call);                                           \
  } while (0)

class NcclBackend final : public CollBackend {
 public:
  NcclBackend() {
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
    // One GPU per process: the local rank among the processes of this host.
    MPI_Comm local;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &local);
    MPI_Comm_rank(local, &device_);
    MPI_Comm_free(&local);
    int devices = 0;
    CUDA_CHECK(cudaGetDeviceCount(&devices));
    if (devices == 0) throw BenchFailure("no CUDA device");
    device_ %= devices;
    CUDA_CHECK(cudaSetDevice(device_));
    CUDA_CHECK(cudaStreamCreate(&stream_));
    ncclUniqueId id;
    if (rank_ == 0) NCCL_CHECK(ncclGetUniqueId(&id));
    MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, MPI_COMM_WORLD);
    NCCL_CHECK(ncclCommInitRank(&world_, size_, id, rank_));
  }
  ~NcclBackend() override {
    if (group_) ncclCommDestroy(group_);
    ncclCommDestroy(world_);
    cudaFree(send_);
    cudaFree(recv_);
  }
  int world_rank() const override { return rank_; }
  int world_size() const override { return size_; }
  int device() const { return device_; }

  bool set_group(int g, int stride) override {
    if (size_ % (g * stride) != 0) return false;
    if (group_) NCCL_CHECK(ncclCommDestroy(group_));
    group_ = nullptr;
    const int color = (rank_ / (g * stride)) * stride + rank_ % stride;
    NCCL_CHECK(ncclCommSplit(world_, color, rank_, &group_, nullptr));
    NCCL_CHECK(ncclCommUserRank(group_, &grank_));
    NCCL_CHECK(ncclCommCount(group_, &gsize_));
    return true;
  }

  void prepare(Collective c, const CollShape& s) override {
    const size_t need = std::max(s.send_elems, s.recv_elems) * sizeof(float);
    if (need > capacity_) {
      CUDA_CHECK(cudaFree(send_));
      CUDA_CHECK(cudaFree(recv_));
      CUDA_CHECK(cudaMalloc(&send_, need));
      CUDA_CHECK(cudaMalloc(&recv_, need));
      capacity_ = need;
    }
    std::vector<float> host(s.send_elems);
    for (size_t i = 0; i < host.size(); ++i) host[i] = coll_input(c, grank_, gsize_, i, s.per_rank);
    CUDA_CHECK(cudaMemcpy(send_, host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice));
    if (c == Collective::broadcast)
      CUDA_CHECK(cudaMemcpy(recv_, send_, host.size() * sizeof(float), cudaMemcpyDeviceToDevice));
  }

  double time(Collective c, const CollShape& s, int iters) override {
    cudaEvent_t a, b;
    CUDA_CHECK(cudaEventCreate(&a));
    CUDA_CHECK(cudaEventCreate(&b));
    MPI_Barrier(MPI_COMM_WORLD);
    CUDA_CHECK(cudaEventRecord(a, stream_));
    for (int i = 0; i < iters; ++i) launch(c, s);
    CUDA_CHECK(cudaEventRecord(b, stream_));
    CUDA_CHECK(cudaEventSynchronize(b));
    float ms = 0;
    CUDA_CHECK(cudaEventElapsedTime(&ms, a, b));
    CUDA_CHECK(cudaEventDestroy(a));
    CUDA_CHECK(cudaEventDestroy(b));
    return mpi_max(ms * 1e-3 / iters);
  }

  long long check(Collective c, const CollShape& s) override {
    prepare(c, s);
    if (c != Collective::broadcast) CUDA_CHECK(cudaMemset(recv_, 0xff, s.recv_elems * sizeof(float)));
    launch(c, s);
    CUDA_CHECK(cudaStreamSynchronize(stream_));
    std::vector<float> host(s.recv_elems);
    CUDA_CHECK(cudaMemcpy(host.data(), recv_, host.size() * sizeof(float), cudaMemcpyDeviceToHost));
    long long wrong = 0;
    for (size_t i = 0; i < host.size(); ++i)
      if (host[i] != coll_expected(c, grank_, gsize_, i, s.per_rank)) ++wrong;
    return mpi_sum(wrong);
  }

  std::vector<std::string> hosts() override { return mpi_hosts(size_); }

 private:
  void launch(Collective c, const CollShape& s) {
    const size_t count = s.per_rank;
    float* in = static_cast<float*>(send_);
    float* out = static_cast<float*>(recv_);
    switch (c) {
      case Collective::all_reduce: NCCL_CHECK(ncclAllReduce(in, out, count, ncclFloat, ncclSum, group_, stream_)); break;
      case Collective::all_gather: NCCL_CHECK(ncclAllGather(in, out, count, ncclFloat, group_, stream_)); break;
      case Collective::reduce_scatter:
        NCCL_CHECK(ncclReduceScatter(in, out, count, ncclFloat, ncclSum, group_, stream_));
        break;
      case Collective::all_to_all:
        NCCL_CHECK(ncclGroupStart());
        for (int p = 0; p < gsize_; ++p) {
          NCCL_CHECK(ncclSend(in + p * count, count, ncclFloat, p, group_, stream_));
          NCCL_CHECK(ncclRecv(out + p * count, count, ncclFloat, p, group_, stream_));
        }
        NCCL_CHECK(ncclGroupEnd());
        break;
      case Collective::broadcast: NCCL_CHECK(ncclBroadcast(out, out, count, ncclFloat, 0, group_, stream_)); break;
      case Collective::send_recv:
        NCCL_CHECK(ncclGroupStart());
        NCCL_CHECK(ncclSend(in, count, ncclFloat, (grank_ + 1) % gsize_, group_, stream_));
        NCCL_CHECK(ncclRecv(out, count, ncclFloat, (grank_ - 1 + gsize_) % gsize_, group_, stream_));
        NCCL_CHECK(ncclGroupEnd());
        break;
    }
  }

  int rank_ = 0, size_ = 1, device_ = 0, grank_ = 0, gsize_ = 1;
  ncclComm_t world_ = nullptr, group_ = nullptr;
  cudaStream_t stream_ = nullptr;
  void *send_ = nullptr, *recv_ = nullptr;
  size_t capacity_ = 0;
};

int body(int argc, char** argv) {
  const Args args(argc, argv);
  args.check_known(kCollFlags, std::string("shardplan_bench_nccl: ") + kCollUsage);
  NcclBackend backend;
  Reporter reporter("collective", "nccl", args, backend.world_rank() == 0);
  auto ctx = cuda_context(backend.device());
  int version = 0;
  NCCL_CHECK(ncclGetVersion(&version));
  ctx["nccl"] = std::to_string(version);
  ctx["hosts"] = backend.hosts();
  ctx["ranks"] = backend.world_size();
  reporter.context(ctx);
  run_collective_sweep(backend, args, reporter);
  return 0;
}

}  // namespace
}  // namespace shardplan::bench

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  const int rc = shardplan::bench::guarded_main("shardplan_bench_nccl", shardplan::bench::body, argc, argv);
  if (rc != 0) MPI_Abort(MPI_COMM_WORLD, rc);
  MPI_Finalize();
  return rc;
}
