#include "modeler/serving/formats.h"

#include <array>
#include <utility>

namespace shardplan::serving {

namespace {
struct FormatName {
  WeightFormat f;
  const char* name;
};
// The serving-runs schema's names (design.md) plus the GGUF block types a mix resolves to.
constexpr std::array<FormatName, 20> kNames = {{
    {WeightFormat::bf16, "bf16"},       {WeightFormat::fp16, "fp16"},       {WeightFormat::fp8, "fp8"},
    {WeightFormat::fp8_block, "fp8_block"}, {WeightFormat::mxfp8, "mxfp8"}, {WeightFormat::nvfp4, "nvfp4"},
    {WeightFormat::mxfp4, "mxfp4"},     {WeightFormat::int8_wo, "int8_wo"}, {WeightFormat::int4_wo, "int4_wo"},
    {WeightFormat::q8_0, "q8_0"},       {WeightFormat::q6_k, "q6_k"},       {WeightFormat::q5_k, "q5_k"},
    {WeightFormat::q4_k, "q4_k"},       {WeightFormat::q3_k, "q3_k"},       {WeightFormat::q2_k, "q2_k"},
    {WeightFormat::q4_0, "q4_0"},       {WeightFormat::q5_k_m, "q5_k_m"},   {WeightFormat::q4_k_m, "q4_k_m"},
    {WeightFormat::q3_k_m, "q3_k_m"},   {WeightFormat::f32, "f32"},
}};
}  // namespace

std::optional<WeightFormat> parse_weight_format(std::string_view name) {
  for (const auto& n : kNames)
    if (name == n.name) return n.f;
  return std::nullopt;
}

std::string weight_format_name(WeightFormat f) {
  for (const auto& n : kNames)
    if (n.f == f) return n.name;
  return "?";
}

const char* weight_format_names() {
  return "bf16 fp16 fp8 fp8_block mxfp8 nvfp4 mxfp4 int8_wo int4_wo q8_0 q6_k q5_k q5_k_m q4_k q4_k_m q4_0 q3_k "
         "q3_k_m q2_k";
}

double bits_per_weight(WeightFormat f) {
  switch (f) {
    case WeightFormat::f32: return 32.0;
    case WeightFormat::bf16:
    case WeightFormat::fp16: return 16.0;
    // Per-tensor scale: negligible. fp8_block: one fp32 scale per 128x128 block (DeepSeek-V3 tech report 3.3.2).
    case WeightFormat::fp8: return 8.0;
    case WeightFormat::fp8_block: return 8.0 + 32.0 / (128.0 * 128.0);
    // OCP Microscaling spec v1.0: one E8M0 (8-bit) scale per block of 32 elements.
    case WeightFormat::mxfp8: return 8.0 + 8.0 / 32.0;
    case WeightFormat::mxfp4: return 4.0 + 8.0 / 32.0;
    // NVFP4 (NVIDIA Blackwell docs): one FP8 E4M3 scale per 16 elements, plus a per-tensor fp32 scale.
    case WeightFormat::nvfp4: return 4.0 + 8.0 / 16.0;
    // Weight-only integer: per-channel scale for int8 (negligible); int4 GPTQ/AWQ group 128 with an fp16 scale
    // (and a packed 4-bit zero point for AWQ): 4 + 20/128.
    case WeightFormat::int8_wo: return 8.0;
    case WeightFormat::int4_wo: return 4.0 + 20.0 / 128.0;
    // ggml block sizes (ggml/src/ggml-common.h): bytes per block x 8 / weights per block.
    case WeightFormat::q8_0: return 34.0 * 8 / 32;   // fp16 scale + 32 int8
    case WeightFormat::q4_0: return 18.0 * 8 / 32;   // fp16 scale + 32 nibbles
    case WeightFormat::q6_k: return 210.0 * 8 / 256;  // 6.5625
    case WeightFormat::q5_k:
    case WeightFormat::q5_k_m: return 176.0 * 8 / 256;  // 5.5
    case WeightFormat::q4_k:
    case WeightFormat::q4_k_m: return 144.0 * 8 / 256;  // 4.5
    case WeightFormat::q3_k:
    case WeightFormat::q3_k_m: return 110.0 * 8 / 256;  // 3.4375
    case WeightFormat::q2_k: return 84.0 * 8 / 256;     // 2.625
  }
  return 16.0;
}

namespace {
// llama.cpp's use_more_bits(i, n): the first and last eighth of the layers and every third one between them.
bool use_more_bits(int i, int n) { return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2; }
}  // namespace

WeightFormat gguf_tensor_format(WeightFormat file_type, TensorRole role, int layer, int layers) {
  // The k-quant mixes of llama.cpp src/llama-quant.cpp (llama_tensor_get_type), main cases: the output matrix in
  // q6_k; attn_v and ffn_down one or two types up on the use_more_bits layers. Embedding rows are looked up, not
  // multiplied, and keep the main type. Router and norms are not quantised (f32) in llama.cpp's converter.
  const bool mix = file_type == WeightFormat::q4_k_m || file_type == WeightFormat::q5_k_m ||
                   file_type == WeightFormat::q3_k_m;
  if (role == TensorRole::router || role == TensorRole::other)
    return (mix || file_type == WeightFormat::q8_0 || file_type == WeightFormat::q4_0 ||
            file_type == WeightFormat::q6_k || file_type == WeightFormat::q2_k)
               ? WeightFormat::f32
               : file_type;
  if (!mix) {
    if (file_type == WeightFormat::q2_k || file_type == WeightFormat::q4_0)
      return role == TensorRole::output ? WeightFormat::q6_k : file_type;
    return file_type;
  }
  if (role == TensorRole::output) return WeightFormat::q6_k;
  switch (file_type) {
    case WeightFormat::q4_k_m:
      if ((role == TensorRole::attn_v || role == TensorRole::ffn_down) && use_more_bits(layer, layers))
        return WeightFormat::q6_k;
      return WeightFormat::q4_k;
    case WeightFormat::q5_k_m:
      if ((role == TensorRole::attn_v || role == TensorRole::ffn_down) && use_more_bits(layer, layers))
        return WeightFormat::q6_k;
      return WeightFormat::q5_k;
    case WeightFormat::q3_k_m:
      if (role == TensorRole::attn_v) return layer < 2 ? WeightFormat::q5_k : WeightFormat::q4_k;
      if (role == TensorRole::attn_output) return WeightFormat::q4_k;
      if (role == TensorRole::ffn_down)
        return layer < layers / 16 ? WeightFormat::q5_k
                                   : (use_more_bits(layer, layers) ? WeightFormat::q4_k : WeightFormat::q3_k);
      return WeightFormat::q3_k;
    default: return file_type;
  }
}

Dtype math_dtype(WeightFormat f, const Gpu& gpu) {
  switch (f) {
    case WeightFormat::fp8:
    case WeightFormat::fp8_block:
    case WeightFormat::mxfp8: return gpu.peak_for(Dtype::fp8).v > 0 ? Dtype::fp8 : Dtype::bf16;
    case WeightFormat::nvfp4:
    case WeightFormat::mxfp4: return gpu.peak_for(Dtype::fp4).v > 0 ? Dtype::fp4 : Dtype::bf16;
    case WeightFormat::fp16: return Dtype::fp16;
    default: return Dtype::bf16;
  }
}

WeightFormat checkpoint_kernel_format(WeightFormat stated, int checkpoint_fp8_block) {
  return stated == WeightFormat::fp8 && checkpoint_fp8_block > 0 ? WeightFormat::fp8_block : stated;
}

std::string apply_checkpoint_format(WeightFormat* weights, WeightFormat* moe_weights, int checkpoint_fp8_block) {
  const WeightFormat w = checkpoint_kernel_format(*weights, checkpoint_fp8_block);
  const WeightFormat e = checkpoint_kernel_format(*moe_weights, checkpoint_fp8_block);
  if (w == *weights && e == *moe_weights) return "";
  *weights = w;
  *moe_weights = e;
  const std::string n = std::to_string(checkpoint_fp8_block);
  return "fp8 on a " + n + "x" + n + " block-scaled checkpoint: fp8_block kernels";
}

bool is_gguf_block_format(WeightFormat f) {
  switch (f) {
    case WeightFormat::q8_0:
    case WeightFormat::q6_k:
    case WeightFormat::q5_k:
    case WeightFormat::q4_k:
    case WeightFormat::q3_k:
    case WeightFormat::q2_k:
    case WeightFormat::q4_0:
    case WeightFormat::q5_k_m:
    case WeightFormat::q4_k_m:
    case WeightFormat::q3_k_m:
      return true;
    default:
      return false;
  }
}

double metal_mul_mv_converts_per_weight(WeightFormat f) {
  // Read in ggml-metal.metal (kernel_mul_mv_q4_K_f32_impl, _q5_K_, _q6_K_; an indexed copy of the current kernels,
  // the same per-weight pattern as the 2024 builds the rows ran): each weight is masked (q4_K: `qs & 0x000F`
  // ... `& 0xF000`, the scale folded in later) or assembled from its low and high bits (q5_K, q6_K), and the
  // integer is multiplied by the f32 activation, one int-to-float conversion per weight. q8_0, q4_0, q3_K and
  // q2_K follow the same pattern (assumed, not read). 16-bit weights are operands of the FMA at no extra cost
  // (philipturner/metal-benchmarks@dc2adc6 README "ALU Layout": most pipelines accept 16-bit operands for free).
  return is_gguf_block_format(f) ? 1.0 : 0.0;
}

std::optional<double> parse_kv_bytes(std::string_view name) {
  if (name == "bf16" || name == "fp16") return 2.0;
  if (name == "fp8") return 1.0;
  if (name == "q8_0") return 34.0 / 32.0;
  if (name == "q4_0") return 18.0 / 32.0;
  return std::nullopt;
}

}  // namespace shardplan::serving
