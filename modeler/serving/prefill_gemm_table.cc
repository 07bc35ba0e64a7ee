// Achieved FLOP rate of prefill-sized GEMMs (m >= 128 rows), per GPU and weight format, derived from NVIDIA
// AIConfigurator's measured GEMM table (shared/data/measured_kernels/gemm.csv.gz, aiconfigurator commit
// 095f58a5, Apache-2.0; collected inside TRT-LLM/SGLang/vLLM containers with CUDA-graph replays; dtype bf16,
// fp8 = per-tensor scaled fp8, fp8_block = 128x128 block-scaled fp8 as DeepSeek-V3 / Qwen3-FP8 checkpoints use).
// Derivation (reproducible): for every row with m >= 128 and n, k >= 1024 (the widths of an LLM's linears; the
// table also holds n or k = 128..768 shapes no dense linear has), flops = 2 m n k and rate = flops /
// latency_us_median; rows binned by round(log2(flops)) from 2^30 to 2^44; the value is the bin's median rate in
// TFLOP/s (at least 58 rows per bin). On Hopper the measured fp8 GEMMs reach 1.15-1.23 PFLOP/s (0.58-0.62 of the
// 1979 TFLOP/s dense peak) where the profiles' training GEMM curve, derived from bf16 at twice the FLOPs, gives
// about 0.76; block scaling costs up to 10% more on Hopper at mid sizes. The latency includes the kernel's fixed
// cost, so no overhead is added.
#include "modeler/serving/prefill_gemm_table.h"

#include <array>
#include <iterator>
#include <string_view>
#include <vector>

namespace shardplan::serving {

namespace {
struct Row {
  const char* gpu;
  const char* format;
  std::array<double, 15> tflops;  // at 2^30 ... 2^44 FLOPs
};
constexpr Row kRows[] = {
    {"a100-sxm4-80gb", "bf16", {80, 104, 130, 147, 175, 202, 225, 241, 241, 243, 247, 250, 250, 251, 250}},
    {"a100-sxm4-40gb", "bf16", {80, 104, 130, 147, 175, 202, 225, 241, 241, 243, 247, 250, 250, 251, 250}},
    {"b200", "bf16", {236, 364, 512, 718, 1037, 1295, 1388, 1424, 1469, 1506, 1527, 1471, 1432, 1449, 1383}},
    {"b200", "fp8", {94, 166, 288, 460, 713, 1059, 1436, 1773, 2041, 2224, 2272, 2287, 2209, 2135, 2107}},
    {"b200", "fp8_block", {79, 140, 234, 383, 595, 884, 1213, 1585, 1908, 2211, 2377, 2454, 2496, 2488, 2285}},
    {"b300", "bf16", {256, 387, 540, 737, 1089, 1396, 1502, 1539, 1570, 1627, 1612, 1508, 1452, 1482, 1425}},
    {"b300", "fp8", {98, 177, 298, 480, 745, 1103, 1517, 1877, 2182, 2443, 2510, 2523, 2399, 2328, 2270}},
    {"b300", "fp8_block", {79, 139, 228, 374, 589, 867, 1218, 1610, 1962, 2331, 2553, 2650, 2582, 2607, 2426}},
    {"gb200", "bf16", {240, 363, 528, 728, 1077, 1394, 1526, 1575, 1592, 1653, 1671, 1545, 1430, 1457, 1401}},
    {"gb200", "fp8", {149, 252, 376, 584, 858, 1226, 1620, 1977, 2220, 2453, 2536, 2564, 2339, 2052, 1940}},
    {"gb200", "fp8_block", {75, 130, 213, 354, 568, 854, 1213, 1585, 1892, 2212, 2491, 2685, 2729, 2649, 2508}},
    {"gb300", "bf16", {240, 376, 538, 746, 1119, 1503, 1685, 1765, 1799, 1868, 1899, 1867, 1762, 1770, 1722}},
    {"gb300", "fp8", {155, 263, 411, 628, 917, 1317, 1772, 2190, 2509, 2729, 2787, 2896, 2819, 2529, 2424}},
    {"gb300", "fp8_block", {77, 137, 224, 370, 588, 890, 1284, 1724, 2122, 2475, 2689, 2912, 3073, 3134, 3081}},
    {"h100-sxm5-80gb", "bf16", {162, 234, 322, 420, 583, 675, 717, 744, 759, 748, 718, 715, 727, 701, 699}},
    {"h100-sxm5-96gb", "bf16", {162, 234, 322, 420, 583, 675, 717, 744, 759, 748, 718, 715, 727, 701, 699}},
    {"h800-sxm5-80gb", "bf16", {162, 234, 322, 420, 583, 675, 717, 744, 759, 748, 718, 715, 727, 701, 699}},
    {"h100-sxm5-80gb", "fp8", {93, 158, 254, 380, 538, 699, 852, 982, 1074, 1145, 1160, 1138, 1099, 1038, 933}},
    {"h100-sxm5-96gb", "fp8", {93, 158, 254, 380, 538, 699, 852, 982, 1074, 1145, 1160, 1138, 1099, 1038, 933}},
    {"h800-sxm5-80gb", "fp8", {93, 158, 254, 380, 538, 699, 852, 982, 1074, 1145, 1160, 1138, 1099, 1038, 933}},
    {"h100-sxm5-80gb", "fp8_block", {116, 175, 262, 376, 494, 637, 767, 907, 1007, 1092, 1123, 1128, 1163, 1173, 1163}},
    {"h100-sxm5-96gb", "fp8_block", {116, 175, 262, 376, 494, 637, 767, 907, 1007, 1092, 1123, 1128, 1163, 1173, 1163}},
    {"h800-sxm5-80gb", "fp8_block", {116, 175, 262, 376, 494, 637, 767, 907, 1007, 1092, 1123, 1128, 1163, 1173, 1163}},
    {"h200-sxm-141gb", "bf16", {169, 265, 366, 482, 616, 681, 714, 736, 749, 739, 695, 678, 683, 668, 663}},
    {"h200-sxm-141gb", "fp8", {102, 164, 259, 405, 578, 759, 915, 1046, 1151, 1227, 1227, 1206, 1198, 1147, 1045}},
    {"h200-sxm-141gb", "fp8_block", {118, 186, 276, 395, 529, 667, 785, 912, 1011, 1101, 1125, 1131, 1146, 1145, 1142}},
    {"l40s", "bf16", {100, 120, 108, 124, 157, 184, 205, 213, 207, 198, 197, 193, 188, 191, 192}},
    {"l40s", "fp8", {77, 119, 160, 191, 208, 256, 291, 319, 331, 319, 300, 287, 274, 265, 182}},
    {"l40s", "fp8_block", {105, 140, 168, 177, 188, 196, 204, 210, 212, 214, 201, 172, 158, 155, 154}},
    {"rtx-pro-6000-server", "bf16", {114, 152, 183, 215, 249, 300, 344, 371, 386, 397, 397, 397, 397, 396, 396}},
    {"rtx-pro-6000-server", "fp8", {64, 108, 171, 251, 328, 421, 501, 570, 618, 664, 685, 690, 699, 707, 696}},
    {"rtx-pro-6000-server", "fp8_block", {62, 100, 148, 200, 246, 297, 362, 432, 466, 511, 539, 559, 580, 587, 592}},
};
}  // namespace

const Curve* prefill_gemm_rate(const std::string& gpu, WeightFormat f) {
  static const std::vector<Curve> curves = [] {
    std::vector<Curve> out;
    for (const Row& r : kRows) {
      Curve c = Curve::powers_of_two(
          30, r.tflops, 1e12, "AIConfigurator measured GEMMs, m >= 128 (prefill_gemm_table.cc)");
      out.push_back(std::move(c));
    }
    return out;
  }();
  std::string_view name;
  switch (f) {
    case WeightFormat::bf16:
    case WeightFormat::fp16: name = "bf16"; break;
    case WeightFormat::fp8: name = "fp8"; break;
    case WeightFormat::fp8_block: name = "fp8_block"; break;
    default: return nullptr;  // fp4, MX, weight-only and GGUF formats: not in the measured table
  }
  // Compared in place (no key string built): the step model looks a GEMM up several times per layer class.
  for (size_t i = 0; i < std::size(kRows); ++i)
    if (name == kRows[i].format && gpu == kRows[i].gpu) return &curves[i];
  return nullptr;
}

}  // namespace shardplan::serving
