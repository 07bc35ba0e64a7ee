// Weight and KV-cache storage formats for serving: bits per weight (with scales), the GEMM math they run in, and
// the GGUF k-quant mixes (which tensor type gets which block format).
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "modeler/system.h"

namespace shardplan::serving {

/// How a weight matrix is stored. GGUF types name llama.cpp's block formats; the *_k_m / *_k_s names are mixes
/// (a file type), resolved per tensor by gguf_tensor_format.
enum class WeightFormat {
  bf16, fp16, fp8, fp8_block, mxfp8, nvfp4, mxfp4, int8_wo, int4_wo,
  q8_0, q6_k, q5_k, q4_k, q3_k, q2_k, q4_0,       // GGUF block types
  q5_k_m, q4_k_m, q3_k_m,                         // GGUF file types (mixes)
  f32,                                            // norms, biases (GGUF keeps them in f32)
};

/// Parses a schema name (`bf16 fp16 fp8 fp8_block mxfp8 nvfp4 mxfp4 int8_wo int4_wo q8_0 q6_k q5_k_m q4_k_m q4_0
/// q3_k_m q2_k`); nullopt for anything else.
std::optional<WeightFormat> parse_weight_format(std::string_view name);
std::string weight_format_name(WeightFormat f);
/// Names accepted by parse_weight_format, space separated, for help text and errors.
const char* weight_format_names();

/// Storage bits per weight including block scales. A mix (q4_k_m ...) reports its main type's bits; use
/// gguf_tensor_format for the per-tensor type.
double bits_per_weight(WeightFormat f);

/// The tensor roles a GGUF mix distinguishes (llama.cpp src/llama-quant.cpp, llama_tensor_get_type).
enum class TensorRole { token_embd, output, attn_q, attn_k, attn_v, attn_output, ffn_gate, ffn_up, ffn_down,
                        router, other };

/// The block type a GGUF file type gives one tensor of layer `layer` of `layers`. For a non-mix format: itself.
WeightFormat gguf_tensor_format(WeightFormat file_type, TensorRole role, int layer, int layers);

/// The dtype the GEMM math runs in on `gpu`: fp8 formats on fp8 tensor cores, fp4 formats on fp4 tensor cores
/// where the GPU has them (else dequantised to bf16, as Marlin-style weight-only kernels do), weight-only
/// integer and GGUF formats in 16 bits.
Dtype math_dtype(WeightFormat f, const Gpu& gpu);

/// The format whose kernels an engine runs for a `stated` format on a checkpoint whose fp8 weight block is
/// `checkpoint_fp8_block` (ModelDesc::checkpoint_fp8_block; 0: not block-scaled). vLLM, SGLang and TRT-LLM build
/// block-scaled fp8 linears and MoE experts for a checkpoint that states weight_block_size (hf_config.cc cites
/// where), so a stated fp8 there is fp8_block. Every other stated format stands: with an nvfp4 or bf16 statement
/// the config describes the architecture of another checkpoint (nvidia's FP4 DeepSeek-V3, a bf16 conversion).
WeightFormat checkpoint_kernel_format(WeightFormat stated, int checkpoint_fp8_block);

/// checkpoint_kernel_format applied to the dense and the routed-expert format in place; the note saying what
/// changed ("fp8 on a 128x128 block-scaled checkpoint: fp8_block kernels"), or "" when nothing did.
std::string apply_checkpoint_format(WeightFormat* weights, WeightFormat* moe_weights, int checkpoint_fp8_block);

/// Whether `f` is one of llama.cpp's GGUF block formats (q8_0, q4_0, the k-quants and their mixes): the formats
/// whose matrix multiplications run in llama.cpp's own quantised kernels (ggml-cuda mmvq/mmq, ggml-metal mul_mv).
bool is_gguf_block_format(WeightFormat f);

/// Integer-to-float conversions per weight in llama.cpp's Metal matrix-vector kernels (kernel_mul_mv_<type>_f32,
/// ggml-metal.metal): 1 for a GGUF block format, whose kernels mask each weight's bits out of its block and multiply
/// the integer by the f32 activation; 0 for 16- and 32-bit weights, read as operands at no cost.
double metal_mul_mv_converts_per_weight(WeightFormat f);

/// KV-cache element bytes: bf16/fp16 2, fp8 1, q8_0 34/32, q4_0 18/32 (ggml block sizes).
std::optional<double> parse_kv_bytes(std::string_view name);

}  // namespace shardplan::serving
