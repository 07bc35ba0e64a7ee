// Achieved expert-weight streaming rate of a whole MoE layer at decode-sized batches, per GPU and expert format,
// derived from NVIDIA AIConfigurator's measured MoE kernels (shared/data/measured_kernels/moe.csv.gz,
// aiconfigurator commit 095f58a5, Apache-2.0; one MoE layer's forward on one GPU, CUDA-graph replays inside
// TRT-LLM, SGLang and vLLM containers: routing from given logits, permutation, grouped gate+up GEMM, SwiGLU,
// grouped down GEMM, un-permute; no all-to-all, no all-reduce, no router GEMM).
// Derivation (reproducible): rows with distribution `balanced` (the collectors' round-robin routing, which
// loads the first tokens x top_k experts; the measured GPU, EP rank 0, then touches min(experts/ep,
// tokens x top_k) of its experts) and at most 16 rows per expert (tokens x top_k / experts <= 16: the
// weight-streaming regime); the non-gated ReLU^2 Nemotron geometries (top_k 22, and 2688/1856/128/6) left out
// because the bytes below assume gate+up+down. bytes = touched x 3 x hidden x expert_ffn / tp x bits/8 (the
// storage bits of formats.cc); rate = bytes / latency_us_median; bins round(log2(bytes)) from 2^22 to 2^32,
// the bin's median rate in GB/s; an empty bin repeats its nearest lower (else upper) neighbour.
// Dtypes: fp8 is per-tensor W8A8, fp8_block 128x128 blocks, int4_wo W4A16 group 128, w4a16_mxfp4 MXFP4 weights
// with bf16 activations (Hopper, Ampere, Ada), w4a8_mxfp4_mxfp8 with MXFP8 activations (Blackwell).
// The medians pool the frameworks' kernels (Triton fused_moe, CUTLASS, TRT-LLM-gen, Marlin, DeepGEMM), whose
// spread is often 2-10x (the README there); one engine's kernel can be far from the median. On L40S and RTX
// PRO 6000 the bins below the L2 size read from cache (one layer replayed), so serving caps the rate at the
// HBM bandwidth, as for the decode GEMMs.
#include "modeler/serving/moe_table.h"

#include <array>
#include <iterator>
#include <string_view>
#include <utility>
#include <vector>

namespace shardplan::serving {

namespace {
struct Row {
  const char* gpu;
  const char* dtype;
  std::array<double, 11> gbps;  // at 2^22 ... 2^32 bytes of touched expert weights
};
constexpr Row kRows[] = {
    {"a100-sxm4-80gb", "bf16", {534, 534, 534, 555, 826, 1143, 1449, 1558, 1648, 1674, 1695}},
    {"a100-sxm4-80gb", "int4_wo", {94, 119, 354, 593, 971, 1193, 1362, 1454, 1494, 1444, 1515}},
    {"b200", "bf16", {328, 328, 775, 1003, 1870, 2813, 3726, 4970, 5694, 6245, 6538}},
    {"b200", "fp8", {107, 310, 453, 904, 1774, 2627, 3932, 4772, 5666, 6070, 6561}},
    {"b200", "fp8_block", {149, 337, 514, 940, 1603, 2374, 3369, 4260, 4791, 5374, 5613}},
    {"b200", "int4_wo", {62, 113, 176, 566, 1129, 2052, 2559, 3022, 3112, 3597, 3554}},
    {"b200", "nvfp4", {275, 413, 821, 1474, 2724, 3477, 4658, 5522, 6276, 6622, 7003}},
    {"b200", "w4a16_mxfp4", {341, 341, 257, 507, 999, 1715, 2401, 2685, 3470, 3435, 3842}},
    {"b200", "w4a8_mxfp4_mxfp8", {401, 401, 597, 1258, 2392, 2807, 5567, 4635, 5769, 6015, 6624}},
    {"b300", "bf16", {329, 329, 812, 1071, 1953, 2960, 3753, 5048, 5666, 6168, 6481}},
    {"b300", "fp8", {122, 298, 455, 995, 1799, 2795, 3979, 4875, 5590, 6031, 6419}},
    {"b300", "fp8_block", {149, 345, 518, 929, 1645, 2421, 3381, 4318, 5029, 5390, 5672}},
    {"b300", "int4_wo", {96, 145, 247, 558, 970, 1186, 1463, 1582, 1590, 1691, 1715}},
    {"b300", "nvfp4", {187, 285, 576, 1095, 1874, 2712, 3894, 4549, 5331, 5788, 6287}},
    {"b300", "w4a16_mxfp4", {359, 359, 357, 689, 1404, 1962, 2604, 2415, 3933, 2803, 3178}},
    {"b300", "w4a8_mxfp4_mxfp8", {417, 417, 609, 1299, 2544, 2870, 5606, 4590, 5715, 5905, 6495}},
    {"gb200", "bf16", {327, 327, 745, 1003, 1776, 2832, 3651, 5008, 5641, 6366, 6592}},
    {"gb200", "fp8", {114, 320, 501, 956, 1747, 2682, 3954, 4897, 5796, 6180, 6646}},
    {"gb200", "fp8_block", {145, 323, 510, 890, 1585, 2419, 3397, 4327, 4976, 5448, 5761}},
    {"gb200", "int4_wo", {94, 140, 250, 580, 1183, 2140, 2635, 3160, 3177, 3744, 3898}},
    {"gb200", "nvfp4", {250, 408, 817, 1467, 2766, 3502, 4677, 5438, 6394, 6844, 7182}},
    {"gb200", "w4a16_mxfp4", {355, 355, 365, 718, 1423, 1959, 2694, 2831, 4060, 3193, 4000}},
    {"gb200", "w4a8_mxfp4_mxfp8", {400, 400, 598, 1249, 2464, 2869, 5782, 4778, 6091, 6356, 7010}},
    {"gb300", "bf16", {325, 325, 777, 1044, 1856, 2953, 3766, 5124, 5657, 6231, 6560}},
    {"gb300", "fp8", {115, 326, 440, 992, 1821, 2809, 4022, 4995, 5749, 6194, 6553}},
    {"gb300", "fp8_block", {149, 331, 517, 895, 1625, 2407, 3435, 4381, 4971, 5485, 5778}},
    {"gb300", "int4_wo", {95, 142, 249, 597, 1215, 2186, 2782, 3280, 3308, 3813, 3929}},
    {"gb300", "nvfp4", {184, 285, 596, 1052, 1902, 2605, 3985, 4570, 5412, 5864, 6339}},
    {"gb300", "w4a16_mxfp4", {351, 351, 367, 711, 1423, 1976, 2716, 2936, 4069, 3243, 4106}},
    {"gb300", "w4a8_mxfp4_mxfp8", {417, 417, 607, 1308, 2504, 2922, 5776, 4665, 5931, 6143, 6765}},
    {"h100-sxm5-80gb", "bf16", {182, 182, 519, 810, 1179, 1818, 2269, 2648, 2768, 2878, 2935}},
    {"h100-sxm5-80gb", "fp8", {109, 280, 305, 624, 995, 1560, 2044, 2270, 2544, 2639, 2774}},
    {"h100-sxm5-80gb", "fp8_block", {126, 337, 481, 813, 1232, 1726, 2175, 2502, 2688, 2815, 2900}},
    {"h100-sxm5-80gb", "int4_wo", {78, 137, 228, 626, 1220, 1786, 2049, 2254, 2351, 2532, 2574}},
    {"h100-sxm5-80gb", "w4a16_mxfp4", {231, 231, 178, 376, 767, 1115, 1698, 1959, 2294, 2360, 2613}},
    {"h200-sxm-141gb", "bf16", {214, 214, 507, 839, 1246, 2218, 2976, 3581, 3840, 4056, 4224}},
    {"h200-sxm-141gb", "fp8", {106, 288, 372, 708, 1209, 1827, 2484, 2945, 3319, 3644, 3928}},
    {"h200-sxm-141gb", "fp8_block", {128, 336, 493, 843, 1377, 2045, 2771, 3270, 3591, 3838, 3979}},
    {"h200-sxm-141gb", "int4_wo", {66, 94, 135, 461, 743, 1450, 1704, 2095, 1949, 2214, 2043}},
    {"h200-sxm-141gb", "w4a16_mxfp4", {226, 226, 178, 366, 729, 1111, 1775, 2040, 2314, 2420, 2652}},
    {"l40s", "bf16", {284, 284, 615, 916, 1604, 740, 658, 682, 690, 695, 701}},
    {"l40s", "fp8", {125, 318, 508, 913, 1668, 617, 646, 663, 676, 681, 685}},
    {"l40s", "fp8_block", {93, 254, 437, 798, 1662, 641, 651, 664, 671, 673, 673}},
    {"l40s", "int4_wo", {77, 178, 356, 511, 954, 648, 645, 631, 604, 641, 354}},
    {"l40s", "w4a16_mxfp4", {270, 270, 320, 298, 433, 230, 277, 207, 283, 187, 187}},
    {"rtx-pro-6000-server", "bf16", {195, 195, 438, 752, 1367, 2017, 1342, 1427, 1460, 1485, 1499}},
    {"rtx-pro-6000-server", "fp8", {132, 319, 380, 755, 1514, 1617, 1298, 1379, 1421, 1454, 1480}},
    {"rtx-pro-6000-server", "fp8_block", {84, 204, 341, 624, 1251, 1307, 1249, 1366, 1395, 1422, 1447}},
    {"rtx-pro-6000-server", "int4_wo", {61, 118, 191, 549, 1025, 788, 756, 745, 767, 719, 687}},
    {"rtx-pro-6000-server", "nvfp4", {116, 162, 303, 555, 852, 1032, 1160, 1240, 1340, 1380, 1420}},
    {"rtx-pro-6000-server", "w4a16_mxfp4", {224, 224, 250, 483, 1055, 1793, 1102, 1195, 1276, 1312, 1421}},
    {"rtx-pro-6000-server", "w4a8_mxfp4_mxfp8", {186, 186, 186, 363, 714, 931, 1602, 1096, 1237, 1233, 1233}},
};

// Profiles measured under another name: same silicon and HBM generation (the decode-GEMM table does the same).
const char* measured_name(const std::string& gpu) {
  if (gpu == "a100-sxm4-40gb") return "a100-sxm4-80gb";
  if (gpu == "h100-sxm5-96gb" || gpu == "h800-sxm5-80gb") return "h100-sxm5-80gb";
  return nullptr;
}

const char* dtype_key(WeightFormat f, const Gpu& gpu) {
  switch (f) {
    case WeightFormat::bf16:
    case WeightFormat::fp16: return "bf16";
    case WeightFormat::fp8: return "fp8";
    case WeightFormat::fp8_block: return "fp8_block";
    case WeightFormat::nvfp4: return "nvfp4";
    case WeightFormat::int4_wo: return "int4_wo";
    // MXFP4 experts run with MXFP8 activations on fp4 tensor cores, else dequantised with bf16 activations.
    case WeightFormat::mxfp4: return math_dtype(f, gpu) == Dtype::fp4 ? "w4a8_mxfp4_mxfp8" : "w4a16_mxfp4";
    default: return nullptr;
  }
}
// The layer beyond 16 rows per expert (moe_layer_flop_rate), from the same file and the same row filter
// (balanced routing, gated geometries) with tokens x top_k / experts > 16: flops = 2 x tokens x top_k / ep x 3 x
// hidden x expert_ffn / tp (the pairs EP rank 0 receives under balanced routing), rate = flops /
// latency_us_median; bins round(log2(flops)) from 2^30 to 2^44, the bin's median rate in TFLOP/s; an empty bin
// repeats its nearest lower (else upper) neighbour. The bins mix geometries that are still weight-bound at
// 17-200 rows per expert with compute-bound ones, as the prefill chunks and large batches it serves do. H200
// fp8_block at 2^38 FLOPs: 351 TFLOP/s, where the per-projection GEMM model gave about 0.9 PFLOP/s (Qwen3-235B
// at tp 4, 4096 tokens: 916 us measured, 345 us before).
struct FlopRow {
  const char* gpu;
  const char* dtype;
  std::array<double, 15> tflops;  // at 2^30 ... 2^44 FLOPs
};
constexpr FlopRow kFlopRows[] = {
    {"a100-sxm4-80gb", "bf16", {8, 11, 14, 14, 17, 17, 22, 24, 32, 59, 73, 74, 74, 75, 75}},
    {"a100-sxm4-80gb", "int4_wo", {9, 14, 15, 17, 18, 19, 22, 36, 71, 77, 94, 120, 136, 148, 156}},
    {"b200", "bf16", {21, 42, 70, 91, 133, 187, 258, 314, 377, 570, 613, 675, 799, 729, 631}},
    {"b200", "fp8", {16, 40, 68, 96, 161, 232, 331, 455, 596, 796, 1035, 1345, 1692, 2191, 3180}},
    {"b200", "fp8_block", {13, 28, 44, 74, 117, 180, 244, 296, 375, 500, 615, 727, 813, 882, 966}},
    {"b200", "int4_wo", {4, 6, 14, 24, 31, 36, 60, 76, 130, 139, 158, 214, 280, 314, 323}},
    {"b200", "nvfp4", {24, 48, 76, 120, 213, 321, 512, 739, 1031, 1441, 1845, 2339, 2748, 3150, 3005}},
    {"b200", "w4a16_mxfp4", {26, 26, 46, 78, 96, 150, 174, 248, 240, 274, 295, 278, 306, 335, 353}},
    {"b200", "w4a8_mxfp4_mxfp8", {22, 28, 60, 104, 186, 277, 369, 571, 778, 902, 1466, 1670, 1773, 1954, 1968}},
    {"b300", "bf16", {22, 49, 75, 93, 137, 185, 262, 314, 361, 543, 616, 680, 776, 795, 668}},
    {"b300", "fp8", {18, 38, 71, 100, 172, 238, 332, 437, 563, 762, 989, 1249, 1735, 2053, 2188}},
    {"b300", "fp8_block", {13, 26, 43, 64, 117, 159, 218, 280, 382, 498, 616, 754, 833, 936, 1005}},
    {"b300", "int4_wo", {6, 10, 19, 27, 34, 43, 63, 81, 112, 134, 163, 193, 214, 224, 227}},
    {"b300", "nvfp4", {23, 48, 77, 129, 209, 320, 480, 620, 921, 1339, 1665, 2139, 2505, 2917, 3243}},
    {"b300", "w4a16_mxfp4", {34, 34, 63, 107, 131, 180, 225, 288, 284, 339, 377, 296, 222, 247, 264}},
    {"b300", "w4a8_mxfp4_mxfp8", {22, 29, 62, 113, 161, 340, 377, 597, 790, 925, 1462, 1687, 1926, 2095, 2156}},
    {"gb200", "bf16", {21, 45, 67, 92, 134, 178, 227, 286, 375, 497, 580, 676, 601, 440, 411}},
    {"gb200", "fp8", {16, 43, 71, 100, 167, 236, 338, 457, 594, 821, 985, 1280, 1370, 1770, 1764}},
    {"gb200", "fp8_block", {13, 26, 43, 65, 116, 160, 221, 287, 383, 516, 633, 770, 851, 956, 1038}},
    {"gb200", "int4_wo", {6, 10, 19, 28, 34, 40, 58, 78, 140, 161, 182, 229, 295, 336, 357}},
    {"gb200", "nvfp4", {24, 50, 76, 134, 226, 336, 545, 737, 1046, 1480, 1848, 2432, 3007, 3486, 3254}},
    {"gb200", "w4a16_mxfp4", {35, 35, 63, 106, 134, 187, 232, 297, 292, 351, 388, 355, 340, 371, 386}},
    {"gb200", "w4a8_mxfp4_mxfp8", {22, 28, 67, 115, 215, 331, 389, 596, 890, 917, 1451, 1711, 1830, 1972, 1771}},
    {"gb300", "bf16", {23, 46, 74, 96, 137, 183, 253, 307, 398, 545, 589, 680, 737, 586, 569}},
    {"gb300", "fp8", {17, 42, 72, 101, 179, 235, 341, 465, 598, 817, 1024, 1313, 1745, 2150, 2569}},
    {"gb300", "fp8_block", {14, 27, 44, 66, 121, 163, 232, 297, 399, 523, 648, 790, 875, 982, 1059}},
    {"gb300", "int4_wo", {6, 11, 19, 29, 34, 40, 59, 79, 143, 163, 185, 235, 302, 342, 365}},
    {"gb300", "nvfp4", {23, 47, 80, 134, 228, 326, 490, 672, 953, 1362, 1783, 2207, 2650, 3205, 4022}},
    {"gb300", "w4a16_mxfp4", {35, 35, 63, 109, 134, 188, 237, 300, 296, 355, 395, 359, 349, 376, 395}},
    {"gb300", "w4a8_mxfp4_mxfp8", {22, 29, 69, 118, 220, 349, 400, 654, 939, 958, 1539, 1770, 2047, 2253, 2464}},
    {"h100-sxm5-80gb", "bf16", {9, 15, 26, 33, 52, 71, 93, 122, 161, 228, 284, 362, 434, 415, 426}},
    {"h100-sxm5-80gb", "fp8", {13, 31, 38, 51, 78, 107, 148, 198, 236, 325, 408, 542, 778, 931, 1087}},
    {"h100-sxm5-80gb", "fp8_block", {17, 32, 47, 71, 100, 134, 166, 213, 285, 326, 401, 450, 491, 531, 596}},
    {"h100-sxm5-80gb", "int4_wo", {7, 11, 19, 26, 31, 35, 51, 63, 117, 125, 139, 181, 241, 260, 278}},
    {"h100-sxm5-80gb", "w4a16_mxfp4", {13, 13, 24, 41, 58, 128, 128, 182, 166, 202, 261, 289, 327, 372, 410}},
    {"h200-sxm-141gb", "bf16", {8, 16, 25, 35, 61, 85, 106, 148, 200, 263, 357, 394, 434, 543, 686}},
    {"h200-sxm-141gb", "fp8", {11, 29, 34, 49, 76, 112, 149, 207, 282, 366, 455, 609, 764, 917, 1072}},
    {"h200-sxm-141gb", "fp8_block", {15, 32, 45, 67, 89, 130, 160, 205, 291, 351, 427, 488, 507, 553, 572}},
    {"h200-sxm-141gb", "int4_wo", {5, 8, 16, 27, 35, 40, 49, 63, 88, 102, 117, 120, 127, 258, 171}},
    {"h200-sxm-141gb", "w4a16_mxfp4", {14, 14, 22, 40, 54, 128, 112, 180, 130, 198, 257, 293, 331, 367, 407}},
    {"l40s", "bf16", {10, 11, 12, 11, 17, 18, 23, 30, 40, 58, 79, 101, 119, 132, 123}},
    {"l40s", "fp8", {10, 18, 20, 21, 29, 37, 53, 59, 75, 108, 147, 206, 253, 306, 368}},
    {"l40s", "fp8_block", {5, 4, 8, 12, 18, 25, 34, 38, 61, 91, 121, 175, 235, 285, 294}},
    {"l40s", "int4_wo", {8, 21, 15, 24, 22, 24, 28, 39, 49, 62, 70, 73, 82, 104, 102}},
    {"l40s", "w4a16_mxfp4", {18, 18, 17, 23, 19, 22, 23, 23, 38, 63, 92, 97, 119, 94, 94}},
    {"rtx-pro-6000-server", "bf16", {14, 29, 42, 37, 53, 64, 74, 88, 120, 142, 170, 209, 235, 242, 197}},
    {"rtx-pro-6000-server", "fp8", {15, 37, 61, 68, 68, 95, 120, 147, 182, 240, 281, 377, 466, 550, 556}},
    {"rtx-pro-6000-server", "fp8_block", {5, 8, 9, 17, 26, 42, 61, 81, 126, 168, 228, 298, 385, 457, 503}},
    {"rtx-pro-6000-server", "int4_wo", {6, 7, 14, 22, 30, 36, 46, 63, 79, 94, 117, 130, 152, 161, 158}},
    {"rtx-pro-6000-server", "nvfp4", {16, 32, 57, 90, 115, 131, 190, 231, 285, 397, 474, 618, 809, 973, 1126}},
    {"rtx-pro-6000-server", "w4a16_mxfp4", {9, 9, 23, 42, 30, 103, 88, 119, 110, 154, 186, 185, 208, 238, 219}},
    {"rtx-pro-6000-server", "w4a8_mxfp4_mxfp8", {14, 21, 42, 66, 105, 181, 183, 284, 383, 432, 500, 537, 546, 546, 546}},
};

}  // namespace

const Curve* moe_layer_flop_rate(const Gpu& gpu, WeightFormat experts) {
  static const std::vector<Curve> curves = [] {
    std::vector<Curve> out;
    for (const FlopRow& r : kFlopRows) {
      Curve c = Curve::powers_of_two(30, r.tflops, 1e12,
                                     "AIConfigurator measured MoE layers, balanced routing, > 16 rows per expert "
                                     "(moe_table.cc)");
      out.push_back(std::move(c));
    }
    return out;
  }();
  const char* d = dtype_key(experts, gpu);
  if (!d) return nullptr;
  const char* alias = measured_name(gpu.name);
  const std::string_view name = alias ? std::string_view(alias) : std::string_view(gpu.name);
  for (size_t i = 0; i < std::size(kFlopRows); ++i)
    if (name == kFlopRows[i].gpu && std::string_view(d) == kFlopRows[i].dtype) return &curves[i];
  return nullptr;
}

const Curve* moe_layer_rate(const Gpu& gpu, WeightFormat experts) {
  static const std::vector<std::pair<std::string, Curve>> curves = [] {
    std::vector<std::pair<std::string, Curve>> out;
    for (const Row& r : kRows) {
      Curve c = Curve::powers_of_two(22, r.gbps, 1e9,
                                     "AIConfigurator measured MoE layers, balanced routing, <= 16 rows per expert "
                                     "(moe_table.cc)");
      out.emplace_back(std::string(r.gpu) + "/" + r.dtype, std::move(c));
    }
    return out;
  }();
  const char* d = dtype_key(experts, gpu);
  if (!d) return nullptr;
  const char* alias = measured_name(gpu.name);
  const std::string key = (alias ? std::string(alias) : gpu.name) + "/" + d;
  for (const auto& [k, c] : curves)
    if (k == key) return &c;
  return nullptr;
}

}  // namespace shardplan::serving
