// The optimizer's state bytes and step cost per trainable parameter (plan.h Optimizer). States are counted beyond
// the framework's fp32 master weights (Framework::state.optimizer = master + AdamW's m and v), in fp32 as the
// mixed-precision optimizers of every supported framework keep them unless the optimizer itself quantises them.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "modeler/strategies/strategy.h"
#include "modeler/units.h"

namespace shardplan {

/// One group of same-shaped trainable tensors: `count` tensors of rows x cols (cols = 1 for vectors). `hidden`
/// marks the matrices of the transformer layers (or adapters on them): Muon orthogonalises those, while the
/// embedding, the LM head and every vector take AdamW (Keller Jordan's Muon reference; Megatron-LM
/// --muon-scalar-optimizer adam).
struct ParamGroup {
  double rows = 0, cols = 1, count = 0;
  bool hidden = true;
  double params() const { return rows * cols * count; }
};

/// Bytes per parameter of AdamW's two fp32 moments, the part of Framework::state.optimizer that is not the master
/// weights (ZeRO paper Sec. 3.1: K = 12 = 4 master + 4 m + 4 v).
inline constexpr double kAdamStateBytes = 8.0;
/// Newton-Schulz iterations of Muon (KellerJordan/Muon zeropower_via_newtonschulz5 steps=5; Megatron-LM
/// --muon-num-ns-steps default 5).
inline constexpr int kMuonNsSteps = 5;

/// "adamw", "adamw8bit", "adafactor", "sgd", "sgd-momentum", "muon", "lion".
const char* to_string(Optimizer o);
std::optional<Optimizer> parse_optimizer(const std::string& text);
/// The names, comma-separated, for help text and errors.
std::string optimizer_names();

/// Bytes of the optimizer's states for one rows x cols tensor (beyond master weights and gradient).
double state_bytes(Optimizer o, double rows, double cols, bool hidden);
/// The mean of state_bytes per parameter over `groups`, weighted by their parameters (0 when empty).
double state_bytes_per_param(Optimizer o, const std::vector<ParamGroup>& groups);
/// HBM bytes the step moves per parameter, the mean over `groups`: the fp32 master and gradient read, master and
/// 16-bit copy written, the gradient-norm read, and each state read and written (plus Adafactor's update tensor).
double step_bytes_per_param(Optimizer o, const std::vector<ParamGroup>& groups);
/// FLOPs of Muon's Newton-Schulz orthogonalisation of one rows x cols matrix: per iteration A = X X^T (2 m^2 n),
/// A A (2 m^3) and B X (2 m^2 n), with m = min(rows, cols), n = max(rows, cols) (the reference transposes tall
/// matrices first).
double newton_schulz_flops(double rows, double cols, int steps = kMuonNsSteps);

/// Bytes per owned trainable parameter of the plan's optimizer: the framework's master weights plus the optimizer's
/// states over the trainable parameters (finetune.h trainable_groups).
double optimizer_bytes_per_param(const Context& ctx);
/// The optimizer step over `owned` locally owned trainable parameters: memory-bound state traffic, plus for Muon
/// the Newton-Schulz GEMMs of the owned share of the stage's hidden matrices (the reference implementation hands
/// each data-parallel rank whole matrices in turn, so a rank orthogonalises 1/dp of them), in bf16.
Seconds optimizer_step_time(const Context& ctx, const Sharding& sh, double owned);

}  // namespace shardplan
