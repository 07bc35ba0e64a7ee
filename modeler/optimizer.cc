#include "modeler/optimizer.h"

#include <algorithm>

#include "modeler/finetune.h"
#include "modeler/gemm_model.h"
#include "modeler/layer_cost.h"

namespace shardplan {

namespace {

constexpr const char* kOptimizerNames[] = {"adamw", "adamw8bit", "adafactor", "sgd", "sgd-momentum", "muon", "lion"};
constexpr int kNumOptimizers = 7;

// bitsandbytes 8-bit Adam (Dettmers et al. 2022, "8-bit Optimizers via Block-wise Quantization", Sec. 2): m and v
// as 8-bit codes, one fp32 absmax per block of 2048 values and state; tensors under min_8bit_size (4096 elements,
// bitsandbytes Optimizer8bit's default) keep 32-bit states.
constexpr double kBlockwiseBlock = 2048.0;
constexpr double kMin8bitElements = 4096.0;
// Traffic every step has per parameter: the fp32 master and gradient read (8), the master and the 16-bit model copy
// written (6), the gradient-norm pass for clipping (4): kAdamBytesPerParam (time_model.h, 34) less AdamW's states.
constexpr double kStepBaseBytes = 18.0;
// Adafactor (Shazeer & Stern 2018, Algorithm 4) forms the update tensor U = G / sqrt(V) in full, reads it for its
// RMS (update clipping) and again to apply it: written once, read twice, fp32.
constexpr double kAdafactorUpdateBytes = 12.0;

bool is_matrix(double rows, double cols) { return rows > 1 && cols > 1; }

/// State bytes per parameter of one tensor.
double per_param_state(Optimizer o, double rows, double cols, bool hidden) {
  switch (o) {
    case Optimizer::adamw:
      return kAdamStateBytes;  // m, v in fp32 (Loshchilov & Hutter 2019)
    case Optimizer::adamw8bit:
      if (rows * cols < kMin8bitElements) return kAdamStateBytes;
      return 2.0 + 2.0 * 4.0 / kBlockwiseBlock;
    case Optimizer::adafactor:
      // Factored second moment: a row and a column accumulator for a matrix, the full one for a vector; no first
      // moment (beta1 = None, the paper's setting and transformers' Adafactor default).
      return is_matrix(rows, cols) ? 4.0 * (rows + cols) / (rows * cols) : 4.0;
    case Optimizer::sgd:
      return 0.0;
    case Optimizer::sgd_momentum:
      return 4.0;  // one fp32 momentum buffer (torch.optim.SGD momentum_buffer)
    case Optimizer::muon:
      // Momentum for the hidden matrices (KellerJordan/Muon: momentum_buffer); AdamW for the rest.
      return is_matrix(rows, cols) && hidden ? 4.0 : kAdamStateBytes;
    case Optimizer::lion:
      return 4.0;  // one momentum (Chen et al. 2023, Algorithm 2: only m is tracked)
  }
  return kAdamStateBytes;
}

template <typename F>
double weighted_mean(const std::vector<ParamGroup>& groups, F per_param) {
  double sum = 0, params = 0;
  for (const ParamGroup& g : groups) {
    sum += per_param(g) * g.params();
    params += g.params();
  }
  return params > 0 ? sum / params : 0.0;
}

}  // namespace

const char* to_string(Optimizer o) {
  const int i = static_cast<int>(o);
  return i >= 0 && i < kNumOptimizers ? kOptimizerNames[i] : "?";
}

std::optional<Optimizer> parse_optimizer(const std::string& text) {
  for (int i = 0; i < kNumOptimizers; ++i)
    if (text == kOptimizerNames[i]) return static_cast<Optimizer>(i);
  return std::nullopt;
}

std::string optimizer_names() {
  std::string s;
  for (const char* n : kOptimizerNames) s += (s.empty() ? "" : ", ") + std::string(n);
  return s;
}

double state_bytes(Optimizer o, double rows, double cols, bool hidden) {
  return per_param_state(o, rows, cols, hidden) * rows * cols;
}

double state_bytes_per_param(Optimizer o, const std::vector<ParamGroup>& groups) {
  return weighted_mean(groups, [o](const ParamGroup& g) { return per_param_state(o, g.rows, g.cols, g.hidden); });
}

double step_bytes_per_param(Optimizer o, const std::vector<ParamGroup>& groups) {
  return weighted_mean(groups, [o](const ParamGroup& g) {
    const double states = per_param_state(o, g.rows, g.cols, g.hidden);
    double bytes = kStepBaseBytes + 2.0 * states;  // each state read and written
    if (o == Optimizer::adafactor) bytes += kAdafactorUpdateBytes;
    return bytes;
  });
}

double newton_schulz_flops(double rows, double cols, int steps) {
  const double m = std::min(rows, cols), n = std::max(rows, cols);
  return steps * (4.0 * m * m * n + 2.0 * m * m * m);
}

double optimizer_bytes_per_param(const Context& ctx) {
  const double master = std::max(0.0, ctx.framework.state.optimizer - kAdamStateBytes);
  return master + state_bytes_per_param(ctx.plan.finetune.optimizer, trainable_groups(ctx.model, ctx.plan));
}

Seconds optimizer_step_time(const Context& ctx, const Sharding& sh, double owned) {
  const Optimizer o = ctx.plan.finetune.optimizer;
  const std::vector<ParamGroup> groups = trainable_groups(ctx.model, ctx.plan);
  const Gpu& gpu = ctx.system.gpu;
  Seconds t = memory_time(gpu, Bytes(owned * step_bytes_per_param(o, groups)));
  if (o != Optimizer::muon) return t;
  // Newton-Schulz in bf16 (the reference casts X to bfloat16) over this stage's share of the hidden matrices,
  // split over the ranks that shard the optimizer; tensor-parallel ranks orthogonalise whole matrices each
  // (Megatron-LM --muon-tp-mode duplicated, its default).
  const double share = ctx.model.layers > 0 ? sh.layers / ctx.model.layers : 1.0;
  const double ranks = std::max(1.0, sh.dp_shard_optimizer);
  const Dtype d = gpu.sixteen_bit();
  for (const ParamGroup& g : groups) {
    if (!g.hidden || !is_matrix(g.rows, g.cols)) continue;
    const double m = std::min(g.rows, g.cols), n = std::max(g.rows, g.cols);
    const Seconds one = gemm_time(gpu, d, m, m, n) + gemm_time(gpu, d, m, m, m) + gemm_time(gpu, d, m, n, m);
    t += one * (kMuonNsSteps * g.count * share / ranks);
  }
  return t;
}

}  // namespace shardplan
