// Achieved KV-read rate of decode attention, per GPU and KV dtype, from measured kernels
// (decode_attention_table.cc has the derivation).
#pragma once

#include <string>

#include "modeler/curve.h"

namespace shardplan::serving {

/// Bytes/s of KV cache one decode-attention kernel (all layers' kernels are alike) reads, as a function of the
/// bytes it reads; nullptr for a GPU the table does not cover. `kv_bytes` is the element size (2 or 1).
const Curve* decode_attention_rate(const std::string& gpu, double kv_bytes);

}  // namespace shardplan::serving
