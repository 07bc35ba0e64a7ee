// Workload: what one rank runs for one micro-batch through one transformer layer (GEMMs, attention,
// memory-bound ops), the collectives each strategy adds, and the step-level schedule. Strategies fill these in
// through the narrow interface in strategies/strategy.h; the time and memory models only read them.
#pragma once

#include <optional>
#include <vector>

#include "modeler/collectives_factors.h"
#include "modeler/units.h"

namespace shardplan {

/// The local (per-rank) shape of one transformer layer and of the rank's share of the model state after every
/// strategy has divided it.
struct Sharding {
  double batch = 1;         // sequences per micro-batch
  double seq_q = 0;         // query tokens per sequence on this rank (s / cp)
  double seq_kv = 0;        // key/value extent each query block attends over (s)
  double tokens = 0;        // tokens through this rank's GEMMs per micro-batch (batch x seq_q)
  double norm_tokens = 0;   // tokens through norms/residuals (tokens / tp under sequence parallelism)
  double heads = 0;         // local query heads
  double kv_heads = 0;      // local key/value heads (replicated when tp > kv_heads)
  double ffn = 0;           // local MLP width
  double vocab = 0;         // local vocabulary columns of the LM head
  double layers = 0;        // transformer layers on the modelled pipeline rank (the busiest of an even split)
  int stages = 1;           // pipeline stages
  int chunks = 1;           // model chunks per pipeline rank (interleaving)
  /// What the modelled pipeline rank holds besides transformer layers, where the pipeline strategy knows it (a
  /// custom layout, or MTP modules, which sit on the last rank): the embedding, the loss with the LM head, and the
  /// MTP modules, whose transformer layers `layers` counts too. Unset: the heavier of the first and the last
  /// stage's ends (head_cost), both when pp is 1.
  struct StageEnds {
    bool embedding = false, loss = false;
    int mtp = 0;
  };
  std::optional<StageEnds> ends;
  /// The share of the modelled rank's decoder layers that are MoE layers, where the pipeline strategy knows
  /// which layers the rank holds (a custom layout places them in model order: DeepSeek-V3's dense layers 0-2 all
  /// sit on the first stage); < 0: the model's share (fraction_of_layers), the mean layer of an even split.
  double moe_layer_share = -1;
  /// A custom layout's distinct rank loads (transformer layers with the MTP modules', and ends), in rank order;
  /// evaluate() shards and runs each (the slowest sets the step, the fullest the memory). Empty otherwise.
  struct StageLoad {
    double layers = 0;
    StageEnds ends;
    double moe_layer_share = -1;  // as Sharding::moe_layer_share, of this rank's decoder layers
  };
  std::vector<StageLoad> rank_loads;
  /// Input to the strategies, set before shard(): which of rank_loads the pipeline strategy applies above (the
  /// strategies after it then shard that rank's layers: SDP's block dropping).
  int rank_load = 0;
  double weight_shard = 1;  // divisor of layer weights held by this rank (tp x ...)
  double dp_shard_optimizer = 1;  // ZeRO divisors over data parallelism
  double dp_shard_gradients = 1;
  double dp_shard_weights = 1;
  double activation_divisor = 1;  // extra divisor on saved activations (e.g. context parallelism is in tokens)
  double embedding_shard = 1;     // divisor of the embedding and LM-head weights (tp; tsp)
  double gemm_splits = 1;         // each layer GEMM runs as this many weight-shard GEMMs (TSP's ring: D)
  double transient_bytes = 0;     // per-rank working buffers a strategy allocates (TSP weight ring, MoE dispatch)
  // Mixture of experts (zero for dense models), per MoE layer and micro-batch on this rank.
  double moe_tokens = 0;          // tokens entering the MoE layer (the rank's sequence shard: tokens / tp)
  double local_experts = 0;       // routed experts held (experts / ep)
  double expert_ffn = 0;          // local intermediate width of one routed expert (expert_ffn_hidden / etp)
  double shared_ffn = 0;          // local intermediate width of all shared experts together (/ tp)
  double expert_tokens = 0;       // token-expert pairs the busiest rank's local experts compute (load factor in)
  double expert_weight_shard = 1; // divisor of routed-expert weights (ep x etp)
  double edp_shard_optimizer = 1; // ZeRO divisors of routed-expert state over the expert-data-parallel group
  double edp_shard_gradients = 1;
  double edp_shard_weights = 1;
  // Subnetwork data parallelism (techniques.md section 2); 1 for every other plan.
  double holder_fraction = 1;     // fraction of the data-parallel ranks holding each transformer-layer parameter
  double grad_fraction = 1;       // fraction of the held layer parameters that get gradients and optimizer states
  double backward_fraction = 1;   // fraction of the layer GEMMs' backward work that runs
};

/// When a collective's time can hide behind compute.
enum class Window {
  exposed,         // on the critical path
  layer,           // behind the same layer's compute of the same micro-batch (TP overlap, FSDP prefetch)
  attention,       // behind the attention kernel (context-parallel K/V ring)
  last_backward,   // behind the last micro-batch's backward (bucketed gradient reduction)
  next_forward,    // behind the next step's first forward (distributed-optimizer parameter all-gather)
  gemm,            // behind one linear layer's GEMM of the same pass (CommOp::gemm): TP comm-GEMM overlap
  paired,          // behind another micro-batch's opposite pass of the same layer (combined 1F1B, moe_overlap.h)
};
inline constexpr int kNumWindows = 7;

/// The linear-layer GEMMs of one transformer layer pass a Window::gemm collective can pair with (PassCost::linear):
/// forward: each linear's fprop; backward: each linear's data gradient (dgrad) and weight gradient (wgrad).
enum class LinearGemm { qkv, proj, fc1, fc2 };
constexpr int kLinearSlots = 8;  // 4 linears x {fprop or dgrad, wgrad}
inline int linear_slot(LinearGemm g, bool wgrad = false) { return static_cast<int>(g) + (wgrad ? 4 : 0); }

/// Which strategy a collective belongs to, for the time breakdown.
enum class CommKind { tp, cp, pp, dp, ep, tsp };
constexpr int kNumCommKinds = 6;
inline constexpr const char* kCommKindNames[kNumCommKinds] = {"tp", "cp", "pp", "dp", "ep", "tsp"};

struct CommOp {
  CommKind kind;
  Collective collective;
  Bytes bytes;       // the nccl-tests size S of one call (all_gather: gathered output; all_reduce: the buffer)
  int group = 1;     // ranks in the group
  int stride = 1;    // rank stride between group members (Megatron order: tp innermost)
  double count = 1;  // calls per scope
  Window window = Window::exposed;
  // Window::gemm only: the GEMM it overlaps (linear_slot); the SMs its kernels hold meanwhile (0 for copy-engine
  // transfers), taken from the GEMM for its whole run when `sm_margin` (Transformer Engine's set_sm_margin launches
  // the GEMM on sm_count - num_sm SMs), else only while the collective runs; the share of it that stays exposed
  // however long the GEMM (a pipelined reduce-scatter's last chunk runs after the last GEMM chunk); the share of
  // the GEMM it can run beside (a ring of c chunks: the last chunk computes after the last transfer, (c-1)/c).
  int gemm = -1;
  double overlap_sms = 0;
  double tail = 0;
  double hide = 1;
  bool sm_margin = false;
  /// >= 0: seconds of one call, computed by the strategy for a transfer the alpha-beta model does not describe
  /// (DeepEP/HybridEP node-deduplicated dispatch, modeler/moe_dispatch.h); `bytes` then only reports volume.
  double fixed_s = -1;
};

/// Collectives per scope. Per-layer ops repeat for every layer of the stage and every micro-batch.
struct CommPlan {
  std::vector<CommOp> layer_forward;
  std::vector<CommOp> layer_backward;
  std::vector<CommOp> microbatch;  // per micro-batch per stage, outside layers (pipeline sends)
  std::vector<CommOp> step;        // once per optimizer step (gradient sync, parameter gather)
};

/// Step-level schedule of micro-batches.
struct Schedule {
  int microbatches = 1;       // per pipeline per step (gradient accumulation steps)
  double bubble_fraction = 0; // pipeline bubble as a multiple of one micro-batch's stage time (fwd+bwd)
  double in_flight = 1;       // micro-batches whose activations the busiest stage holds at its peak
};

}  // namespace shardplan
