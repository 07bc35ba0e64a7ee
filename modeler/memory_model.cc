#include "modeler/memory_model.h"

#include "modeler/stage_params.h"

namespace shardplan {

namespace {
constexpr double kAct = 2.0;  // 16-bit activations
// CUDA context + cuBLAS/cuDNN workspaces + NCCL channel buffers of a PyTorch training process: ~0.5-0.8 GiB of
// context on Hopper (nvidia-smi of an idle CUDA 12 PyTorch process) plus a 32 MiB cuBLAS workspace and NCCL's
// 4 MiB buffer per channel and peer; taken as 1 GiB.
constexpr double kContextGiB = 1.0;
// Caching-allocator fragmentation reserved but not allocated (PyTorch memory_reserved - memory_allocated is
// typically a few percent of the allocated peak); 5% of the allocated total.
constexpr double kFragmentation = 0.05;
}  // namespace

bool trains_with_dropout(const ModelDesc& m) { return !m.gated_mlp; }

double activation_bytes_per_layer(const ModelDesc& m, const Sharding& sh, Recompute recompute, bool dropout,
                                  bool flash) {
  const double T = sh.tokens, Tn = sh.norm_tokens, h = m.hidden, d = m.head_dim;
  if (recompute == Recompute::full) return Tn * h * kAct;  // the layer input only (Korthikanti Eq. 6: 2sbh/t)
  // Norm region (replicated over tp unless sequence parallel): inputs of both norms and of QKV and MLP-up.
  double bytes = 4.0 * Tn * h * kAct;
  if (dropout) bytes += 2.0 * Tn * h;  // two 1-byte dropout masks (attention output, MLP output)
  // Tensor-parallel region: Q, K, V, attention output (input of the output projection).
  bytes += T * (2.0 * sh.heads + 2.0 * sh.kv_heads) * d * kAct;
  // MLP: activation-function input (2f for gate+up) and output (input of the down projection).
  bytes += T * sh.ffn * (m.gated_mlp ? 3.0 : 2.0) * kAct;
  if (flash) {
    bytes += 4.0 * T * sh.heads;  // fp32 log-sum-exp per query row and head
  } else if (recompute == Recompute::none) {
    // Scores after softmax (2 bytes), dropout mask (1) and dropout output (2): 5 a s^2 b, with local heads.
    const double per_head = sh.batch * sh.seq_q * sh.seq_kv;
    bytes += (dropout ? 5.0 : 2.0) * sh.heads * per_head;
  }
  return bytes;
}

MemoryBreakdown memory_breakdown(const Context& ctx, const Sharding& sh, const Schedule& sched) {
  const Plan& p = ctx.plan;
  const Framework& fw = ctx.framework;
  const StageParams params = busiest_stage_params(ctx, sh);
  MemoryBreakdown mem;
  mem.capacity = ctx.system.gpu.hbm_capacity;
  const double n = params.total();
  double weight_bytes = fw.state.weights;
  if (p.precision == Dtype::fp8) weight_bytes += 1.0;  // cached fp8 (transposed) weight copies
  mem.weights = Bytes(n * weight_bytes / sh.dp_shard_weights);
  mem.gradients = Bytes(n * fw.state.gradients / sh.dp_shard_gradients);
  mem.optimizer = Bytes(n * fw.state.optimizer / sh.dp_shard_optimizer);

  const bool dropout = trains_with_dropout(ctx.model);
  const double per_layer = activation_bytes_per_layer(ctx.model, sh, p.recompute, dropout, true);
  double act = per_layer * sh.layers * sched.in_flight;
  if (p.recompute == Recompute::full)  // one layer's activations re-materialised during its backward
    act += activation_bytes_per_layer(ctx.model, sh, Recompute::none, dropout, true);
  mem.activations = Bytes(act);

  // Last stage: bf16 logits plus the fp32 copy the cross-entropy makes, for one micro-batch.
  const bool has_head = p.pp == 1 || params.head > 0;
  if (has_head) mem.logits = Bytes(sh.tokens * sh.vocab * (kAct + 4.0));

  if (p.zero >= 3) {
    // Gathered 16-bit parameters of the current and the prefetched layer, and one layer's unsharded
    // gradients before their reduce-scatter.
    const double layer = params_per_layer(ctx.model) / sh.weight_shard;
    mem.buffers = Bytes(layer * (2.0 * 2.0 + fw.state.gradients));
  }
  if (p.pp > 1) mem.buffers += Bytes(2.0 * sh.tokens * ctx.model.hidden * kAct);  // send + receive buffers

  const Bytes allocated = mem.weights + mem.gradients + mem.optimizer + mem.activations + mem.logits + mem.buffers;
  mem.context = GiB(kContextGiB);
  mem.fragmentation = allocated * kFragmentation;
  return mem;
}

}  // namespace shardplan
