// Fitting a GPU's shipped tables (hwprofiles/tables/<gpu>.yaml) from measurements: GEMM efficiency on the
// measured (m, n, k) grid per dtype, fused-attention forward (and the backward derived from it), and per-collective
// busbw curves of the scale-up tier. Inverts the predictor's formulas (modeler/gemm_model.h, layer_cost.cc's
// attention_time, modeler/collectives.h) as fit.cc does, so predicting a measured shape reproduces it.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "calibrate/fit.h"
#include "calibrate/measurements.h"
#include "modeler/system.h"

namespace shardplan::calibrate {

/// Backward over forward TFLOP/s of fused attention at the largest size the FlashAttention-3 paper reports
/// (arXiv 2407.08608, H100 SXM5, head dim 128, the bars hwprofiles/gpus/h100-sxm5-80gb.yaml holds): cuDNN
/// 0.522 / 0.545 = 0.958, FlashAttention-2 0.325 / 0.339 = 0.959. The measured database has forward
/// (inference) attention only; the backward curve is the forward one at 1/2.5 of the backward FLOPs (the same
/// blocks, kAttentionBwdRatio in layer_cost.cc) times this ratio.
constexpr double kAttentionBwdOverFwd = 0.958;
constexpr double kAttentionBwdFlopsRatio = 2.5;

struct TablesFit {
  std::map<Dtype, Grid3> gemm;
  Grid3 gemm_fp8_block;  // block-scaled fp8 GEMMs (rows with params.dtype fp8_block); empty when none were measured
  std::optional<AttentionKernel> attention_kernel;
  Curve attention_fwd, attention_bwd;
  std::optional<double> scale_up_latency_s;
  std::map<Collective, Curve> busbw;
  std::map<std::string, Residuals> res;  // "gemm bf16", "attention flash3 fwd", "scale_up all_gather"
  std::vector<std::string> notes;
};

/// Fits the rows against `base` (the GPU's standard system: its peaks, kernel overhead, HBM and tier 0).
/// GEMM rows (per dtype, block-scaled fp8 apart) must cover a full grid of their measured m, n and k values; a
/// missing cell takes its nearest measured neighbour in (log m, log n, log k) and is named in the notes.
TablesFit fit_tables(const std::vector<Measurement>& rows, const System& base, const std::string& source);

}  // namespace shardplan::calibrate
