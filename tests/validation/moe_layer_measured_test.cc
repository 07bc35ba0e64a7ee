// The expert compute of one MoE layer against measured MoE-layer kernels (issue 13): shardplan's forward of the
// routed experts (moe_forward_parts: routing, permutation, grouped gate+up and down GEMMs, activation, and under
// fp8 the expert inputs' quantization) against NVIDIA AIConfigurator's measured forward of one MoE layer on one GPU
// (../shared/data/measured_kernels/moe.csv.gz, AIConfigurator commit 095f58a51c4ca8e61b66ec108d86f223f8d559ce,
// collector/{trtllm,sglang,vllm}/collect_moe.py: routing from given logits, permutation, grouped GEMM 1, SwiGLU,
// grouped GEMM 2, un-permute; CUDA-graph replays; no all-to-all). Rows copied below: balanced routing, 16384
// tokens (the largest balanced size measured), tp 1, ep 1 and 8, bf16 and fp8 (per-tensor W8A8), the geometries
// of the published MoE runs (Qwen3-30B-A3B 2048/768/128 top-8, Qwen3-235B-A22B 4096/1536/128, DeepSeek-V3
// 7168/2048/256). An AIC row of `tokens` at ep e is the layer of a training rank holding tokens / e tokens: its
// tokens x top_k / e pairs over experts / e local experts (1024 rows per expert for Qwen3, 512 for DeepSeek-V3).
// The measured kernels are inference kernels (TRT-LLM CUTLASS grouped GEMM, vLLM/SGLang Triton fused_moe,
// FlashInfer); Megatron-Core's training rows run TE GroupedLinear (one cuBLAS GEMM per expert over 4 streams), which
// shardplan times at the measured dense GEMM tables' per-expert shape. The check is one-sided: a training model
// should not be faster than the fastest measured implementation of the same work.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "modeler/evaluate.h"
#include "modeler/framework.h"
#include "modeler/io/model_io.h"
#include "modeler/io/system_io.h"
#include "modeler/layer_cost.h"
#include "modeler/precision_recipe.h"
#include "modeler/strategies/strategy.h"

using namespace shardplan;

namespace {

struct MoeRow {
  const char* system;
  const char* model;
  const char* dtype;
  int ep;
  // Over framework versions (bf16: SGLang, TRT-LLM, vLLM; fp8: TRT-LLM, vLLM).
  double median_us, min_us, max_us;
};
constexpr int kTokens = 16384;
constexpr MoeRow kRows[] = {
    {"dgx-b200", "deepseek-v3", "bf16", 1, 15828, 8018, 36260},
    {"dgx-b200", "deepseek-v3", "bf16", 8, 3668, 1200, 6575},
    {"dgx-b200", "deepseek-v3", "fp8", 1, 5327, 4919, 9423},
    {"dgx-b200", "deepseek-v3", "fp8", 8, 1133, 933.1, 3101},
    {"dgx-b200", "qwen3-235b-a22b", "bf16", 1, 5053, 3275, 12615},
    {"dgx-b200", "qwen3-235b-a22b", "bf16", 8, 718, 493.3, 2980},
    {"dgx-b200", "qwen3-235b-a22b", "fp8", 1, 2945, 2542, 4023},
    {"dgx-b200", "qwen3-235b-a22b", "fp8", 8, 483, 428.5, 1838},
    {"dgx-b200", "qwen3-30b-a3b", "bf16", 1, 1431, 1317, 3177},
    {"dgx-b200", "qwen3-30b-a3b", "bf16", 8, 250.3, 231.4, 1192},
    {"dgx-b200", "qwen3-30b-a3b", "fp8", 1, 1431, 811, 1781},
    {"dgx-b200", "qwen3-30b-a3b", "fp8", 8, 246.8, 204.6, 995.3},
    {"dgx-h100", "deepseek-v3", "bf16", 1, 38506, 17003, 53671},
    {"dgx-h100", "deepseek-v3", "bf16", 8, 6315, 2494, 49913},
    {"dgx-h100", "deepseek-v3", "fp8", 1, 12053, 10233, 48885},
    {"dgx-h100", "deepseek-v3", "fp8", 8, 2868, 1721, 8692},
    {"dgx-h100", "qwen3-235b-a22b", "bf16", 1, 11014, 7704, 22162},
    {"dgx-h100", "qwen3-235b-a22b", "bf16", 8, 2696, 1039, 20740},
    {"dgx-h100", "qwen3-235b-a22b", "fp8", 1, 5706, 4849, 22272},
    {"dgx-h100", "qwen3-235b-a22b", "fp8", 8, 1522, 766.3, 4489},
    {"dgx-h100", "qwen3-30b-a3b", "bf16", 1, 2789, 2496, 5627},
    {"dgx-h100", "qwen3-30b-a3b", "bf16", 8, 1124, 399.2, 5348},
    {"dgx-h100", "qwen3-30b-a3b", "fp8", 1, 2363, 1967, 5912},
    {"dgx-h100", "qwen3-30b-a3b", "fp8", 8, 596.7, 362.4, 1642},
    {"gb200-nvl72", "deepseek-v3", "bf16", 1, 31984, 7412, 36479},
    {"gb200-nvl72", "deepseek-v3", "bf16", 8, 5985, 1171, 24833},
    {"gb200-nvl72", "deepseek-v3", "fp8", 1, 8469, 4735, 22435},
    {"gb200-nvl72", "deepseek-v3", "fp8", 8, 2969, 884.9, 6394},
    {"gb200-nvl72", "qwen3-235b-a22b", "bf16", 1, 5218, 3096, 14673},
    {"gb200-nvl72", "qwen3-235b-a22b", "bf16", 8, 1286, 469.3, 9793},
    {"gb200-nvl72", "qwen3-235b-a22b", "fp8", 1, 2484, 2393, 10300},
    {"gb200-nvl72", "qwen3-235b-a22b", "fp8", 8, 462.8, 407.6, 3753},
    {"gb200-nvl72", "qwen3-30b-a3b", "bf16", 1, 1567, 1275, 3365},
    {"gb200-nvl72", "qwen3-30b-a3b", "bf16", 8, 576.1, 224.4, 2677},
    {"gb200-nvl72", "qwen3-30b-a3b", "fp8", 1, 1364, 777.8, 3054},
    {"gb200-nvl72", "qwen3-30b-a3b", "fp8", 8, 241.5, 194.5, 1662},
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/// shardplan's forward of the measured op's work on the rank of a training plan (megatron-lm's profile: one GEMM
/// per expert, fused permutation; tensorwise fp8 as the 25.09 recipes run it): tokens / ep tokens per rank, token
/// drop at capacity 1 (every expert at the balanced load, as the measured round-robin routing). The router GEMM
/// (the op is given logits), the host wait and the small kernels' launch floor are left out; under fp8 the expert
/// inputs' quantization is added (the measured fp8 op quantizes its activations).
double predict_us(const MoeRow& r) {
  const ModelDesc m = io::load_model(r.model, true);
  const System sys = io::load_system(r.system, std::max(8, r.ep));
  Plan p;
  p.dp = sys.gpus;
  p.ep = r.ep;
  p.seq_len = kTokens / r.ep;
  p.global_batch = sys.gpus;
  p.capacity_factor = 1.0;
  p.precision = std::string(r.dtype) == "fp8" ? Dtype::fp8 : Dtype::bf16;
  p.fp8_recipe = Fp8Recipe::tensorwise;
  const Framework fw = *find_framework("megatron-lm");
  const Context ctx{m, sys, p, fw};
  Sharding sh = unsharded(ctx);
  for (const Strategy* s : all_strategies()) s->shard(ctx, &sh);
  const MoeForwardParts q = moe_forward_parts(ctx, sh);
  Seconds t = q.routing + q.permutation + q.fc1 + q.fc2 + q.activation;
  if (p.precision == Dtype::fp8) {
    const RecipeKernels k = recipe_kernels(Fp8Recipe::tensorwise, fw, sys.gpu);
    t += memory_time(sys.gpu, Bytes(sh.expert_tokens * (m.hidden + sh.expert_ffn) * k.activation.bytes_per_elem));
  }
  return t.v * 1e6;
}

}  // namespace

TEST_CASE("MoE layer forward: shardplan's expert compute vs measured MoE kernels") {
  std::vector<double> fp8_vs_min, bf16_vs_min, vs_median;
  std::printf("moe_layer: %-12s %-16s %-5s %3s %10s %10s %10s %7s %7s\n", "system", "model", "dtype", "ep", "median",
              "min", "predicted", "/median", "/min");
  for (const MoeRow& r : kRows) {
    const double pred = predict_us(r);
    std::printf("moe_layer: %-12s %-16s %-5s %3d %8.0fus %8.0fus %8.0fus %7.2f %7.2f\n", r.system, r.model, r.dtype,
                r.ep, r.median_us, r.min_us, pred, pred / r.median_us, pred / r.min_us);
    (std::string(r.dtype) == "fp8" ? fp8_vs_min : bf16_vs_min).push_back(pred / r.min_us);
    vs_median.push_back(pred / r.median_us);
    // Never far faster than the fastest measured implementation of the same work.
    CHECK(pred / r.min_us >= 0.7);
  }
  std::printf("moe_layer: predicted / measured, median over rows: %.2f of the median, %.2f (fp8) and %.2f (bf16) of "
              "the fastest version\n", median(vs_median), median(fp8_vs_min), median(bf16_vs_min));
  CHECK(fp8_vs_min.size() == 18);
  CHECK(bf16_vs_min.size() == 18);
  // fp8: at or above the fastest measured kernel on every row; bf16: at it on the median row.
  CHECK(*std::min_element(fp8_vs_min.begin(), fp8_vs_min.end()) >= 1.0);
  CHECK(median(bf16_vs_min) >= 1.0);
}
