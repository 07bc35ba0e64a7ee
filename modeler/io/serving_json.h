// JSON for serve predict (schema_version 1; consumers ignore unknown keys).
#pragma once

#include <nlohmann/json.hpp>

#include <string>

#include "modeler/serving/serve_predict.h"

namespace shardplan::io {

struct ServeJsonContext {
  std::string model, system, engine, weights, kv;
  std::string sparsity, low_rank;  // the --sparsity / --low-rank specs (docs/transforms.md); empty: none (null)
  /// What the checkpoint's quantisation made of the stated weights (serving::apply_checkpoint_format, e.g. "fp8 on
  /// a 128x128 block-scaled checkpoint: fp8_block kernels"); empty: nothing (null).
  std::string weights_note;
};

/// One request's KV transfer of a disaggregated plan (serve predict's "kv_transfer", serve search's disaggregated
/// plans): transport, link, bytes (per request and per GPU) and seconds (alone and exposed to TTFT).
nlohmann::json kv_transfer_json(const serving::KvTransfer& t);

nlohmann::json serve_predict_json(const ServeJsonContext& ctx, const serving::ServeInputs& in,
                                  const serving::ServePrediction& p);

}  // namespace shardplan::io
