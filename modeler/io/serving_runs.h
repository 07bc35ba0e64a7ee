// The serving-runs file (design.md contract, schema 1): measured LLM serving and inference runs to validate the
// serving model against. Parsed strictly: unknown keys and out-of-range values name the file, line and key.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "modeler/model_desc.h"
#include "modeler/serving/flexgen.h"
#include "modeler/serving/serving_types.h"

namespace shardplan::io {

struct ServingOffload {
  std::optional<int> gpu_layers, n_cpu_moe;
  // plan.offload.n_ubatch (optional): llama.cpp's -ub, the tokens per prefill step; null: the engine default.
  // llama-sweep-bench's PP column is one ubatch (examples/sweep-bench: pp = n_ubatch).
  std::optional<int> n_ubatch;
  std::vector<std::string> tensor_overrides;
  std::optional<double> weights_gpu_percent, kv_gpu_percent, activations_gpu_percent;
  // plan.offload.flexgen_policy: FlexGen's Policy (flex_opt.py) as the row's source ran it. Required keys:
  // gpu_batch_size, num_gpu_batches, w_gpu_percent, w_cpu_percent, cache_gpu_percent, cache_cpu_percent,
  // act_gpu_percent, act_cpu_percent, cpu_cache_compute, compress_weight, compress_cache; optional: overlap and
  // pin_weight (FlexGen's defaults, true). Checked against the *_gpu_percent keys above and workload.batch_size.
  std::optional<serving::FlexgenPolicy> flexgen_policy;
};

struct ServingHost {
  std::string cpu;
  // host.machine (optional, this project's extension): a named machine of serving::machine_decode_runs()
  // (modeler/serving/host_rates.h), the one the row's source says it ran on; "" when absent.
  std::string machine;
  std::optional<int> cores, pcie_gen, pcie_lanes;
  std::optional<double> memory_gib, memory_bw_gbps;
};

/// Who set the engine up for the run (row key `deployment`, this project's extension): aic_generator,
/// AIConfigurator's generator (its benchmark deployments: the rows whose source names the container image or the
/// deployment database dump), whose engine limits the validator applies (aic_benchmark.h); sweep, AIConfigurator's
/// older per-version sweeps (settings the CSV does not give: the engines' defaults); null (unstated): the row's
/// source did not say or it is not an AIConfigurator row.
enum class Deployment { unstated, aic_generator, sweep };

struct ServingRun {
  std::string id, source, url, trust, engine, notes;
  Deployment deployment = Deployment::unstated;
  std::optional<std::string> engine_version;
  // engine_build_date (optional, 'YYYY-MM-DD'): the engine build's date or, where the source gives none, the date
  // the source published the run (the build is no later). The validator compares it with the dates engine
  // changes landed (serving::cuda_graphs_off_with_splits).
  std::optional<std::string> engine_build_date;
  int line = 0;
  ModelDesc model;
  std::string model_name;
  std::string weights_precision, moe_weights_precision;  // schema names
  std::optional<std::string> kv_precision;
  std::optional<double> weights_gib;
  std::string gpu;
  int gpus = 1;
  std::optional<int> gpus_per_node;
  std::optional<ServingHost> host;
  std::string machine;  // system.machine: an offload-machine profile (hwprofiles/machines/); "" when absent
  serving::Mode mode = serving::Mode::aggregated;
  serving::WorkerPlan agg, prefill, decode;  // agg.batch = plan.max_batch
  std::optional<ServingOffload> offload;
  std::optional<int> input_len, output_len, concurrency, batch_size, context_depth;
  std::optional<double> request_rate;
  std::string dataset;  // "" when null
  // measured
  std::optional<double> ttft_ms, tpot_ms, itl_ms, prefill_tokens_per_s, decode_tokens_per_s,
      throughput_tokens_per_s, gpu_memory_gib;
  std::string throughput_scope;
};

/// Parses a serving-runs file. hf_config paths are read relative to the directory of `filename`.
std::vector<ServingRun> parse_serving_runs(std::string_view text, const std::string& filename);
std::vector<ServingRun> load_serving_runs(const std::string& path);

}  // namespace shardplan::io
