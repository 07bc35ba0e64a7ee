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
}  // namespace

const Curve* moe_layer_rate(const Gpu& gpu, WeightFormat experts) {
  static const std::vector<std::pair<std::string, Curve>> curves = [] {
    std::vector<std::pair<std::string, Curve>> out;
    for (const Row& r : kRows) {
      Curve c;
      for (int i = 0; i < 11; ++i) {
        c.x.push_back(static_cast<double>(1ULL << (22 + i)));
        c.y.push_back(r.gbps[static_cast<size_t>(i)] * 1e9);
      }
      c.source = "AIConfigurator measured MoE layers, balanced routing, <= 16 rows per expert (moe_table.cc)";
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
