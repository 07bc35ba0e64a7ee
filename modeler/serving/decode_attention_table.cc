// Achieved KV-read rate of GQA decode attention per GPU and KV dtype, derived from NVIDIA AIConfigurator's
// measured kernels (shared/data/measured_kernels/attention_decode.csv.gz, aiconfigurator commit 095f58a5,
// Apache-2.0; CUDA-graph replays inside TRT-LLM, SGLang and vLLM containers).
// Derivation (reproducible): rows with window_size 0, head_dim 128, kv_heads 8 and heads >= 32 (the GQA shape
// of the serving models); bytes = batch x (kv_len + 1) x kv_heads x head_dim x 2 (K and V) x element size, as
// the README there states; rate = bytes / latency_us_median; rows with bytes >= 64 KiB binned by
// round(log2(bytes)); per bin the median rate of each scope (`kernel`: SGLang/vLLM, `trtllm_op`: TRT-LLM's
// op with RoPE and the KV write), then the faster scope (the README's own rule for several kernels of one
// key); an empty top bin repeats the one below. Values in GB/s at 2^16 ... 2^31 bytes.
// Small reads are bound by the kernel's fixed cost (a few us); mid-size reads run well below the HBM rate
// (too few blocks per SM); on L40S and RTX PRO 6000 the bins below the L2 size read from cache (the benchmark
// replays one kernel), so serving caps the rate at the HBM bandwidth, as for the decode GEMMs.
#include "modeler/serving/decode_attention_table.h"

#include <array>
#include <utility>
#include <vector>

namespace shardplan::serving {

namespace {
struct Row {
  const char* gpu;
  const char* kv;
  std::array<double, 16> gbps;
};
constexpr Row kRows[] = {
    {"a100-sxm4-80gb", "bf16", {5, 9, 18, 32, 56, 93, 155, 280, 451, 557, 748, 852, 1004, 1095, 1242, 1259}},
    {"a100-sxm4-40gb", "bf16", {5, 9, 18, 32, 56, 93, 155, 280, 451, 557, 748, 852, 1004, 1095, 1242, 1259}},
    {"b200", "bf16", {8, 16, 31, 62, 124, 240, 460, 739, 1428, 2615, 4705, 4422, 5505, 6401, 6852, 7072}},
    {"b200", "fp8", {8, 16, 31, 62, 124, 240, 397, 789, 1408, 2597, 4079, 4375, 5438, 6092, 6731, 6731}},
    {"b300", "bf16", {8, 15, 31, 61, 122, 241, 431, 735, 1458, 2683, 4769, 4478, 5611, 6326, 6728, 6994}},
    {"b300", "fp8", {8, 16, 31, 62, 124, 241, 406, 786, 1458, 2714, 4319, 4522, 5500, 6133, 6730, 6730}},
    {"gb200", "bf16", {7, 15, 28, 57, 107, 200, 400, 707, 1287, 2364, 4478, 4329, 5639, 6483, 7046, 7347}},
    {"gb200", "fp8", {7, 14, 27, 54, 102, 206, 354, 671, 1223, 2346, 3881, 4368, 5487, 6292, 6921, 6921}},
    {"gb300", "bf16", {7, 15, 30, 59, 110, 201, 402, 724, 1333, 2516, 4642, 4319, 5514, 6367, 6852, 7115}},
    {"gb300", "fp8", {7, 14, 27, 54, 99, 196, 364, 703, 1291, 2353, 4078, 4250, 5382, 6182, 6825, 6825}},
    {"h100-sxm5-80gb", "bf16", {7, 14, 25, 47, 93, 156, 327, 470, 847, 1514, 1732, 2174, 2561, 2781, 2979, 3067}},
    {"h100-sxm5-96gb", "bf16", {7, 14, 25, 47, 93, 156, 327, 470, 847, 1514, 1732, 2174, 2561, 2781, 2979, 3067}},
    {"h800-sxm5-80gb", "bf16", {7, 14, 25, 47, 93, 156, 327, 470, 847, 1514, 1732, 2174, 2561, 2781, 2979, 3067}},
    {"h100-sxm5-80gb", "fp8", {11, 21, 41, 75, 130, 246, 430, 782, 1175, 1483, 1864, 2285, 2650, 2880, 2994, 2994}},
    {"h100-sxm5-96gb", "fp8", {11, 21, 41, 75, 130, 246, 430, 782, 1175, 1483, 1864, 2285, 2650, 2880, 2994, 2994}},
    {"h800-sxm5-80gb", "fp8", {11, 21, 41, 75, 130, 246, 430, 782, 1175, 1483, 1864, 2285, 2650, 2880, 2994, 2994}},
    {"h200-sxm-141gb", "bf16", {8, 14, 25, 48, 94, 160, 325, 468, 885, 1622, 2089, 2767, 3365, 3824, 4196, 4368}},
    {"h200-sxm-141gb", "fp8", {11, 22, 43, 78, 135, 257, 438, 791, 1178, 1614, 2110, 2796, 3424, 3933, 4223, 4223}},
    {"l40s", "bf16", {9, 17, 29, 55, 110, 157, 341, 557, 947, 1424, 1779, 633, 667, 677, 700, 701}},
    {"l40s", "fp8", {7, 14, 27, 46, 79, 153, 250, 466, 814, 1303, 1843, 628, 652, 702, 712, 712}},
    {"rtx-pro-6000-server", "bf16",
     {10, 21, 41, 70, 134, 203, 376, 631, 1188, 1853, 2236, 2498, 1402, 1459, 1497, 1521}},
    {"rtx-pro-6000-server", "fp8", {7, 15, 30, 58, 92, 165, 287, 533, 933, 1469, 2092, 2198, 1355, 1481, 1517, 1517}},
};
}  // namespace

const Curve* decode_attention_rate(const std::string& gpu, double kv_bytes) {
  static const std::vector<std::pair<std::string, Curve>> curves = [] {
    std::vector<std::pair<std::string, Curve>> out;
    for (const Row& r : kRows) {
      Curve c = Curve::powers_of_two(
          16, r.gbps, 1e9, "AIConfigurator measured decode attention (decode_attention_table.cc)");
      out.emplace_back(std::string(r.gpu) + "/" + r.kv, std::move(c));
    }
    return out;
  }();
  const std::string key = gpu + "/" + (kv_bytes < 1.5 ? "fp8" : "bf16");
  for (const auto& [k, c] : curves)
    if (k == key) return &c;
  return nullptr;
}

}  // namespace shardplan::serving
