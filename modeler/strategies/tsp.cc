// Folded tensor and sequence parallelism, "row sharding" (Shyam, Golubeva, Anthony, arXiv 2604.26294; cost model
// derived in techniques.md section 1): every rank of a TSP axis of size D holds 1/D of each layer's weights AND 1/D
// of the tokens, norms and residuals included. Attention: the ranks take turns broadcasting their Q/K/V/O weight
// shard; each rank projects its own tokens, the K/V of that head group are all-gathered along the sequence
// (zigzag split, so causal work is balanced), and the output projection's partial products accumulate locally.
// Gated MLP: weight shards circulate in a ring while partial outputs accumulate. Backward circulates the weights
// again and reduce-scatters weight gradients to their owners and dK/dV to the token owners. Per rank per layer:
//   forward:  (D-1)/D x [W_layer + 2 b s h_kv B]          (W_layer: the layer's 16-bit weight bytes)
//   backward: (D-1)/D x [2 W_layer + 2 b s h_kv B]
// against Megatron TP's (D-1)/D x 4 b s h B forward: TSP moves fewer bytes once b s > W_layer / B / (4h - 2h_kv),
// 8h for MHA with f = 4h. The rings are modelled as all-gathers / reduce-scatters (same bytes and D-1 steps),
// overlapped with the layer's GEMMs. Whether K/V are stored for backward or re-gathered is not published; this
// follows techniques.md (stored: no backward gather). The axis replaces tp and cp on its ranks (mesh
// DP x PP x EP x TSP) and sits innermost, where tp would; the embedding and LM head are sharded over it like the
// layers (their small per-micro-batch exchange is not modelled).
#include "modeler/strategies/strategy.h"

namespace shardplan {

namespace {

constexpr double kWeightBytes = 2.0;  // weights circulate in the 16-bit compute dtype
constexpr double kActBytes = 2.0;
// Weight shards held at once: the one in use and the one arriving (double buffering, techniques.md: k_buf 1-2).
constexpr double kWeightBuffers = 2.0;

std::string str(int v) { return std::to_string(v); }

/// 16-bit bytes of one layer's non-expert weights (routed experts stay with expert parallelism).
double layer_weight_bytes(const ModelDesc& m) {
  const double experts = m.layers > 0 ? routed_expert_params(m) / m.layers : 0.0;
  return (params_per_layer(m) - experts) * kWeightBytes;
}

/// K and V of a whole sequence batch at full K/V width (the all-gathered tensor of all head groups).
double kv_bytes(const ModelDesc& m, const Sharding& sh) {
  return 2.0 * sh.batch * sh.seq_kv * m.kv_heads * m.head_dim * kActBytes;
}

class FoldedTensorSequenceParallel final : public Strategy {
 public:
  const char* name() const override { return "tsp"; }

  void validate(const Context& ctx, Problems* problems) const override {
    const Plan& p = ctx.plan;
    const ModelDesc& m = ctx.model;
    const int d = p.tsp;
    if (d < 1) {
      problems->push_back({"tsp_range", "tsp (" + str(d) + ") must be at least 1"});
      return;
    }
    if (d == 1) return;
    if (p.tp > 1 || p.cp > 1)
      problems->push_back({"tsp_exclusive", "tsp (" + str(d) +
                                                ") replaces tensor and context parallelism on its "
                                                "ranks: give tp 1 and cp 1 (got tp " +
                                                str(p.tp) + ", cp " + str(p.cp) + ")"});
    const std::pair<const char*, int> dims[] = {
        {"heads", m.heads}, {"kv_heads", m.kv_heads}, {"ffn_hidden", m.ffn_hidden}};
    for (const auto& [key, value] : dims)
      if (value % d != 0)
        problems->push_back({std::string("tsp_divides_") + key,
                             "tsp (" + str(d) + ") does not divide " + key + " (" + str(value) + ")"});
    if (p.seq_len % (2 * d) != 0)
      problems->push_back({"tsp_divides_seq", "2 x tsp (" + str(2 * d) + ") does not divide the sequence length (" +
                                                  str(p.seq_len) + ") for the zigzag split"});
  }

  void shard(const Context& ctx, Sharding* sh) const override {
    const double d = ctx.plan.tsp;
    if (d == 1) return;
    sh->seq_q /= d;  // queries of the rank's tokens attend over the whole (gathered) sequence
    sh->tokens /= d;
    sh->norm_tokens /= d;
    sh->weight_shard *= d;
    sh->embedding_shard *= d;
    sh->gemm_splits *= d;
    // Transient buffers: the weight shards in flight, and one head group's gathered K/V.
    sh->transient_bytes += kWeightBuffers * layer_weight_bytes(ctx.model) / d + kv_bytes(ctx.model, *sh) / d;
  }

  void add_comm(const Context& ctx, const Sharding& sh, CommPlan* comm) const override {
    const int d = ctx.plan.tsp;
    if (d == 1) return;
    const Bytes weights(layer_weight_bytes(ctx.model)), kv(kv_bytes(ctx.model, sh));
    comm->layer_forward.push_back({CommKind::tsp, Collective::all_gather, weights, d, 1, 1, Window::layer});
    comm->layer_forward.push_back({CommKind::tsp, Collective::all_gather, kv, d, 1, 1, Window::layer});
    comm->layer_backward.push_back({CommKind::tsp, Collective::all_gather, weights, d, 1, 1, Window::layer});
    comm->layer_backward.push_back({CommKind::tsp, Collective::reduce_scatter, weights, d, 1, 1, Window::layer});
    comm->layer_backward.push_back({CommKind::tsp, Collective::reduce_scatter, kv, d, 1, 1, Window::layer});
  }

  void schedule(const Context&, const Sharding&, Schedule*) const override {}
};

}  // namespace

const Strategy& folded_tensor_sequence_parallel() {
  static const FoldedTensorSequenceParallel s;
  return s;
}

}  // namespace shardplan
