// The collective model against measured MoE dispatch times (issue 13): DeepEP normal-mode dispatch and combine,
// and NCCL's in-node all-to-all, from NVIDIA AIConfigurator's measured database as compacted in
// ../shared/data/measured_kernels (nccl.csv; AIConfigurator commit 095f58a51c4ca8e61b66ec108d86f223f8d559ce,
// collector/wideep/sglang/collect_deepep_normal.py and collector/network/collect_nccl.py). The rows below are a
// compact copy of the training-size points (2048-8192 tokens per rank, hidden 7168, top-8 of 256 experts,
// 20 SMs: Megatron-Core's DeepEP default; all-to-all 16-256 MiB), so the test runs where ../shared is absent.
// H100 intranode rows are SGLang 0.5.12's (0.5.6.post2 measured the same within 1%); the 2-8 node rows exist
// only for H100 (the database's H200 internode rows are byte-identical copies of them and are left out).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "modeler/collectives.h"
#include "modeler/io/system_io.h"
#include "modeler/moe_dispatch.h"

using namespace shardplan;

namespace {

struct DeepepRow {
  const char* system;
  bool combine;
  int gpus, nodes, tokens;
  double latency_us;
};
// kind, system, gpus, nodes, tokens, latency_us (hidden 7168, top_k 8, experts 256, sms 20).
constexpr DeepepRow kDeepep[] = {
    {"dgx-b200", true, 8, 1, 2048, 500.1},       {"dgx-b200", true, 8, 1, 4096, 882.3},
    {"dgx-b200", true, 8, 1, 8192, 1644},        {"dgx-b300", true, 8, 1, 2048, 494},
    {"dgx-b300", true, 8, 1, 4096, 857.9},       {"dgx-b300", true, 8, 1, 8192, 1608},
    {"gb200-nvl72", true, 4, 1, 2048, 382},      {"gb200-nvl72", true, 4, 1, 4096, 699.2},
    {"gb200-nvl72", true, 4, 1, 8192, 1322},     {"gb300-nvl72", true, 4, 1, 2048, 374},
    {"gb300-nvl72", true, 4, 1, 4096, 686.4},    {"gb300-nvl72", true, 4, 1, 8192, 1301},
    {"dgx-h100", true, 16, 2, 2048, 1114},       {"dgx-h100", true, 16, 2, 4096, 2099},
    {"dgx-h100", true, 16, 2, 8192, 3928},       {"dgx-h100", true, 32, 4, 2048, 1820},
    {"dgx-h100", true, 32, 4, 4096, 3528},       {"dgx-h100", true, 32, 4, 8192, 6912},
    {"dgx-h100", true, 64, 8, 2048, 2350},       {"dgx-h100", true, 64, 8, 4096, 4461},
    {"dgx-h100", true, 64, 8, 8192, 8809},       {"dgx-h100", true, 8, 1, 2048, 534.9},
    {"dgx-h100", true, 8, 1, 4096, 982.7},       {"dgx-h100", true, 8, 1, 8192, 1845},
    {"dgx-h200", true, 8, 1, 2048, 538.9},       {"dgx-h200", true, 8, 1, 4096, 996},
    {"dgx-h200", true, 8, 1, 8192, 1868},        {"dgx-b200", false, 8, 1, 2048, 289.5},
    {"dgx-b200", false, 8, 1, 4096, 515},        {"dgx-b200", false, 8, 1, 8192, 977.1},
    {"dgx-b300", false, 8, 1, 2048, 285.5},      {"dgx-b300", false, 8, 1, 4096, 504.9},
    {"dgx-b300", false, 8, 1, 8192, 949.2},      {"gb200-nvl72", false, 4, 1, 2048, 233.6},
    {"gb200-nvl72", false, 4, 1, 4096, 420.7},   {"gb200-nvl72", false, 4, 1, 8192, 793.1},
    {"gb300-nvl72", false, 4, 1, 2048, 227.3},   {"gb300-nvl72", false, 4, 1, 4096, 413.9},
    {"gb300-nvl72", false, 4, 1, 8192, 785},     {"dgx-h100", false, 16, 2, 2048, 459.8},
    {"dgx-h100", false, 16, 2, 4096, 843.5},     {"dgx-h100", false, 16, 2, 8192, 1609},
    {"dgx-h100", false, 32, 4, 2048, 937.3},     {"dgx-h100", false, 32, 4, 4096, 1801},
    {"dgx-h100", false, 32, 4, 8192, 3518},      {"dgx-h100", false, 64, 8, 2048, 2724},
    {"dgx-h100", false, 64, 8, 4096, 5516},      {"dgx-h100", false, 64, 8, 8192, 11612},
    {"dgx-h100", false, 8, 1, 2048, 270.5},      {"dgx-h100", false, 8, 1, 4096, 492.2},
    {"dgx-h100", false, 8, 1, 8192, 967.6},      {"dgx-h200", false, 8, 1, 2048, 271.9},
    {"dgx-h200", false, 8, 1, 4096, 494.2},      {"dgx-h200", false, 8, 1, 8192, 969.2},
};

struct AllToAllRow {
  const char* system;
  int gpus;
  double bytes;       // nccl-tests size (total send buffer per rank)
  double latency_us;  // median over the framework versions that measured it
};
constexpr AllToAllRow kAllToAll[] = {
    {"dgx-h100", 8, 16777216, 73.2},      {"dgx-h100", 8, 67108864, 217.8},      {"dgx-h100", 8, 268435456, 763.9},
    {"dgx-h200", 8, 16777216, 71.42},     {"dgx-h200", 8, 67108864, 214.4},      {"dgx-h200", 8, 268435456, 752.1},
    {"dgx-b200", 8, 16777216, 50.6},      {"dgx-b200", 8, 67108864, 138.55},     {"dgx-b200", 8, 268435456, 449.75},
    {"dgx-b300", 8, 16777216, 50.5},      {"dgx-b300", 8, 67108864, 130.8},      {"dgx-b300", 8, 268435456, 423.5},
    {"gb200-nvl72", 4, 16777216, 45.99},  {"gb200-nvl72", 4, 67108864, 123.65},  {"gb200-nvl72", 4, 268435456, 419.65},
    {"gb300-nvl72", 4, 16777216, 45.9},   {"gb300-nvl72", 4, 67108864, 120.6},   {"gb300-nvl72", 4, 268435456, 407.5},
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double predict_deepep_us(const DeepepRow& r) {
  const System sys = io::load_system(r.system, 0);
  DedupCall c;
  c.place = {r.gpus / r.nodes, r.nodes};
  c.routing = {256, 8, 0};
  c.tokens = r.tokens;
  // DeepEP's dispatch payload is fp8 with per-128 scales when built with its SM90 features (the database does not
  // say which; the bf16 reading would need NVLink beyond the H100's 450 GB/s for the 8-GPU rows), combine bf16.
  c.row_bytes = r.combine ? combine_row_bytes(7168) : dispatch_row_bytes(7168, true);
  c.combine = r.combine;
  c.sms = 20;
  return dedup_call_time(sys, c).v * 1e6;
}

}  // namespace

TEST_CASE("DeepEP normal dispatch and combine: measured vs the dispatcher model") {
  std::vector<double> all, held_out;
  std::printf("deepep: %-12s %-8s %4s %5s %6s %10s %10s %7s\n", "system", "kernel", "gpus", "nodes", "tokens",
              "measured", "predicted", "error");
  for (const DeepepRow& r : kDeepep) {
    const double pred = predict_deepep_us(r);
    const double err = 100.0 * (pred / r.latency_us - 1.0);
    std::printf("deepep: %-12s %-8s %4d %5d %6d %8.1fus %8.1fus %+6.1f%%\n", r.system,
                r.combine ? "combine" : "dispatch", r.gpus, r.nodes, r.tokens, r.latency_us, pred, err);
    all.push_back(std::abs(err));
    // The constants were fitted on the H100 and GB200 intranode rows; everything else is held out.
    const bool fitted = r.nodes == 1 && (std::string(r.system) == "dgx-h100" || std::string(r.system) == "gb200-nvl72");
    if (!fitted) held_out.push_back(std::abs(err));
  }
  std::printf("deepep: median |error| %.1f%% over %zu rows, %.1f%% over the %zu held-out rows\n", median(all),
              all.size(), median(held_out), held_out.size());
  CHECK(all.size() == 54);
  CHECK(median(all) <= 15.0);
  CHECK(median(held_out) <= 15.0);
}

TEST_CASE("NCCL in-node all-to-all: measured vs the collective model") {
  std::vector<double> errs;
  for (const AllToAllRow& r : kAllToAll) {
    const System sys = io::load_system(r.system, 0);
    const CommOp op{CommKind::ep, Collective::all_to_all, Bytes(r.bytes), r.gpus, 1, 1, Window::exposed};
    const double pred = collective_time(sys, op).v * 1e6;
    const double err = 100.0 * (pred / r.latency_us - 1.0);
    std::printf("all_to_all: %-12s %d GPUs %10.0f B %8.1fus predicted %8.1fus %+6.1f%%\n", r.system, r.gpus, r.bytes,
                r.latency_us, pred, err);
    errs.push_back(std::abs(err));
  }
  std::printf("all_to_all: median |error| %.1f%% over %zu rows\n", median(errs), errs.size());
  CHECK(median(errs) <= 15.0);
}
