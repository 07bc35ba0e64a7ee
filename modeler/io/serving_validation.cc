#include "modeler/io/serving_validation.h"

#include <algorithm>
#include <array>
#include <cmath>

#include "modeler/io/flexgen_validation.h"
#include "modeler/io/llama_offload_validation.h"
#include "modeler/io/system_io.h"
#include "modeler/io/validation_run.h"
#include "modeler/problems.h"
#include "modeler/serving/aic_benchmark.h"
#include "modeler/serving/engine_memory.h"
#include "modeler/serving/formats.h"
#include "modeler/serving/offload.h"
#include "modeler/serving/open_loop.h"

namespace shardplan::io {

namespace {

using serving::Engine;
using serving::WeightFormat;

constexpr int kOpenLoopPrompts = 1000;  // vLLM benchmark_serving's and sglang.bench_serving's --num-prompts default

WeightFormat fmt_of(const std::string& s) { return *serving::parse_weight_format(s); }

bool is_16bit(const std::string& s) { return s == "bf16" || s == "fp16"; }

// The validator's rule for a null kv_precision: 16-bit weights keep a 16-bit cache, llama.cpp f16; fp8 and fp4
// checkpoints run an fp8 cache (AIConfigurator's default kv-cache mode for quantised checkpoints), except the
// SGLang sweeps the generator did not deploy, which keep SGLang's --kv-cache-dtype auto (aic_quantised_kv_bytes).
double kv_bytes_for(const ServingRun& r, bool generator_deployed, std::vector<std::string>* assumed) {
  if (r.kv_precision) return *serving::parse_kv_bytes(*r.kv_precision);
  if (r.engine == "llama.cpp" || r.engine == "ik_llama.cpp" || is_16bit(r.weights_precision)) {
    assumed->push_back("kv 16-bit");
    return 2.0;
  }
  const auto engine = serving::parse_engine(r.engine);
  const double b = engine ? serving::aic_quantised_kv_bytes(*engine, generator_deployed) : 1.0;
  assumed->push_back(b >= 2.0 ? "kv 16-bit (SGLang --kv-cache-dtype auto)" : "kv fp8");
  return b;
}

std::string family_of(const ServingRun& r) {
  if (r.engine == "flexgen") return "flexgen";
  if (r.engine == "hf-accelerate") return "hf-accelerate offload";
  if (r.engine == "llama.cpp" || r.engine == "ik_llama.cpp") {
    if (!r.offload) return "llama.cpp full-GPU";
    const auto& o = *r.offload;
    const bool full = o.gpu_layers && *o.gpu_layers >= r.model.layers + 1 && o.tensor_overrides.empty() &&
                      !(o.n_cpu_moe && *o.n_cpu_moe > 0);
    return full ? "llama.cpp full-GPU" : "llama.cpp offload";
  }
  return "datacenter";
}

// A request-rate row with fixed lengths: the open loop (open_loop.h) at the row's rate, as many requests as the
// benchmarks' default (1000), seed 0; TTFT and TPOT compared at the median, the figure the bench_serving tables
// print (the mean where the row says so is not told apart by the schema).
void predict_open_loop_row(const ServingRun& r, const serving::ServeInputs& in, ServeRowResult* out) {
  serving::OpenLoopWorkload wl;
  wl.rate = *r.request_rate;
  wl.lengths.assign(kOpenLoopPrompts, serving::LengthPair{*r.input_len, *r.output_len});
  out->assumed.push_back("open loop, Poisson, " + std::to_string(kOpenLoopPrompts) + " requests, medians");
  out->family = "datacenter open loop";
  try {
    const serving::OpenLoopPrediction p = serving::predict_open_loop(in, wl);
    out->predicted[0] = p.run.ttft.p50 * 1e3;
    out->predicted[1] = p.run.tpot.count ? p.run.tpot.p50 * 1e3 : p.run.itl.p50 * 1e3;
    out->predicted[4] = p.run.output_tokens_per_s;
    if (!p.stable) out->assumed.push_back("rate above the predicted capacity");
  } catch (const Infeasible& e) {
    out->skipped = true;
    out->skip_reason = std::string("predicted not to fit: ") + e.what();
    return;
  } catch (const ConfigError& e) {
    out->skipped = true;
    out->skip_reason = std::string("plan: ") + e.what();
    return;
  }
  for (int k = 0; k < kNumServeMetrics; ++k)
    if (out->measured[k] && out->predicted[k])
      out->error_pct[k] = 100.0 * (*out->predicted[k] - *out->measured[k]) / *out->measured[k];
}

void add(ServeStats* s, double err) {
  s->mape = (s->mape * s->runs + std::abs(err)) / (s->runs + 1);
  ++s->runs;
}


ServeRowResult predict_row(const ServingRun& r, std::map<std::string, GpuProfile>* gpus) {
  ServeRowResult out;
  out.run = &r;
  out.family = family_of(r);
  if (r.ttft_ms) out.measured[0] = *r.ttft_ms;
  if (r.tpot_ms) out.measured[1] = *r.tpot_ms;
  else if (r.itl_ms) out.measured[1] = *r.itl_ms;
  if (r.decode_tokens_per_s) out.measured[2] = *r.decode_tokens_per_s;
  if (r.prefill_tokens_per_s) out.measured[3] = *r.prefill_tokens_per_s;
  if (r.throughput_tokens_per_s) out.measured[4] = *r.throughput_tokens_per_s;
  auto skip = [&](std::string why) {
    out.skipped = true;
    out.skip_reason = std::move(why);
    return out;
  };
  if (out.family == "flexgen") {
    predict_flexgen_row(r, &out);
    return out;
  }
  if (out.family == "hf-accelerate offload")
    return skip("HF Accelerate offload: its row-by-row schedule and pageable copies are not modelled");
  // ShareGPT: sglang.bench_serving and vLLM's benchmark_serving draw each request's lengths from the ShareGPT
  // JSON through the served model's tokenizer; no per-request list or distribution under the Llama-3 tokenizer
  // was found to cite (docs/serving.md, "Open loop"), so these rows stay unpredicted.
  if (r.dataset == "sharegpt" && (!r.input_len || !r.output_len))
    return skip(std::string(kShareGptSkip));
  if (out.family != "llama.cpp offload" && (!r.input_len || !r.output_len))
    return skip("variable-length dataset (" + r.dataset + ") without lengths");
  if (!r.concurrency && !r.batch_size && !r.request_rate)
    return skip("neither concurrency, batch_size nor request_rate stated");
  auto it = gpus->find(r.gpu);
  if (it == gpus->end()) {
    try {
      it = gpus->emplace(r.gpu, load_gpu_profile(r.gpu)).first;
    } catch (const ConfigError&) {
      return skip("no hardware profile for gpu '" + r.gpu + "'");
    }
  }
  if (out.family == "llama.cpp offload") {
    predict_llama_offload_row(r, it->second, &out);
    if (out.skipped) return out;
    for (int k = 0; k < kNumServeMetrics; ++k)
      if (out.measured[k] && out.predicted[k])
        out.error_pct[k] = 100.0 * (*out.predicted[k] - *out.measured[k]) / *out.measured[k];
    return out;
  }
  const bool aic = r.source.find("AIConfigurator") != std::string::npos;
  serving::WorkerPlan agg = r.agg;
  StandardSystemOptions so;
  so.gpus = r.gpus;
  // The CSV gives one worker's shape, not the worker count (aic_benchmark.h).
  if (aic && r.mode == serving::Mode::aggregated && r.concurrency && agg.batch) {
    const int need = serving::aic_aggregated_workers(*r.concurrency, *agg.batch, agg.attention_dp, agg.workers);
    if (need > agg.workers) {
      agg.workers = need;
      so.gpus = std::max(so.gpus, need * agg.gpus());
      out.assumed.push_back(std::to_string(need) + " workers (concurrency / max_batch, AIConfigurator's rule)");
    }
  }
  if (r.gpus_per_node) {
    so.gpus_per_node = *r.gpus_per_node;
    // A disaggregated deployment's prefill and decode workers need not fill their last node (AIConfigurator's
    // 44-GPU B200 runs span 6 nodes of 8): the system is the nodes they occupy; every worker keeps its size.
    if (so.gpus_per_node > 0 && so.gpus % so.gpus_per_node != 0) {
      so.gpus = (so.gpus / so.gpus_per_node + 1) * so.gpus_per_node;
      out.assumed.push_back("system rounded up to " + std::to_string(so.gpus) + " GPUs (whole nodes)");
    }
  }
  System sys;
  try {
    sys = standard_system(it->second, so);
  } catch (const ConfigError& e) {
    return skip(std::string("system: ") + e.what());
  }
  serving::Precision prec;
  prec.weights = fmt_of(r.weights_precision);
  prec.moe_weights = fmt_of(r.moe_weights_precision);
  // The checkpoint's quantization_config decides the kernels a stated fp8 runs (formats.h).
  if (std::string note = serving::apply_checkpoint_format(&prec.weights, &prec.moe_weights,
                                                          r.model.checkpoint_fp8_block);
      !note.empty())
    out.assumed.push_back(std::move(note));
  const bool generator_deployed = r.deployment == Deployment::aic_generator;
  prec.kv_bytes = kv_bytes_for(r, generator_deployed, &out.assumed);
  serving::ServingModel sm = serving::make_serving_model(r.model, prec);
  sm.engine = serving::engine_step(*serving::parse_engine(r.engine), r.engine_version.value_or(""), r.model);
  serving::ServeInputs in;
  in.model = &sm;
  in.system = &sys;
  in.engine = *serving::parse_engine(r.engine);
  in.plan.mode = r.mode;
  in.plan.agg = agg;
  in.plan.prefill = r.prefill;
  in.plan.decode = r.decode;
  // Only rows the generator deployed (deployment: aic_generator, the rows whose source names the container image
  // or the deployment database dump) ran AIConfigurator's generated settings; the older per-version sweeps
  // (deployment: sweep, h100_sxm/trtllm/1.0.0rc3/..., no image) ran with settings the CSV does not give, so they
  // keep the engines' defaults.
  if (generator_deployed) {
    // The engine limits AIConfigurator's generator writes for its benchmark deployments (aic_benchmark.h).
    const serving::AicEngineLimits lim =
        serving::aic_generator_limits(in.engine, r.mode, *r.input_len, agg.batch.value_or(0), sys.gpu);
    in.plan.max_num_tokens = lim.max_num_tokens;
    in.plan.mixed_chunk = lim.mixed_chunk;
    const int t = lim.max_num_tokens;
    out.assumed.push_back("max_num_tokens " + std::to_string(t) + (in.plan.mixed_chunk ? ", mixed chunk" : ""));
  }
  // The generator's SGLang disaggregated workers move the cache over NIXL (generator/rule_plugin/benchmark/
  // sglang.rule: kv_transfer_backend defaults to "nixl", ai-dynamo/aiconfigurator@043c66c5), not SGLang's own
  // default Mooncake (kv_transfer.h).
  if (generator_deployed && in.engine == Engine::sglang && r.mode == serving::Mode::disaggregated) {
    in.plan.kv_transport = serving::KvTransport::nixl;
    out.assumed.push_back("KV transfer over NIXL (the generator's SGLang kv_transfer_backend)");
  }
  in.workload.input_len = *r.input_len;
  in.workload.output_len = *r.output_len;
  in.workload.context_depth = r.context_depth.value_or(0);
  if (r.concurrency) {
    in.workload.concurrency = *r.concurrency;
    // AIConfigurator's benchmark (generator/config/backend_templates/benchmark/bench_run.sh.j2): aiperf with
    // --concurrency c, --num-requests 20c after a 2c warm-up, fixed lengths: simulated as it ran.
    if (r.source.find("AIConfigurator") != std::string::npos) {
      in.workload.rounds = serving::kAicBenchmarkRounds;
      out.assumed.push_back("closed loop, " + std::to_string(serving::kAicBenchmarkRounds) + " rounds");
    }
  } else if (r.batch_size) {
    in.static_batch = *r.batch_size;
    out.assumed.push_back("static batch " + std::to_string(*r.batch_size));
  }
  if (r.request_rate && !r.concurrency && !r.batch_size) {
    predict_open_loop_row(r, in, &out);
    return out;
  }
  // A llama-bench row is one prompt (pp) and one batch decoding (tg): a static batch.
  if (in.engine == Engine::llamacpp) {
    in.static_batch = r.batch_size.value_or(1);
    in.separate_phases = true;
  }
  try {
    out.prediction = serving::serve_predict(in);
  } catch (const Infeasible& e) {
    return skip(std::string("predicted not to fit: ") + e.what());
  } catch (const ConfigError& e) {
    return skip(std::string("plan: ") + e.what());
  }
  const serving::ServePrediction& p = *out.prediction;
  if (p.kv_transfer) out.assumed.push_back("KV transfer: " + p.kv_transfer->placement);
  out.predicted[0] = to_ms(p.ttft);
  out.predicted[1] = to_ms(p.tpot);
  out.predicted[2] = p.decode_tokens_per_s;
  out.predicted[3] = p.prefill_tokens_per_s;
  if (r.throughput_scope == "output_per_gpu") out.predicted[4] = p.output_tokens_per_s_per_gpu;
  else if (r.throughput_scope == "output_total") out.predicted[4] = p.output_tokens_per_s;
  else if (r.throughput_scope == "total_per_gpu") out.predicted[4] = p.total_tokens_per_s_per_gpu;
  else if (r.throughput_scope == "total") out.predicted[4] = p.total_tokens_per_s_per_gpu * p.gpus;
  for (int k = 0; k < kNumServeMetrics; ++k)
    if (out.measured[k] && out.predicted[k])
      out.error_pct[k] = 100.0 * (*out.predicted[k] - *out.measured[k]) / *out.measured[k];
  return out;
}

}  // namespace

ServeValidationReport run_serve_validation(const std::vector<ServingRun>& runs) {
  ServeValidationReport rep;
  std::map<std::string, GpuProfile> gpus;
  for (const ServingRun& r : runs) rep.rows.push_back(predict_row(r, &gpus));
  for (const ServeRowResult& row : rep.rows) {
    if (row.skipped) continue;
    for (int k = 0; k < kNumServeMetrics; ++k) {
      if (!row.error_pct[k]) continue;
      const double e = *row.error_pct[k];
      add(&rep.overall[k], e);
      add(&rep.by_source[source_label(row.run->source)][k], e);
      add(&rep.by_engine[row.run->engine][k], e);
      add(&rep.by_gpu[row.run->gpu][k], e);
      add(&rep.by_family[row.family][k], e);
    }
  }
  return rep;
}

}  // namespace shardplan::io
