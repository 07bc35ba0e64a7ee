#include "apps/report_table.h"

#include "apps/text.h"
#include "modeler/precision_recipe.h"

#include <cmath>
#include <cstdio>

namespace shardplan::cli {

namespace {
std::string row(const std::string& name, double a, const char* fa, double b, const char* fb) {
  char buf[128];
  std::snprintf(buf, sizeof buf, "  %-28s %12s %8s\n", name.c_str(), fmt(fa, a).c_str(), fmt(fb, b).c_str());
  return buf;
}
}  // namespace

std::string with_commas(double v) {
  std::string digits = fmt("%.0f", std::round(v));
  const bool neg = !digits.empty() && digits[0] == '-';
  if (neg) digits.erase(0, 1);
  for (int i = static_cast<int>(digits.size()) - 3; i > 0; i -= 3) digits.insert(static_cast<size_t>(i), ",");
  return neg ? "-" + digits : digits;
}

std::string format_params(double n) {
  if (n >= 1e12) return fmt("%.3f T", n / 1e12);
  if (n >= 1e9) return fmt("%.2f B", n / 1e9);
  if (n >= 1e6) return fmt("%.1f M", n / 1e6);
  return with_commas(n);
}

std::string format_model(const ModelDesc& m) {
  std::string s = "model: " + m.name + ", " + std::to_string(m.layers) + " layers, hidden " + std::to_string(m.hidden) +
                  ": " + format_params(total_params(m)) + " parameters";
  if (m.moe)
    s += ", " + format_params(activated_params(m)) + " active per token (" + std::to_string(m.moe->top_k) + " of " +
         std::to_string(m.moe->experts) + " experts)";
  return s;
}

std::string format_plan(const Plan& p, bool moe_model, const Framework* fw) {
  char buf[400];
  const std::string block =
      p.recompute_layers > 0 ? " (" + std::to_string(p.recompute_layers) + " layers per chunk)"
      : p.recompute == Recompute::selective && p.recompute_modules != kRecomputeCoreAttn
          ? " (" + recompute_modules_string(p.recompute_modules) + ")"
          : "";
  std::string precision = to_string(p.precision);
  if (fw && p.precision == Dtype::fp8) precision += std::string(" (") + to_string(effective_fp8_recipe(p, *fw)) + ")";
  std::snprintf(buf, sizeof buf,
                "plan: tp %d  pp %d  vpp %d  cp %d  dp %d  | zero %d  sp %s%s | mbs %d  gbs %d  seq %d  "
                "(%d micro-batches/step) | recompute %s%s | %s\n",
                p.tp, p.pp, p.vpp, p.cp, p.dp, p.zero, p.sequence_parallel ? "on" : "off",
                p.tp_comm_overlap ? "  tp-overlap" : "", p.micro_batch, p.global_batch, p.seq_len,
                p.num_microbatches(), to_string(p.recompute), block.c_str(), precision.c_str());
  std::string s = buf;
  if (p.tsp > 1) s += "      tsp " + std::to_string(p.tsp) + " (folded tensor + sequence parallel)\n";
  if (moe_model)
    s += "      ep " + std::to_string(p.ep) + "  etp " + std::to_string(p.etp) + "  | routing " +
         (p.capacity_factor > 0 ? "token-drop, capacity factor " + fmt("%g", p.capacity_factor)
                                : "dropless, imbalance " + fmt("%g", p.moe_imbalance)) + "\n";
  if (p.changes_training_semantics())
    s += "      sdp keep " + fmt("%g", p.sdp_keep) + "  mask " + to_string(p.sdp_mask) + "  granularity " +
         to_string(p.sdp_granularity) + "  [changes training semantics: trains subnetworks]\n";
  return s;
}

std::string format_memory(const MemoryBreakdown& m) {
  const double total = to_GiB(m.total());
  auto line = [&](const char* name, Bytes b) {
    return row(name, to_GiB(b), "%.2f", 100.0 * to_GiB(b) / total, "%.1f");
  };
  std::string s = "memory per GPU, busiest stage          (GiB)      (%)\n";
  s += line("weights", m.weights);
  s += line("gradients", m.gradients);
  s += line("optimizer states", m.optimizer);
  s += line("activations", m.activations);
  s += line("logits", m.logits);
  s += line("comm/gather buffers", m.buffers);
  s += line("allocator fragmentation", m.fragmentation);
  s += line("CUDA context + workspaces", m.context);
  s += row("total", total, "%.2f", 100.0, "%.1f");
  s += "  capacity " + fmt("%.1f", to_GiB(m.capacity)) + " GiB: " +
       (m.fits() ? "fits (" + fmt("%.1f", to_GiB(m.capacity - m.total())) + " GiB free)"
                 : "DOES NOT FIT (" + fmt("%.1f", to_GiB(m.total() - m.capacity)) + " GiB over)") +
       "\n";
  return s;
}

std::string format_time(const TimeBreakdown& t) {
  const double step = to_ms(t.step());
  auto line = [&](const std::string& name, Seconds x) {
    return row(name, to_ms(x), "%.2f", 100.0 * to_ms(x) / step, "%.1f");
  };
  std::string s = "step time                               (ms)      (%)\n";
  s += line("compute", t.compute);
  s += line("  of which recompute", t.recompute);
  if (t.moe.v > 0) s += line("  of which MoE experts", t.moe);
  for (int k = 0; k < kNumCommKinds; ++k)
    if (t.exposed_comm[k].v > 0)
      s += line(std::string("exposed ") + kCommKindNames[k] + " communication", t.exposed_comm[k]);
  s += line("pipeline bubble", t.bubble);
  s += line("optimizer step", t.optimizer);
  if (t.host_transfer.v > 0) s += line("exposed offload copies", t.host_transfer);
  if (t.host_layer.v > 0) s += line("host time per layer pass", t.host_layer);
  s += row("step", step, "%.2f", 100.0, "%.1f");
  return s;
}

std::string format_throughput(const Estimate& e) {
  return "throughput: " + with_commas(e.tokens_per_s) + " tokens/s, " + with_commas(e.tokens_per_s_per_gpu) +
         " tokens/s/GPU, MFU " + fmt("%.1f", 100 * e.mfu) + "%, HFU " + fmt("%.1f", 100 * e.hfu) +
         "% (of the dense 16-bit peak, bf16 or else fp16, also for fp8 plans)\n";
}

}  // namespace shardplan::cli
