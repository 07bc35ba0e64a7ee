// Collective benchmark, MPI backend on host buffers: the same sweep, conventions and checks as the NCCL backend,
// runnable without a GPU (CI runs it with `mpirun -np 4`). Measures the MPI library's shared-memory or network
// path, so its tables describe host-to-host communication, not NVLink.
#include <mpi.h>

#include <cstdio>
#include <vector>

#include "kernels/coll_harness.h"
#include "kernels/mpi_util.h"

namespace shardplan::bench {
namespace {

class MpiBackend final : public CollBackend {
 public:
  MpiBackend() {
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
  }
  ~MpiBackend() override {
    if (group_ != MPI_COMM_NULL) MPI_Comm_free(&group_);
  }
  int world_rank() const override { return rank_; }
  int world_size() const override { return size_; }

  bool set_group(int g, int stride) override {
    if (size_ % (g * stride) != 0) return false;
    if (group_ != MPI_COMM_NULL) MPI_Comm_free(&group_);
    // Groups of g ranks `stride` apart: a block of g*stride ranks holds `stride` interleaved groups.
    const int color = (rank_ / (g * stride)) * stride + rank_ % stride;
    MPI_Comm_split(MPI_COMM_WORLD, color, rank_, &group_);
    MPI_Comm_rank(group_, &grank_);
    MPI_Comm_size(group_, &gsize_);
    return true;
  }

  void prepare(Collective c, const CollShape& s) override {
    send_.assign(s.send_elems, 0.0f);
    recv_.assign(s.recv_elems, 0.0f);
    for (std::size_t i = 0; i < s.send_elems; ++i) send_[i] = coll_input(c, grank_, gsize_, i, s.per_rank);
    if (c == Collective::broadcast) recv_ = send_;  // the root broadcasts its own buffer
  }

  double time(Collective c, const CollShape& s, int iters) override {
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = MPI_Wtime();
    for (int i = 0; i < iters; ++i) launch(c, s);
    return mpi_max((MPI_Wtime() - t0) / iters);
  }

  long long check(Collective c, const CollShape& s) override {
    prepare(c, s);
    if (c != Collective::broadcast) std::fill(recv_.begin(), recv_.end(), -1.0f);
    launch(c, s);
    long long wrong = 0;
    for (std::size_t i = 0; i < s.recv_elems; ++i)
      if (recv_[i] != coll_expected(c, grank_, gsize_, i, s.per_rank)) ++wrong;
    return mpi_sum(wrong);
  }

  std::vector<std::string> hosts() override { return mpi_hosts(size_); }

 private:
  void launch(Collective c, const CollShape& s) {
    const int count = static_cast<int>(s.per_rank);
    switch (c) {
      case Collective::all_reduce:
        MPI_Allreduce(send_.data(), recv_.data(), count, MPI_FLOAT, MPI_SUM, group_);
        break;
      case Collective::all_gather:
        MPI_Allgather(send_.data(), count, MPI_FLOAT, recv_.data(), count, MPI_FLOAT, group_);
        break;
      case Collective::reduce_scatter:
        MPI_Reduce_scatter_block(send_.data(), recv_.data(), count, MPI_FLOAT, MPI_SUM, group_);
        break;
      case Collective::all_to_all:
        MPI_Alltoall(send_.data(), count, MPI_FLOAT, recv_.data(), count, MPI_FLOAT, group_);
        break;
      case Collective::broadcast:
        MPI_Bcast(recv_.data(), count, MPI_FLOAT, 0, group_);
        break;
      case Collective::send_recv:
        MPI_Sendrecv(send_.data(), count, MPI_FLOAT, (grank_ + 1) % gsize_, 0, recv_.data(), count, MPI_FLOAT,
                     (grank_ - 1 + gsize_) % gsize_, 0, group_, MPI_STATUS_IGNORE);
        break;
    }
  }

  int rank_ = 0, size_ = 1, grank_ = 0, gsize_ = 1;
  MPI_Comm group_ = MPI_COMM_NULL;
  std::vector<float> send_, recv_;
};

}  // namespace
}  // namespace shardplan::bench

int main(int argc, char** argv) {
  using namespace shardplan::bench;
  MPI_Init(&argc, &argv);
  const Args args(argc, argv);
  args.check_known(kCollFlags, std::string("shardplan_bench_mpi: ") + kCollUsage);
  {
    MpiBackend backend;
    Reporter reporter("collective", "mpi", args, backend.world_rank() == 0);
    char version[MPI_MAX_LIBRARY_VERSION_STRING] = {};
    int len = 0;
    MPI_Get_library_version(version, &len);
    const auto hosts = backend.hosts();
    std::string lib(version);
    if (const auto nl = lib.find('\n'); nl != std::string::npos) lib.resize(nl);
    reporter.context({{"mpi", lib}, {"hosts", hosts}, {"ranks", backend.world_size()}, {"gpu", "none (host buffers)"}});
    run_collective_sweep(backend, args, reporter);
  }
  MPI_Finalize();
  return 0;
}
