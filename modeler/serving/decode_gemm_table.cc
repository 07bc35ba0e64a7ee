// Achieved weight-streaming rate of decode-sized GEMMs (m <= 16 rows), per GPU and dtype, derived from NVIDIA
// AIConfigurator's measured GEMM table (shared/data/measured_kernels/gemm.csv.gz, aiconfigurator commit 095f58a5,
// Apache-2.0; collected inside TRT-LLM/SGLang/vLLM containers with CUDA-graph replays).
// Derivation (reproducible): for every row with m <= 16 and n*k*bytes >= 1 MiB, rate = n*k*bytes / latency_us_median;
// rows binned by round(log2(weight bytes)); the value is the bin's median rate in GB/s. Small GEMMs are bound by
// the fixed cost of a kernel (~3 us), large ones approach the sustained HBM rate. On L40S and RTX PRO 6000 the
// bins below their L2 size read from cache (the benchmark replays one GEMM): kept as measured, but a decode step
// streams different weights each time, so serving caps the rate at the GPU's HBM bandwidth.
// The rows are the compact in-repo copy the serving model reads (decode_gemm_table.h).
#include "modeler/serving/decode_gemm_table.h"

#include <array>

namespace shardplan::serving {

namespace {
struct Row {
  const char* gpu;
  const char* dtype;
  std::array<double, 13> gbps;  // at 2^20 ... 2^32 weight bytes
};
constexpr Row kRows[] = {
    {"a100-sxm4-80gb", "bf16", {228, 336, 509, 734, 966, 1181, 1331, 1404, 1484, 1566, 1642, 1710, 1727}},
    {"a100-sxm4-40gb", "bf16", {228, 336, 509, 734, 966, 1181, 1331, 1404, 1484, 1566, 1642, 1710, 1727}},
    {"b200", "bf16", {338, 521, 920, 1572, 2412, 3727, 4403, 5103, 5652, 6194, 6467, 6635, 6198}},
    {"b200", "fp8", {107, 182, 355, 658, 1139, 1786, 2695, 3582, 4621, 5263, 5768, 5969, 6055}},
    {"b300", "bf16", {359, 534, 999, 1708, 2444, 3780, 4509, 5118, 5679, 6155, 6423, 6545, 6314}},
    {"b300", "fp8", {113, 186, 362, 679, 1180, 1817, 2736, 3695, 4759, 5245, 5722, 6012, 6121}},
    {"gb200", "bf16", {335, 522, 943, 1679, 2270, 3778, 4665, 5318, 5841, 6338, 6710, 6663, 6194}},
    {"gb200", "fp8", {164, 279, 526, 996, 1514, 2270, 3214, 4017, 4905, 5611, 6122, 6664, 6512}},
    {"gb300", "bf16", {341, 532, 967, 1724, 2379, 3785, 4655, 5323, 5832, 6251, 6579, 6578, 6270}},
    {"gb300", "fp8", {187, 299, 564, 1056, 1636, 2320, 3246, 4120, 5105, 5497, 6016, 6468, 6359}},
    {"h100-sxm5-80gb", "bf16", {314, 469, 839, 1284, 1685, 2111, 2444, 2643, 2746, 2805, 2835, 2877, 2828}},
    {"h100-sxm5-96gb", "bf16", {314, 469, 839, 1284, 1685, 2111, 2444, 2643, 2746, 2805, 2835, 2877, 2828}},
    {"h800-sxm5-80gb", "bf16", {314, 469, 839, 1284, 1685, 2111, 2444, 2643, 2746, 2805, 2835, 2877, 2828}},
    {"h100-sxm5-80gb", "fp8", {168, 265, 492, 748, 1132, 1564, 1942, 2197, 2458, 2602, 2690, 2721, 2750}},
    {"h100-sxm5-96gb", "fp8", {168, 265, 492, 748, 1132, 1564, 1942, 2197, 2458, 2602, 2690, 2721, 2750}},
    {"h800-sxm5-80gb", "fp8", {168, 265, 492, 748, 1132, 1564, 1942, 2197, 2458, 2602, 2690, 2721, 2750}},
    {"h200-sxm-141gb", "bf16", {258, 423, 829, 1407, 1990, 2603, 3166, 3568, 3831, 3975, 4052, 4073, 3957}},
    {"h200-sxm-141gb", "fp8", {167, 276, 506, 760, 1187, 1780, 2327, 2844, 3291, 3552, 3774, 3828, 3867}},
    {"l40s", "bf16", {330, 489, 799, 1172, 1130, 670, 698, 701, 714, 721, 726, 728, 698}},
    {"l40s", "fp8", {196, 285, 532, 891, 833, 596, 613, 628, 626, 627, 632, 642, 642}},
    {"rtx-pro-6000-server", "bf16", {320, 493, 859, 1310, 1908, 1318, 1355, 1422, 1457, 1479, 1494, 1495, 1484}},
    {"rtx-pro-6000-server", "fp8", {86, 135, 248, 405, 641, 833, 980, 1098, 1162, 1260, 1352, 1294, 1393}},
};
}  // namespace

const Curve* decode_gemm_rate(const std::string& gpu, Dtype d) {
  static const std::vector<std::pair<std::string, Curve>> curves = [] {
    std::vector<std::pair<std::string, Curve>> out;
    for (const Row& r : kRows) {
      Curve c = Curve::powers_of_two(
          20, r.gbps, 1e9, "AIConfigurator measured GEMMs, m <= 16 (decode_gemm_table.cc)");
      out.emplace_back(std::string(r.gpu) + "/" + r.dtype, std::move(c));
    }
    return out;
  }();
  const std::string key = gpu + "/" + (d == Dtype::fp8 ? "fp8" : "bf16");
  for (const auto& [k, c] : curves)
    if (k == key) return &c;
  return nullptr;
}

// The shortest kernels the same table holds: bf16 rows with m = 1 and n, k in {128, 256} (four shapes, median of
// their latency_us_median; 3-7 TRT-LLM/SGLang versions each, spread within 10%). Such a GEMM moves at most
// 128 KiB, so its latency is a kernel's fixed cost under CUDA-graph replay (launch from the graph, ramp, tail);
// AIConfigurator's systems a100_sxm 2.763, b200_sxm 2.163, b300_sxm 1.960, gb200 2.207, gb300 2.140, h100_sxm
// 2.899, h200_sxm 2.858, l40s 1.949, rtx_pro_6000_server 2.365 us.
std::optional<Seconds> small_kernel_latency(const std::string& gpu) {
  struct Floor {
    const char* gpu;
    double us;
  };
  static constexpr Floor kFloors[] = {
      {"a100-sxm4-80gb", 2.763}, {"a100-sxm4-40gb", 2.763}, {"b200", 2.163},           {"b300", 1.960},
      {"gb200", 2.207},          {"gb300", 2.140},          {"h100-sxm5-80gb", 2.899}, {"h100-sxm5-96gb", 2.899},
      {"h800-sxm5-80gb", 2.899}, {"h200-sxm-141gb", 2.858}, {"l40s", 1.949},           {"rtx-pro-6000-server", 2.365},
  };
  for (const Floor& f : kFloors)
    if (gpu == f.gpu) return Seconds(f.us * 1e-6);
  return std::nullopt;
}

}  // namespace shardplan::serving
