#include "modeler/zeropp.h"

#include <algorithm>
#include <cstdlib>

#include "modeler/layer_cost.h"
#include "modeler/memory_model.h"
#include "modeler/precision_recipe.h"
#include "modeler/stage_params.h"

namespace shardplan {

namespace {

/// Data-parallel ranks inside one node: qgZ's first all-to-all group (local_world_size = device_count()).
int ranks_per_node(const Context& ctx) {
  return std::max(1, std::min(ctx.plan.dp, ctx.system.gpus_per_node / std::max(1, ctx.plan.inner())));
}

/// The int4 all-to-all pair that replaces a reduce-scatter of `elements` gradient elements per rank.
void add_qgz(const Context& ctx, const CommOp& rs, double elements, std::vector<CommOp>* out) {
  const int local = ranks_per_node(ctx), nodes = ctx.plan.dp / local;
  const Bytes intra(elements * kQgzBytes);
  if (local > 1) out->push_back({CommKind::dp, Collective::all_to_all, intra, local, rs.stride, rs.count, rs.window});
  if (nodes > 1)
    out->push_back(
        {CommKind::dp, Collective::all_to_all, intra / local, nodes, rs.stride * local, rs.count, rs.window});
}

void rewrite(const Context& ctx, std::vector<CommOp>* ops, bool backward_layer) {
  const Plan& p = ctx.plan;
  const ZeroPP& z = p.zeropp;
  const int group = p.dp * p.cp, stride = p.inner();
  const double gather_bytes = param_gather_bytes(p, ctx.framework);
  std::vector<CommOp> out;
  for (const CommOp& op : *ops) {
    if (op.kind != CommKind::dp || op.group != group || op.stride != stride) {
      out.push_back(op);
      continue;
    }
    CommOp o = op;
    if (op.collective == Collective::all_gather) {
      if (backward_layer && z.hpz_partition > 1) {
        o.group = z.hpz_partition;  // the secondary shard, gathered in 16 bits inside the hpZ group
      } else if (z.quantized_weights && gather_bytes > kQwzBytes) {
        o.bytes = op.bytes * (kQwzBytes / gather_bytes);
      }
      out.push_back(o);
    } else if (op.collective == Collective::reduce_scatter && z.quantized_gradients) {
      add_qgz(ctx, op, op.bytes.v / ctx.framework.state.gradients, &out);
    } else {
      out.push_back(o);
    }
  }
  *ops = std::move(out);
}

}  // namespace

std::optional<ZeroPP> parse_zeropp(const std::string& text, std::string* error) {
  ZeroPP z;
  if (text == "off" || text == "none") return z;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t end = std::min(text.find('+', start), text.size());
    const std::string part = text.substr(start, end - start);
    if (part == "qwz") {
      z.quantized_weights = true;
    } else if (part == "qgz") {
      z.quantized_gradients = true;
    } else if (part.rfind("hpz", 0) == 0 && part.size() > 3 && part.size() < 12 &&
               part.find_first_not_of("0123456789", 3) == std::string::npos && std::atoi(part.c_str() + 3) >= 2) {
      z.hpz_partition = std::atoi(part.c_str() + 3);
    } else {
      *error = "'" + part + "' is not a ZeRO++ part (qwz, qgz, hpzN with N >= 2, joined by '+'; or off)";
      return std::nullopt;
    }
    start = end + 1;
  }
  return z;
}

std::string zeropp_string(const ZeroPP& z) {
  if (!z.any()) return "off";
  std::string s;
  auto add = [&s](const std::string& part) { s += (s.empty() ? "" : "+") + part; };
  if (z.quantized_weights) add("qwz");
  if (z.hpz_partition > 1) add("hpz" + std::to_string(z.hpz_partition));
  if (z.quantized_gradients) add("qgz");
  return s;
}

void validate_zeropp(const Context& ctx, Problems* problems) {
  const Plan& p = ctx.plan;
  const ZeroPP& z = p.zeropp;
  if (!z.any()) return;
  const std::string named = "ZeRO++ (" + zeropp_string(z) + ")";
  if (!ctx.framework.offers_zeropp)
    problems->push_back(
        {"zeropp_unsupported", named + " is DeepSpeed's; " + ctx.framework.name + " does not offer it"});
  if (p.zero != 3) problems->push_back({"zeropp_needs_zero3", named + " runs with ZeRO-3 only (--zero 3)"});
  if (z.hpz_partition > 1 && (p.dp % z.hpz_partition != 0 || z.hpz_partition >= p.dp))
    problems->push_back({"zeropp_hpz_divides_dp", "hpZ partition (" + std::to_string(z.hpz_partition) +
                                                      ") must divide dp (" + std::to_string(p.dp) +
                                                      ") and be smaller"});
  // all_to_all_quant_reduce groups dist.get_world_size() ranks by device_count(): the whole world is data parallel.
  if (z.quantized_gradients && p.inner() * p.pp > 1)
    problems->push_back({"zeropp_qgz_model_parallel",
                         "qgZ groups all ranks by node (DeepSpeed "
                         "all_to_all_quant_reduce): it needs tp x cp x pp = 1"});
  if (p.dp_shard > 0) problems->push_back({"zeropp_with_hsdp", named + " with hybrid sharding (MiCS) is not offered"});
  if (p.param_offload)
    problems->push_back({"zeropp_with_param_offload", named + " with parameter offload is not modelled"});
}

void apply_zeropp_comm(const Context& ctx, CommPlan* comm) {
  if (!ctx.plan.zeropp.any() || ctx.plan.zero != 3) return;
  rewrite(ctx, &comm->layer_forward, false);
  rewrite(ctx, &comm->layer_backward, true);
  rewrite(ctx, &comm->microbatch, false);
}

void apply_zeropp_memory(const Context& ctx, const Sharding& sh, MemoryBreakdown* mem) {
  const int hpz = ctx.plan.zeropp.hpz_partition;
  if (hpz <= 1) return;
  const Bytes secondary(busiest_stage_params(ctx, sh).dense() * 2.0 / hpz);  // ds_secondary_tensor: param.dtype
  const Bytes allocated = mem->total() - mem->fragmentation - mem->context;
  mem->weights += secondary;
  if (allocated.v > 0) mem->fragmentation = mem->fragmentation * ((allocated + secondary) / allocated);
}

Seconds zeropp_kernel_time(const Context& ctx, const Sharding& sh, const Schedule& sched) {
  const Plan& p = ctx.plan;
  const ZeroPP& z = p.zeropp;
  if (!z.any() || p.zero != 3 || sh.layers <= 0) return Seconds(0);
  const Gpu& gpu = ctx.system.gpu;
  const double unit = busiest_stage_params(ctx, sh).layers / sh.layers;  // one layer's parameters on this rank
  const double dp = p.dp, gb = param_gather_bytes(p, ctx.framework);
  Seconds per_layer;
  if (z.quantized_weights) {
    // Quantise the local shard (read 16-bit, write int8), dequantise the gathered layer (read int8, write 16-bit).
    const Seconds gather = memory_time(gpu, Bytes(unit / dp * (gb + 1.0))) + memory_time(gpu, Bytes(unit * (1.0 + gb)));
    double gathers = 1.0 + full_recompute_share(p, sh);
    if (ctx.framework.reshard_after_forward && z.hpz_partition <= 1) gathers += 1.0;
    per_layer += gather * gathers;
  }
  if (z.quantized_gradients) {
    // swizzle_quant (read the gradient, write int4), quantized_reduction (read the local all-to-all's int4, write
    // 1/local of it), dequantize (read the inter-node result, write the rank's shard).
    const double g = ctx.framework.state.gradients, local = ranks_per_node(ctx);
    per_layer += memory_time(gpu, Bytes(unit * (g + kQgzBytes))) +
                 memory_time(gpu, Bytes(unit * kQgzBytes * (1.0 + 1.0 / local))) +
                 memory_time(gpu, Bytes(unit / local * kQgzBytes + unit / dp * g));
  }
  return per_layer * (sh.layers * sched.microbatches);
}

}  // namespace shardplan
