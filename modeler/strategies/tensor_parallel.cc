// Tensor parallelism (Megatron-LM, Shoeybi et al. 2019): attention heads and the MLP width are split over tp ranks;
// each layer needs two collectives in forward and two in backward. With sequence parallelism (Korthikanti et al.
// 2022, Sec. 4.2.2) the all-reduce becomes an all-gather + reduce-scatter pair of the same total bytes, norms and
// residuals run on 1/tp of the tokens, and backward repeats the all-gather of the layer input for the weight
// gradient (overlapped with the data-gradient GEMM in Megatron).
//
// TP comm-GEMM overlap (--tp-comm-overlap, Transformer Engine userbuffers; torchtitan's AsyncTP) pairs each
// collective with one GEMM, not with the whole layer: the attention core, norms and elementwise kernels hide
// nothing. Transformer Engine's pairing (transformer_engine/pytorch/module/base.py initialize_ub, and NeMo's
// userbuffers_* configs): ring-exchange all-gathers feed the QKV and FC1 fprop and the proj and FC2 dgrad GEMMs
// (copy-engine transfers, tp GEMM chunks); pipelined reduce-scatters follow the proj and FC2 fprop (4 GEMM
// chunks, 16 SMs for the reduction kernels, the last chunk's scatter after the last GEMM chunk); bulk overlaps put
// the input re-gather behind the QKV and FC1 dgrad and the dX reduce-scatter behind their wgrad (16 SMs each).
// PyTorch's AsyncTP (torch/distributed/_symmetric_memory: _pipelined_all_gather_and_consume,
// _pipelined_produce_and_all2all) moves data with copy-engine transfers in tp chunks and pairs only what
// Inductor's micro_pipeline_tp pass matches: not the backward's dX reduce-scatters
// (Framework::tp_overlap_pairs_dx_reduce_scatter).
#include "modeler/precision_recipe.h"
#include "modeler/strategies/strategy.h"
#include "modeler/time_model.h"

namespace shardplan {

namespace {

class TensorParallel final : public Strategy {
 public:
  const char* name() const override { return "tp"; }

  void validate(const Context& ctx, Problems* problems) const override {
    const int tp = ctx.plan.tp;
    const ModelDesc& m = ctx.model;
    if (tp < 1) {
      problems->push_back({"tp_range", "tp (" + std::to_string(tp) + ") must be at least 1"});
      return;
    }
    if (ctx.plan.tp_comm_overlap && tp > 1 && !ctx.framework.offers_tp_overlap)
      problems->push_back({"tp_overlap_unsupported",
                           ctx.framework.name + " does not overlap tensor-parallel collectives (--tp-overlap)"});
    if (m.heads % tp != 0)
      problems->push_back({"tp_divides_heads",
                           "tp (" + std::to_string(tp) + ") does not divide heads (" + std::to_string(m.heads) + ")"});
    // Megatron-Core requires num_query_groups % tp == 0 (TransformerConfig); K/V heads are not replicated.
    if (m.kv_heads % tp != 0)
      problems->push_back({"tp_divides_kv_heads", "tp (" + std::to_string(tp) + ") does not divide kv_heads (" +
                                                      std::to_string(m.kv_heads) + ")"});
    if (m.ffn_hidden % tp != 0)
      problems->push_back({"tp_divides_ffn", "tp (" + std::to_string(tp) + ") does not divide ffn_hidden (" +
                                                 std::to_string(m.ffn_hidden) + ")"});
  }

  void shard(const Context& ctx, Sharding* sh) const override {
    const double tp = ctx.plan.tp;
    sh->heads /= tp;
    sh->kv_heads /= tp;
    sh->ffn /= tp;
    sh->vocab /= tp;  // vocabulary-parallel embedding and LM head (Megatron pads V to a multiple of tp)
    sh->weight_shard *= tp;
    sh->embedding_shard *= tp;
    if (ctx.plan.sequence_parallel) sh->norm_tokens /= tp;
  }

  void add_comm(const Context& ctx, const Sharding& sh, CommPlan* comm) const override {
    const int tp = ctx.plan.tp;
    if (tp == 1) return;
    const Bytes act(sh.tokens * ctx.model.hidden * 2.0);  // [tokens x h] activation in 16 bits
    const bool overlap = ctx.plan.tp_comm_overlap;
    const Window w = overlap ? Window::layer : Window::exposed;
    if (ctx.plan.sequence_parallel) {
      const Framework& fw = ctx.framework;
      // The all-gathers move the fp8 cast where the linears gather it (precision_recipe.h tp_all_gather_bytes).
      const Bytes gathered(sh.tokens * ctx.model.hidden * tp_all_gather_bytes(ctx.plan, fw));
      const double rs_splits = fw.tp_overlap_rs_splits > 0 ? fw.tp_overlap_rs_splits : tp;
      // The three overlap methods: a ring of tp copy-engine transfers, each beside one GEMM chunk; a pipelined
      // reduce-scatter of rs_splits chunks, each after its GEMM chunk; a bulk collective beside the whole GEMM.
      const CommOp ring{CommKind::tp, Collective::all_gather, gathered, tp, 1, 1, Window::gemm, -1, 0.0, 0.0,
                        (tp - 1.0) / tp, false};
      const CommOp pipelined{CommKind::tp, Collective::reduce_scatter, act, tp, 1, 1, Window::gemm, -1,
                             fw.tp_overlap_rs_sms, 1.0 / rs_splits, (rs_splits - 1.0) / rs_splits,
                             fw.tp_overlap_rs_sms > 0};
      const CommOp bulk{CommKind::tp, Collective::all_gather, gathered, tp, 1, 1, Window::gemm, -1,
                        fw.tp_overlap_bulk_sms, 0.0, 1.0, fw.tp_overlap_bulk_sms > 0};
      auto paired = [](CommOp op, Collective c, LinearGemm g, bool wgrad) {
        op.collective = c;
        op.gemm = linear_slot(g, wgrad);
        return op;
      };
      auto fwd = [&](Collective c, LinearGemm g) {
        const bool rs = c == Collective::reduce_scatter;
        const Bytes b = rs ? act : gathered;
        comm->layer_forward.push_back(overlap ? paired(rs ? pipelined : ring, c, g, false)
                                              : CommOp{CommKind::tp, c, b, tp, 1, 1, Window::exposed});
      };
      // Forward: all-gather before QKV and before MLP-up, reduce-scatter after out-proj and MLP-down.
      fwd(Collective::all_gather, LinearGemm::qkv);
      fwd(Collective::reduce_scatter, LinearGemm::proj);
      fwd(Collective::all_gather, LinearGemm::fc1);
      fwd(Collective::reduce_scatter, LinearGemm::fc2);
      // Backward: the gradient all-gathers before the proj and FC2 dgrad, the dX reduce-scatters after the QKV
      // and FC1 dgrad (behind their wgrad with the overlap), and the re-gather of the QKV and FC1 inputs for their
      // weight gradients, behind their dgrad (Megatron's async all-gather also without the overlap, NCCL's SMs).
      CommOp nccl = bulk;  // Megatron's async all-gather on NCCL: its channels' SMs while it runs
      nccl.overlap_sms = kCommunicationSms;
      nccl.sm_margin = false;
      for (LinearGemm g : {LinearGemm::proj, LinearGemm::fc2})
        comm->layer_backward.push_back(overlap ? paired(ring, Collective::all_gather, g, false)
                                               : CommOp{CommKind::tp, Collective::all_gather, gathered, tp, 1, 1, w});
      // The dX reduce-scatters run exposed where the overlap cannot pair them (AsyncTP, framework.h). The input
      // re-gather exists only where the linears keep their local shard for the weight gradient: a framework that
      // saves the gathered inputs (torchtitan) has them from the forward or from full recompute's re-run forward
      // (which repeats the forward's all-gathers, time_model.cc); op-level SAC saves no all-gather output
      // (torchtitan _save_list), so it gathers again.
      const bool pairs_rs = overlap && fw.tp_overlap_pairs_dx_reduce_scatter;
      const bool regather = !fw.tp_saves_gathered_inputs ||
                            (ctx.plan.recompute == Recompute::selective && fw.selective_is_op_sac);
      for (LinearGemm g : {LinearGemm::qkv, LinearGemm::fc1}) {
        CommOp bulk_rs = bulk;  // a 16-bit reduce-scatter
        bulk_rs.bytes = act;
        comm->layer_backward.push_back(pairs_rs ? paired(bulk_rs, Collective::reduce_scatter, g, true)
                                                : CommOp{CommKind::tp, Collective::reduce_scatter, act, tp, 1, 1,
                                                         Window::exposed});
        if (regather) comm->layer_backward.push_back(paired(overlap ? bulk : nccl, Collective::all_gather, g, false));
      }
    } else {
      comm->layer_forward.push_back({CommKind::tp, Collective::all_reduce, act, tp, 1, 2, w});
      comm->layer_backward.push_back({CommKind::tp, Collective::all_reduce, act, tp, 1, 2, w});
    }
  }

  void schedule(const Context&, const Sharding&, Schedule*) const override {}
};

}  // namespace

const Strategy& tensor_parallel() {
  static const TensorParallel s;
  return s;
}

}  // namespace shardplan
