#include "modeler/plan_space.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>

#include "modeler/problems.h"

namespace shardplan {

namespace {

int parse_at_least(const std::string& flag, const std::string& s, int min_value) {
  char* end = nullptr;
  errno = 0;
  const long v = std::strtol(s.c_str(), &end, 10);
  if (s.empty() || *end != '\0' || errno != 0 || v < min_value || v > (1 << 24))
    throw ConfigError(flag + ": '" + s + "' is not a " + (min_value > 0 ? "positive" : "non-negative") + " integer");
  return static_cast<int>(v);
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  for (size_t i = 0; i <= s.size(); ++i)
    if (i == s.size() || s[i] == sep) {
      out.push_back(s.substr(start, i - start));
      start = i + 1;
    }
  return out;
}

template <class T>
std::vector<T> or_default(const std::vector<T>& given, std::vector<T> dflt) {
  return given.empty() ? dflt : given;
}

}  // namespace

std::vector<int> AxisSpec::select(const std::vector<int>& defaults) const {
  if (!given()) return defaults;
  if (!range) return values;
  std::vector<int> out;
  for (int v : defaults)
    if (v >= lo && v <= hi) out.push_back(v);
  return out;
}

AxisSpec parse_axis(const std::string& flag, const std::string& text, int min_value) {
  AxisSpec a;
  if (text.find(':') != std::string::npos) {
    const std::vector<std::string> parts = split(text, ':');
    if (parts.size() > 3) throw ConfigError(flag + ": '" + text + "' is not a range a:b or a:b:step");
    const int lo = parse_at_least(flag, parts[0], min_value), hi = parse_at_least(flag, parts[1], min_value);
    if (lo > hi) throw ConfigError(flag + ": range '" + text + "' is empty (" + parts[0] + " > " + parts[1] + ")");
    if (parts.size() == 2) {
      a.range = true;
      a.lo = lo;
      a.hi = hi;
      return a;
    }
    const int step = parse_at_least(flag, parts[2], 0);
    if (step == 0) throw ConfigError(flag + ": step of '" + text + "' must be positive");
    // Counted before allocating: "1:16777216:1" would list 16.7 million values.
    const long long count = (1LL * hi - lo) / step + 1;
    if (count > kMaxAxisValues)
      throw ConfigError(flag + ": '" + text + "' lists " + std::to_string(count) + " values, more than " +
                        std::to_string(kMaxAxisValues) + "; use a larger step, or a:b for the axis's usual "
                        "candidates in that range");
    for (long long v = lo; v <= hi; v += step) a.values.push_back(static_cast<int>(v));
    return a;
  }
  for (const std::string& p : split(text, ',')) a.values.push_back(parse_at_least(flag, p, min_value));
  std::sort(a.values.begin(), a.values.end());
  a.values.erase(std::unique(a.values.begin(), a.values.end()), a.values.end());
  return a;
}

std::vector<int> powers_of_two(int lo, int hi) {
  std::vector<int> out;
  for (long v = 1; v <= hi; v *= 2)
    if (v >= lo) out.push_back(static_cast<int>(v));
  return out;
}

std::vector<int> divisors(int n, int cap) {
  // Pairs (d, n / d) up to sqrt(n): fast for large batches, and no int overflow at n near INT_MAX.
  std::vector<int> low, high;
  for (long d = 1; d * d <= n; ++d) {
    if (n % d != 0) continue;
    if (d <= cap) low.push_back(static_cast<int>(d));
    const long q = n / d;
    if (q != d && q <= cap) high.push_back(static_cast<int>(q));
  }
  low.insert(low.end(), high.rbegin(), high.rend());
  return low;
}

uint64_t PlanSpace::layout_size(const Layout& l) const {
  const uint64_t tp_opts = l.tp > 1 ? sp.size() * tp_overlap.size() : 1;
  const uint64_t ep_opts = l.ep > 1 ? ep_overlap.size() * moe.size() : 1;
  return l.mbs.size() * zero.size() * tp_opts * ep_opts * recompute.size() * precision.size() * sdp.size() *
         optimizer_offload.size() * memory.size();
}

uint64_t PlanSpace::size() const {
  uint64_t n = 0;
  for (const Layout& l : layouts) n += layout_size(l);
  return n;
}

Plan PlanSpace::plan_at(const Layout& l, uint64_t k) const {
  Plan p;
  p.tp = l.tp;
  p.cp = l.cp;
  p.pp = l.pp;
  p.vpp = l.vpp;
  p.dp = l.dp;
  p.tsp = l.tsp;
  p.ep = l.ep;
  // With expert parallelism, experts run without tensor parallelism as Megatron-Core MoE recipes set
  // (--expert-tensor-parallel-size 1); otherwise Megatron's default etp = tp.
  p.etp = l.ep > 1 ? 1 : l.tp;
  p.uneven_pipeline = l.uneven;
  p.global_batch = global_batch;
  p.seq_len = seq_len;
  p.cp_kind = cp_kind;
  p.finetune = finetune;
  // Mixed radix, fastest-varying first: precision, recompute, tp options, ep overlap and MoE choice, zero,
  // micro-batch, sdp.
  auto digit = [&k](size_t radix) {
    const size_t d = static_cast<size_t>(k % radix);
    k /= radix;
    return d;
  };
  p.precision = precision[digit(precision.size())];
  if (p.precision == Dtype::fp8) p.fp8_recipe = fp8_recipe;
  const RecomputeChoice& rc = recompute[digit(recompute.size())];
  p.recompute = rc.kind;
  p.recompute_layers = rc.layers;
  p.recompute_modules = rc.modules;
  if (l.tp > 1) {
    p.tp_comm_overlap = tp_overlap[digit(tp_overlap.size())];
    p.sequence_parallel = sp[digit(sp.size())];
  }
  if (l.ep > 1) {
    p.ep_comm_overlap = ep_overlap[digit(ep_overlap.size())];
    const MoeChoice& mc = moe[digit(moe.size())];
    p.moe_dispatcher = mc.dispatcher;
    p.moe_max_nodes = mc.max_nodes;
  }
  p.zero = zero[digit(zero.size())];
  p.micro_batch = l.mbs[digit(l.mbs.size())];
  const SdpChoice& sdp_choice = sdp[digit(sdp.size())];
  p.sdp_keep = sdp_choice.keep;
  p.sdp_mask = sdp_choice.mask;
  p.optimizer_offload = optimizer_offload[digit(optimizer_offload.size())];
  const MemoryChoice& mc = memory[digit(memory.size())];
  p.dp_shard = mc.dp_shard;
  p.zeropp = mc.zeropp;
  p.param_offload = mc.param_offload;
  p.offload_device = mc.offload_device;
  p.activation_offload_layers = mc.activation_offload_layers;
  return p;
}

PlanSpace make_plan_space(const ModelDesc& model, const System& system, const SpaceRequest& r) {
  if (r.global_batch < 1) throw ConfigError("search needs the global batch (--gbs)");
  if (r.seq_len < 1) throw ConfigError("search needs the sequence length (--seq)");
  const int gpus = system.gpus;
  if (gpus < 1) throw ConfigError("search needs the GPU count (--gpus)");
  PlanSpace s;
  s.global_batch = r.global_batch;
  s.seq_len = r.seq_len;
  s.cp_kind = r.cp_kind;
  s.fp8_recipe = r.fp8_recipe;
  s.finetune = r.finetune;
  s.zero = r.zero.select({0, 1, 2, 3});
  s.sp = or_default(r.sp, {true, false});
  s.tp_overlap = or_default(r.tp_overlap, {false, true});
  s.ep_overlap = or_default(r.ep_overlap, {false, true});
  s.moe.clear();
  std::vector<std::optional<MoeDispatcher>> dispatchers(r.moe_dispatchers.begin(), r.moe_dispatchers.end());
  if (dispatchers.empty()) dispatchers.push_back(std::nullopt);
  for (const std::optional<MoeDispatcher>& d : dispatchers)
    for (int m : or_default(r.moe_max_nodes, {0})) {
      if (m < 0) throw ConfigError("--moe-max-nodes: '" + std::to_string(m) + "' is below 0 (0: no node limit)");
      s.moe.push_back({d, m});
    }
  for (Recompute kind : or_default(r.recompute, {Recompute::none, Recompute::selective, Recompute::full})) {
    if (kind == Recompute::selective && !r.recompute_modules.empty()) {
      for (unsigned mods : r.recompute_modules) s.recompute.push_back({kind, 0, mods});
      continue;
    }
    s.recompute.push_back({kind, 0, kRecomputeCoreAttn});
    if (kind == Recompute::full)
      for (int n : r.recompute_layers) s.recompute.push_back({kind, n, kRecomputeCoreAttn});
  }
  s.precision = or_default(r.precision, {Dtype::bf16});
  if (r.allow_sdp)
    for (double keep : or_default(r.sdp_keep, {0.5}))
      for (SdpMask mask : {SdpMask::forward, SdpMask::backward}) s.sdp.push_back({keep, mask});
  s.optimizer_offload = or_default(r.optimizer_offload, {0.0});
  s.memory.clear();
  for (int shard : or_default(r.dp_shard, {0}))
    for (const ZeroPP& z : or_default(r.zeropp, {ZeroPP{}}))
      for (bool params : or_default(r.param_offload, {false}))
        for (int layers : or_default(r.activation_offload_layers, {0}))
          s.memory.push_back({shard, z, params, r.offload_device, layers});

  const int domain = system.tiers.empty() || system.tiers[0].domain_gpus == 0 ? gpus : system.tiers[0].domain_gpus;
  const int max_tp = r.max_tp > 0 ? r.max_tp : domain;
  const int max_pp = r.max_pp > 0 ? r.max_pp : model.layers;
  const std::vector<int> tps = r.tp.select(powers_of_two(1, std::min(max_tp, gpus)));
  const std::vector<int> cps = r.cp.select(powers_of_two(1, std::min(r.max_cp, gpus)));
  const std::vector<int> pps = r.pp.select(divisors(gpus, max_pp));
  // Tensor-parallel-like degrees: (tp, cp, tsp) triples, tsp only in place of both tp and cp.
  struct Inner {
    int tp, cp, tsp;
  };
  std::vector<Inner> inner;
  uint64_t plans = 0;
  for (int tp : tps)
    for (int cp : cps) inner.push_back({tp, cp, 1});
  if (r.allow_tsp)
    for (int tsp : r.tsp.select(powers_of_two(2, std::min(max_tp, gpus)))) inner.push_back({1, 1, tsp});
  for (const auto& [tp, cp, tsp] : inner)
    for (int pp : pps) {
      const long mp = 1L * tp * cp * tsp * pp;
      if (gpus % mp != 0) continue;  // dp is what is left: the degrees must divide the GPU count
      const int dp = static_cast<int>(gpus / mp);
      // A layer count pp does not divide runs as an uneven split (Megatron-Core
      // --decoder-first/last-pipeline-num-layers, or a pipeline layout), interleaved or not: the virtual
      // stages then divide the busiest rank's ceil(layers / pp) layers (as Megatron-Bridge's Llama-3.1 405B
      // recipe runs 126 layers as pp 8 x vpp 8).
      const bool uneven = pp > 1 && model.layers % pp != 0;
      std::vector<int> vpps = {1};
      if (pp > 1) {
        const int busiest_layers = (model.layers + pp - 1) / pp;
        vpps = r.vpp.select(divisors(busiest_layers, model.layers));
      }
      const int per_rank = r.global_batch % dp == 0 ? r.global_batch / dp : 0;
      const int mbs_cap = r.max_mbs > 0 ? r.max_mbs : per_rank;
      std::vector<int> mbs = r.mbs.select(per_rank > 0 ? divisors(per_rank, mbs_cap) : std::vector<int>{1});
      if (mbs.empty()) continue;
      // Expert parallelism for MoE models: powers of two dividing the experts and the dp x cp (x tsp) ranks.
      std::vector<int> eps = {1};
      if (model.moe) {
        eps.clear();
        for (int ep : r.ep.select(powers_of_two(1, model.moe->experts)))
          if ((dp * cp * tsp) % ep == 0 && model.moe->experts % ep == 0) eps.push_back(ep);
      }
      for (int ep : eps)
        for (int vpp : vpps) {
          s.layouts.push_back({tp, cp, pp, vpp, dp, tsp, ep, uneven, mbs});
          plans += s.layout_size(s.layouts.back());
          // Refused while it grows, before the layouts themselves fill memory.
          if (plans > kMaxPlanSpace || s.layouts.size() > kMaxLayouts)
            throw ConfigError("the plan space has more than " +
                              (s.layouts.size() > kMaxLayouts ? std::to_string(kMaxLayouts) + " layouts"
                                                              : std::to_string(kMaxPlanSpace) + " plans") +
                              "; narrow it with --tp, --cp, --pp, --vpp, --mbs, --zero, --recompute or "
                              "--precision (a list or a:b range each)");
        }
    }
  if (s.layouts.empty() || s.zero.empty())
    throw ConfigError("no plan matches the constraints: tp x cp x pp must divide the GPU count (" +
                      std::to_string(gpus) + ") with the given --tp/--cp/--pp/--zero/--mbs values and caps");
  return s;
}

}  // namespace shardplan
