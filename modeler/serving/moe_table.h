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

}  // namespace shardplan::serving
