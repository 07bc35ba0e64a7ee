#include "modeler/io/flexgen_validation.h"

#include "modeler/io/flexgen_machine_io.h"
#include "modeler/problems.h"

namespace shardplan::io {

void predict_flexgen_row(const ServingRun& r, ServeRowResult* out) {
  auto skip = [&](std::string why) {
    out->skipped = true;
    out->skip_reason = std::move(why);
  };
  if (!r.offload || !r.offload->flexgen_policy) return skip("no FlexGen policy stated (plan.offload.flexgen_policy)");
  if (r.machine.empty()) return skip("no offload-machine profile named (system.machine)");
  if (!r.input_len || !r.output_len) return skip("FlexGen row without input_len and output_len");
  if (r.weights_precision != "fp16" && !r.offload->flexgen_policy->compress_weight)
    return skip("FlexGen runs OPT in fp16 or its 4-bit compression; weights_precision " + r.weights_precision);
  FlexgenMachineProfile mp;
  try {
    mp = load_flexgen_machine(r.machine);
  } catch (const ConfigError& e) {
    return skip(std::string("machine profile: ") + e.what());
  }
  if (mp.gpu != r.gpu) return skip("machine profile '" + r.machine + "' has gpu " + mp.gpu + ", the row " + r.gpu);
  serving::FlexgenWorkload w;
  w.prompt_len = *r.input_len;
  w.gen_len = *r.output_len;
  serving::FlexgenPrediction p;
  try {
    p = serving::flexgen_predict(r.model, *r.offload->flexgen_policy, mp.machine, w);
  } catch (const Infeasible& e) {
    return skip(std::string("predicted not to fit: ") + e.what());
  } catch (const ConfigError& e) {
    return skip(std::string("flexgen policy: ") + e.what());
  }
  out->assumed.push_back("FlexGen block schedule on " + mp.machine.name);
  out->predicted[2] = p.decode_tokens_per_s;
  out->predicted[3] = p.prefill_tokens_per_s;
  if (r.throughput_scope == "output_total")
    out->predicted[4] = p.throughput_tokens_per_s;
  else if (r.throughput_scope == "output_per_gpu")
    out->predicted[4] = p.throughput_tokens_per_s / r.gpus;
  for (int k = 0; k < kNumServeMetrics; ++k)
    if (out->measured[k] && out->predicted[k])
      out->error_pct[k] = 100.0 * (*out->predicted[k] - *out->measured[k]) / *out->measured[k];
}

}  // namespace shardplan::io
