// Routed-expert biases in host memory during prefill (gpt-oss): an engine rule of ik_llama.cpp that the additive
// offload model (offload.h) does not see, because a bias is not an offload item of its own (it is bytes of the
// block's norms tensor). docs/serving-offload.md, "The engine's rules the validator follows", has the sources.
//
// ik_llama.cpp's CUDA backend takes an op whose weight lives in host memory when op->ne[1] >= 32 (MUL_MAT_ID and
// the fused up/gate op: ne[2]) (ggml_backend_cuda_offload_op in ggml/src/ggml-cuda.cu, the "Original" rule its
// source keeps for every op but the MoE matmuls). The down projection's bias add, ADD_ID on a [hidden, top_k,
// tokens] tensor, has ne[1] = top_k (4 on gpt-oss), so with the bias in host memory it stays on the CPU in every
// prefill step, while the down projection itself is streamed to the GPU (its batch is the tokens). Its output
// therefore goes to the host and, biased, back to the GPU for the weighted sum of the experts (the scheduler's
// "expand gpu up" pass puts that sum, which has no weight of its own, with the next GPU node). The fused up/gate
// op carries its biases as sources (ggml_moe_up_gate_ext in llm_build_moe_ffn, src/llama-build-context.cpp) and
// is streamed with them, so only the down bias causes the round trip. Mainline llama.cpp's rule counts the rows
// of any other op (get_op_batch_size: ggml_nrows), so there the bias add follows to the GPU and costs nothing.
#pragma once

#include <string>
#include <vector>

#include "modeler/serving/offload.h"

namespace shardplan::serving {

/// Seconds one prefill step adds per MoE block whose down-projection bias is in host memory and whose down
/// projection is streamed: the f32 expert outputs (hidden x top_k x tokens x 4 B) cross PCIe to the host and back at
/// the host's pinned rate, and the CPU reads and writes them once (the bias add) at its memory rate. 0 for a model
/// without expert biases or MoE.
double host_expert_bias_roundtrip_s(const OffloadSetup& s);

/// Whether ik_llama.cpp's --n-cpu-moe / --cpu-moe also sends the expert biases to host memory: its pattern
/// `\.ffn_(up|down|gate)_exps` matches `blk.N.ffn_down_exps.bias` until PR #841 (opened 2025-10-19, "Change
/// --n-cpu-moe to not keep expert biases on CPU", which adds `\.weight`). A build dated on or before the opening
/// day has the older pattern; an unknown date the newer one.
bool ik_n_cpu_moe_moves_biases(const std::string& build_date);

/// The blocks whose down-projection bias (GGUF `blk.N.ffn_down_exps.bias`) sits in host memory under llama.cpp
/// flags: -ot patterns are matched against that name with std::regex_search (as llama.cpp matches tensor names);
/// --n-cpu-moe K adds blocks 0..K-1 when `n_cpu_moe_moves_biases`. Throws ConfigError for a bad regex.
std::vector<bool> host_bias_blocks(int layers, int n_cpu_moe, bool n_cpu_moe_moves_biases,
                                   const std::vector<std::string>& cpu_regexes);

/// Adds the round trip to a placement's prefill step for every MoE block with a host bias whose down-expert tensor
/// is streamed in prefill (a block whose experts the CPU computes adds its bias there, with no copy). Returns the
/// number of such blocks.
int add_host_bias_prefill(const std::vector<OffloadItem>& items, const OffloadSetup& s,
                          const std::vector<bool>& host_bias, Placement* p);

}  // namespace shardplan::serving
