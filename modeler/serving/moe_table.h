// Measured weight-streaming rate of one MoE layer (routing, permutation, both grouped expert GEMMs, un-permute)
// at decode-sized batches, per GPU and expert-weight format, from measured kernels (moe_table.cc has the
// derivation).
#pragma once

#include <optional>
#include <string>

#include "modeler/curve.h"
#include "modeler/serving/decode_gemm_table.h"
#include "modeler/serving/formats.h"
#include "modeler/system.h"

namespace shardplan::serving {

/// The measured rate curves of one MoE layer on one GPU at decode-sized batches (x: the bytes of the experts it
/// touches, all projections together; y: bytes/s, the layer's fixed costs included), one per measured count of
/// token rows per touched expert (1, 2, 4, 8, 16; ascending), for `gpu` (a profile) and the experts' storage
/// format; nullptr where the table has no such GPU or format (then the per-projection GEMM model applies).
const CurvesByRows* moe_layer_rates(const Gpu& gpu, WeightFormat experts);

/// Bytes/s of a layer that streams `bytes` of touched experts with `rows` token rows per touched expert:
/// moe_layer_rates' curves, the time per byte interpolated linearly in rows between measured ones as for the
/// decode GEMMs (decode_gemm_table.h rate_between_rows); nullopt where the table has no such GPU or format.
std::optional<double> moe_layer_bytes_per_s(const Gpu& gpu, WeightFormat experts, double rows, double bytes);

/// FLOP/s of one MoE layer on one GPU beyond the decode regime (more than 16 rows per expert: prefill chunks,
/// large decode batches), x: the FLOPs of its grouped GEMMs (2 x pairs on the GPU x 3 x hidden x expert_ffn /
/// moe_tp), the layer's routing, permutation and fixed costs included; nullptr where the table has no such GPU
/// or format (then the per-projection GEMM model applies).
const Curve* moe_layer_flop_rate(const Gpu& gpu, WeightFormat experts);

}  // namespace shardplan::serving
