// The nccl-tests bus-bandwidth convention, shared by calibration (which fits measured times) and prediction (which
// turns bytes into time), so both read one definition.
//
// nccl-tests doc/PERFORMANCE.md: algbw = S / t with S the "size" column (bytes): the per-rank buffer for
// all-reduce/broadcast/send-recv, the whole gathered output for all-gather, the whole input for reduce-scatter, and
// count*nranks for all-to-all. busbw = algbw * factor, where the factor is the fraction of S each rank must move
// over its link in an optimal algorithm, so busbw is comparable to the link rate:
//   all-reduce 2(n-1)/n  (reduce-scatter then all-gather, each moving (n-1)/n of S)
//   all-gather, reduce-scatter, all-to-all (n-1)/n  (every rank receives the n-1 chunks it does not hold)
//   broadcast, send/recv 1  (the whole buffer crosses one link)
#pragma once

#include <array>
#include <optional>
#include <string_view>

namespace shardplan {

enum class Collective { all_reduce, all_gather, reduce_scatter, all_to_all, broadcast, send_recv };
constexpr int kNumCollectives = 6;
/// Names as nccl-tests spells its binaries without "_perf" (sendrecv_perf -> send_recv is accepted below too).
inline constexpr std::array<const char*, kNumCollectives> kCollectiveNames = {
    "all_reduce", "all_gather", "reduce_scatter", "all_to_all", "broadcast", "send_recv"};

/// busbw / algbw for a collective over n ranks (nccl-tests src/*.cu GetBw).
constexpr double bus_bw_factor(Collective c, int n) {
  const double nd = n;
  switch (c) {
    case Collective::all_reduce: return n > 1 ? 2.0 * (nd - 1.0) / nd : 0.0;
    case Collective::all_gather:
    case Collective::reduce_scatter:
    case Collective::all_to_all: return n > 1 ? (nd - 1.0) / nd : 0.0;
    case Collective::broadcast:
    case Collective::send_recv: return 1.0;
  }
  return 1.0;
}

constexpr const char* collective_name(Collective c) { return kCollectiveNames[static_cast<int>(c)]; }

/// Parses our names and nccl-tests' binary stems ("alltoall", "sendrecv"); nullopt when unknown.
constexpr std::optional<Collective> collective_from_name(std::string_view s) {
  for (int i = 0; i < kNumCollectives; ++i)
    if (s == kCollectiveNames[i]) return static_cast<Collective>(i);
  if (s == "alltoall") return Collective::all_to_all;
  if (s == "sendrecv") return Collective::send_recv;
  return std::nullopt;
}

}  // namespace shardplan
