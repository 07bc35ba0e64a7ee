// PlanSpace: the search's candidate plans as data (style L7), not as nested loops. Each axis lists its candidate
// values; the parallel layouts (tp, cp, pp, vpp with the dp they leave) are enumerated once, and every layout
// multiplies with the option axes (micro-batch, ZeRO stage, sequence parallelism, TP overlap, recompute,
// precision) by mixed-radix decoding of an index. Candidates are generated wide (powers of two, divisors);
// the strategies' validate() decides what is legal, so the search can count why plans were rejected.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "modeler/model_desc.h"
#include "modeler/moe_dispatch.h"
#include "modeler/plan.h"
#include "modeler/system.h"

namespace shardplan {

/// Limits that keep a search's memory and time bounded, checked before allocating: values one stepped axis may list,
/// and plans and layouts one space may hold. The search evaluates about 190,000 plans a second on 2 threads
/// (llama-3-70b on 256 H100s: 113,265 plans in 0.60 s), so 10^9 plans is over an hour there; a layout holds its
/// micro-batch list.
inline constexpr long long kMaxAxisValues = 4096;
inline constexpr uint64_t kMaxPlanSpace = 1'000'000'000;
inline constexpr size_t kMaxLayouts = 1'000'000;

/// Candidate values of one integer axis as the user wrote them (CUTLASS-profiler style):
///   "8" or "1,2,4,8"  exactly these values;
///   "a:b"             the axis's default candidates restricted to [a, b] (powers of two for tp, cp and gpus;
///                     divisors for pp, vpp and the micro-batch);
///   "a:b:s"           a, a+s, a+2s, ... up to b.
struct AxisSpec {
  std::vector<int> values;  // explicit values (list or stepped range)
  int lo = 0, hi = 0;       // bounds of an "a:b" range
  bool range = false;
  bool given() const { return range || !values.empty(); }
  /// Keeps the defaults that this spec allows: all of them when not given, those in [lo, hi] for a range, and
  /// the explicit values otherwise.
  std::vector<int> select(const std::vector<int>& defaults) const;
};

/// Parses an axis flag's text; throws ConfigError naming the flag ("--tp: '0' is not a positive integer"). Values
/// below `min_value` are errors: parallel degrees, micro-batches and GPU counts start at 1, ZeRO stages at 0.
AxisSpec parse_axis(const std::string& flag, const std::string& text, int min_value = 1);

/// What the user asked for. Empty lists take the defaults documented on each field.
struct SpaceRequest {
  int global_batch = 0;  // sequences per step (required)
  int seq_len = 0;       // tokens per sequence (required)
  AxisSpec tp, cp, pp, vpp, zero, mbs, ep;
  int max_tp = 0;   // 0: the innermost (NVLink) domain, so tp groups never cross the scale-out network
  int max_pp = 0;   // 0: the layer count
  int max_cp = 32;  // context parallelism beyond 32 ranks is outside published practice (Llama 3: cp 16 at 128K)
  int max_mbs = 0;  // 0: every divisor of the per-replica batch (small models run micro-batches of 18-56)
  std::vector<bool> sp;              // default {on, off} when tp > 1
  std::vector<bool> tp_overlap;      // default {off, on} when tp > 1
  std::vector<bool> ep_overlap;      // default {off, on} when ep > 1 (MoE all-to-all behind another micro-batch)
  /// MoE token dispatchers to try when ep > 1; default none listed: the framework's default (an unset plan field).
  /// The caller lists only those the framework offers (apps/search_flags.cc).
  std::vector<MoeDispatcher> moe_dispatchers;
  /// Node limits M of node-limited routing to try when ep > 1 (0: no limit); default {0}. A limit changes what the
  /// router may pick (DeepSeek-V3 trains with M = 4), so the search tries one only when asked.
  std::vector<int> moe_max_nodes;
  std::vector<Recompute> recompute;  // default none, selective, full
  std::vector<int> recompute_layers; // full recompute of N layers per chunk (block method), besides every layer
  /// The Megatron module sets (RecomputeModule bits) selective recompute tries; default the attention core alone.
  std::vector<unsigned> recompute_modules;
  std::vector<Dtype> precision;      // default bf16 (lower precisions change numerics: opt in)
  std::optional<Fp8Recipe> fp8_recipe;  // the scaling recipe of the fp8 plans (one per search; unset: the framework's)
  CpKind cp_kind = CpKind::ring;
  /// Folded tensor + sequence parallelism (techniques.md 1): no mainstream framework runs it, so the search
  /// adds its layouts (tsp in place of tp and cp) only when asked, at the `tsp` degrees (default: powers of two
  /// from 2 to max_tp).
  bool allow_tsp = false;
  AxisSpec tsp;
  /// Subnetwork data parallelism (techniques.md 2) changes what is trained: only when asked, at each keep
  /// fraction (default 0.5), with forward and backward masking.
  bool allow_sdp = false;
  std::vector<double> sdp_keep;
  /// Optimizer offload fractions to try (plan.h optimizer_offload); default {0}: offload only when asked.
  std::vector<double> optimizer_offload;
  /// Hybrid-sharding shard groups (plan.h dp_shard, 0 = none), ZeRO++ settings, parameter offload off/on and
  /// activation-offload layer counts to try; each defaults to {none}. One offload device per search.
  std::vector<int> dp_shard;
  std::vector<ZeroPP> zeropp;
  std::vector<bool> param_offload;
  std::vector<int> activation_offload_layers;
  OffloadDevice offload_device = OffloadDevice::cpu;
  /// What is trained and the optimizer: the user's, the same for every candidate (never an axis).
  Finetune finetune;
};

/// One setting of the memory-tier options (modeler/hsdp.h, zeropp.h, param_offload.h); the default is none.
struct MemoryChoice {
  int dp_shard = 0;
  ZeroPP zeropp;
  bool param_offload = false;
  OffloadDevice offload_device = OffloadDevice::cpu;
  int activation_offload_layers = 0;
};

/// One recompute setting: the kind, and for full recompute the layers of each chunk (0: all).
struct RecomputeChoice {
  Recompute kind = Recompute::none;
  int layers = 0;
  unsigned modules = kRecomputeCoreAttn;  // with selective: Megatron's recompute modules
};

/// One MoE dispatch setting: the dispatcher (unset: the framework's default) and the node limit (0: none).
struct MoeChoice {
  std::optional<MoeDispatcher> dispatcher;
  int max_nodes = 0;
};

/// One subnetwork-data-parallel setting: keep 1 is plain data parallelism.
struct SdpChoice {
  double keep = 1.0;
  SdpMask mask = SdpMask::forward;
};

/// One parallel arrangement: degrees whose product is the GPU count, and its micro-batch candidates.
struct Layout {
  int tp = 1, cp = 1, pp = 1, vpp = 1, dp = 1;
  int tsp = 1;           // folded tensor + sequence parallelism (then tp = cp = 1)
  int ep = 1;            // expert parallelism (MoE models), folded with dp x cp as Megatron-Core does
  bool uneven = false;   // pp does not divide the layers: the busiest stage takes the extra layers
  std::vector<int> mbs;
};

struct PlanSpace {
  int global_batch = 0, seq_len = 0;
  CpKind cp_kind = CpKind::ring;
  std::vector<Layout> layouts;
  std::vector<int> zero;
  std::vector<bool> sp, tp_overlap, ep_overlap;
  std::vector<MoeChoice> moe = {MoeChoice{}};  // dispatcher x node limit, an axis of the ep > 1 layouts
  std::vector<RecomputeChoice> recompute;
  std::vector<Dtype> precision;
  std::optional<Fp8Recipe> fp8_recipe;
  std::vector<SdpChoice> sdp = {SdpChoice{}};
  std::vector<double> optimizer_offload = {0};
  std::vector<MemoryChoice> memory = {MemoryChoice{}};
  Finetune finetune;  // every candidate's (SpaceRequest::finetune)

  /// Plans of one layout: the product of its option axes (sp and tp_overlap collapse to off when tp == 1,
  /// ep_overlap and the MoE choices to their defaults when ep == 1).
  uint64_t layout_size(const Layout& l) const;
  uint64_t size() const;
  /// Plan number k (0 <= k < layout_size(l)) of layout l, by mixed-radix decoding.
  Plan plan_at(const Layout& l, uint64_t k) const;
};

/// Builds the space for `system.gpus` GPUs. Throws ConfigError when the request leaves no layout (e.g.
/// "--tp 3" with 8 GPUs) or lacks the batch or sequence length.
PlanSpace make_plan_space(const ModelDesc& model, const System& system, const SpaceRequest& request);

/// Powers of two in [lo, hi].
std::vector<int> powers_of_two(int lo, int hi);
/// Divisors of n in [1, cap], ascending.
std::vector<int> divisors(int n, int cap);

}  // namespace shardplan
