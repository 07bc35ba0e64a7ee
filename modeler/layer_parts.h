// The building blocks the layer cost files share (layer_cost.cc, attention_cost.cc, mlp_cost.cc): a linear
// layer's three GEMMs, sums of them, memory-bound kernels, and the dtypes a plan's GEMMs run in.
#pragma once

#include "modeler/gemm_model.h"
#include "modeler/strategies/strategy.h"

namespace shardplan {

constexpr double kActBytes = 2.0;  // bytes per activation element (bf16/fp16)

/// The GEMM dtype of the plan's linears (fp32 plans run TF32 tensor cores).
Dtype gemm_dtype(const Plan& p);
/// The table the plan's fp8 GEMMs use: the recipe's scaling (precision_recipe.h).
Fp8Scaling fp8_scaling(const Context& ctx);
/// GEMMs that stay in 16 bits in 8- and 4-bit recipes (attention's products, the LM head): the plan's 16-bit
/// precision, or the GPU's 16-bit format when the plan's precision is narrower.
Dtype sixteen_bit_gemm(const Context& ctx);
/// Where a weight gradient's GEMM writes (layer_parts.cc: fp32 main_grad under gradient accumulation fusion).
GemmOutput wgrad_output(const Context& ctx);

/// Forward and backward (data + weight gradient) time of one linear layer y[m,n] = x[m,k] W[k,n].
struct Linear {
  Seconds fwd, bwd, dgrad, wgrad;  // bwd = dgrad + wgrad
  double flops_fwd;
};
/// The GEMMs run in `d` (the plan's GEMM dtype, or the router's); `fwd_chunks` / `dgrad_chunks`: the fprop and
/// dgrad GEMMs run as that many blocks of m / chunks rows each (TP comm-GEMM overlap), each at its own size's
/// efficiency.
Linear linear(const Context& ctx, Dtype d, double m, double n, double k, double fwd_chunks = 1,
              double dgrad_chunks = 1);

/// Forward and backward time and forward FLOPs of a set of GEMMs.
struct Gemms {
  Seconds fwd, bwd, dgrad, wgrad;
  double flops_fwd = 0;
  void add(const Linear& l) {
    fwd += l.fwd;
    bwd += l.bwd;
    dgrad += l.dgrad;
    wgrad += l.wgrad;
    flops_fwd += l.flops_fwd;
  }
  void add(const Gemms& g) {
    fwd += g.fwd;
    bwd += g.bwd;
    dgrad += g.dgrad;
    wgrad += g.wgrad;
    flops_fwd += g.flops_fwd;
  }
  Gemms scaled(double k) const { return {fwd * k, bwd * k, dgrad * k, wgrad * k, flops_fwd * k}; }
};

/// Under TSP a rank receives a layer's weights as `splits` shards and runs one GEMM per shard over its tokens:
/// column shards for QKV and MLP-up (`split_n`), row shards (the reduction dimension) for the output and down
/// projections, whose partial products accumulate locally (techniques.md section 1).
Linear sharded_linear(const Context& ctx, double m, double n, double k, double splits, bool split_n,
                      double fwd_chunks = 1, double dgrad_chunks = 1);

/// Row blocks the TP comm-GEMM overlap splits a linear's GEMMs into (1 without the overlap): the all-gather ring
/// feeds the column-parallel fprop and the row-parallel dgrad tp chunks; the row-parallel fprop is pipelined
/// into the framework's reduce-scatter chunks (Framework::tp_overlap_rs_splits).
struct OverlapChunks {
  double ag = 1, rs = 1;
};
OverlapChunks tp_overlap_chunks(const Context& ctx);

/// Seconds of one memory-bound kernel moving `bytes` through HBM.
Seconds memory_time(const Gpu& gpu, Bytes bytes);

/// Forward time of one layer's QK-norm (model_desc.h QkNorm): an RMSNorm kernel over the rank's queries and one over
/// its keys, each reading and writing 16 bits per element (as the layer's other norms; an eager framework's norm
/// makes Framework::unfused_passes_per_norm passes); zero without QK-norm.
Seconds qk_norm_time(const Context& ctx, const Sharding& sh);

/// The share of the model's layers for which `pred` holds (MoE layers, sliding-window layers).
double fraction_of_layers(const ModelDesc& m, bool (*pred)(const ModelDesc&, int));

}  // namespace shardplan
