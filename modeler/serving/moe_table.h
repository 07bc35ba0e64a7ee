// Measured weight-streaming rate of one MoE layer (routing, permutation, both grouped expert GEMMs, un-permute)
// at decode-sized batches, per GPU and expert-weight format, from measured kernels (moe_table.cc has the
// derivation).
#pragma once

#include <string>

#include "modeler/curve.h"
#include "modeler/serving/formats.h"
#include "modeler/system.h"

namespace shardplan::serving {

/// Bytes/s of expert weights one MoE layer on one GPU streams (x: the bytes of the experts it touches, all
/// projections together; the layer's fixed costs included), for `gpu` (a profile) and the experts' storage
/// format; nullptr where the table has no such GPU or format (then the per-projection GEMM model applies).
const Curve* moe_layer_rate(const Gpu& gpu, WeightFormat experts);

/// FLOP/s of one MoE layer on one GPU beyond the decode regime (more than 16 rows per expert: prefill chunks,
/// large decode batches), x: the FLOPs of its grouped GEMMs (2 x pairs on the GPU x 3 x hidden x expert_ffn /
/// moe_tp), the layer's routing, permutation and fixed costs included; nullptr where the table has no such GPU
/// or format (then the per-projection GEMM model applies).
const Curve* moe_layer_flop_rate(const Gpu& gpu, WeightFormat experts);

}  // namespace shardplan::serving
