// MPI steps both collective backends (mpi_collectives.cc, nccl_collectives.cu) take alike: the host of every rank
// for the provenance block, the slowest rank's time and the sum over ranks of a check's wrong-element count.
// Header-only: the harness library does not link MPI.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <string>
#include <vector>

namespace shardplan::bench {

/// Every rank's processor name (MPI_Get_processor_name), in rank order; collective over MPI_COMM_WORLD.
inline std::vector<std::string> mpi_hosts(int world_size) {
  char name[MPI_MAX_PROCESSOR_NAME] = {};
  int len = 0;
  MPI_Get_processor_name(name, &len);
  std::vector<char> all(static_cast<std::size_t>(world_size) * MPI_MAX_PROCESSOR_NAME);
  MPI_Allgather(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, all.data(), MPI_MAX_PROCESSOR_NAME, MPI_CHAR, MPI_COMM_WORLD);
  std::vector<std::string> out;
  for (int r = 0; r < world_size; ++r) out.emplace_back(&all[static_cast<std::size_t>(r) * MPI_MAX_PROCESSOR_NAME]);
  return out;
}

/// The largest `local` over every rank of MPI_COMM_WORLD: a timed loop's seconds are the slowest rank's.
inline double mpi_max(double local) {
  double most = 0;
  MPI_Allreduce(&local, &most, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return most;
}

/// `local` summed over every rank of MPI_COMM_WORLD (a check's wrong elements, counted per rank).
inline long long mpi_sum(long long local) {
  long long total = 0;
  MPI_Allreduce(&local, &total, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
  return total;
}

}  // namespace shardplan::bench
