#include "modeler/serving/disagg_search.h"

#include <algorithm>
#include <cmath>

#include "modeler/serving/step_time.h"

namespace shardplan::serving {

int prefill_batch(int max_num_tokens, int input_len) {
  return std::max(1, input_len > 0 ? max_num_tokens / input_len : 1);
}

namespace {

struct PrefillShape {
  WorkerPlan w;
  double step_s = 0;          // one prefill step of `batch` prompts per attention-DP rank
  double worker_rps = 0;      // requests/s one worker takes
  double rps_per_gpu = 0;
};

// A dominates B: no slower step, no fewer requests/s per GPU, a worker no larger that divides B's size (so any
// B pool is matched by an A pool on no more GPUs), and strictly better somewhere (index breaks exact ties).
bool dominates(const PrefillShape& a, size_t ia, const PrefillShape& b, size_t ib) {
  const int sa = a.w.gpus(), sb = b.w.gpus();
  if (sa > sb || sb % sa != 0 || a.step_s > b.step_s || a.rps_per_gpu < b.rps_per_gpu) return false;
  const bool strict = sa < sb || a.step_s < b.step_s || a.rps_per_gpu > b.rps_per_gpu;
  return strict || ia < ib;
}

}  // namespace

DisaggSearchResult disagg_search(const ServeInputs& base, const ServeSearchSpace& space, const SearchTargets& t) {
  DisaggSearchResult res;
  const ModelDesc& m = base.model->model;
  const Workload& wl = base.workload;
  const int budget =
      base.plan.max_num_tokens > 0 ? base.plan.max_num_tokens : default_max_num_tokens(base.engine, base.system->gpu);
  const int pb = prefill_batch(budget, wl.input_len);
  const double in_len = wl.input_len * (1.0 - wl.prefix_hit), out_len = wl.output_len;
  const double prefix = wl.context_depth + wl.input_len * wl.prefix_hit;
  const double seq = wl.context_depth + wl.input_len + wl.output_len;

  // Prefill pool: shapes that fit in memory with their step time (the load serve_predict's disaggregated mode
  // gives a prefill step), then the dominance pruning.
  std::vector<PrefillShape> pre;
  for (WorkerPlan w : worker_shapes(m, space, space.pp)) {
    ++res.prefill_shapes;
    w.batch = pb;
    const Problems p = check_plan(m, w);
    if (!p.empty()) {
      ++res.rejected[p.front().code];
      continue;
    }
    if (w.gpus() >= space.gpus) {  // no GPU left for a decode worker
      ++res.rejected["pools_exceed_gpus"];
      continue;
    }
    if (!engine_memory(*base.model, base.system->gpu, w, base.engine, base.memory, seq).fits) {
      ++res.rejected["oom"];
      continue;
    }
    StepLoad pl;
    pl.prefill_tokens = pb * in_len;
    pl.prefill_keys = prefix + in_len / 2.0;
    pl.prefill_seqs = pb;
    PrefillShape s;
    s.w = w;
    s.step_s = step_time(*base.model, *base.system, w, pl).total.v;
    s.worker_rps = w.attention_dp * pb / s.step_s;
    s.rps_per_gpu = s.worker_rps / w.gpus();
    pre.push_back(s);
  }
  std::vector<PrefillShape> kept;
  for (size_t i = 0; i < pre.size(); ++i) {
    bool dominated = false;
    for (size_t j = 0; j < pre.size() && !dominated; ++j) dominated = j != i && dominates(pre[j], j, pre[i], i);
    if (!dominated) kept.push_back(pre[i]);
  }
  res.prefill_shapes_kept = static_cast<int>(kept.size());

  // Decode pool: pp 1, the batch ladder; for each y, the fewest prefill workers that keep up.
  for (WorkerPlan d : worker_shapes(m, space, {1})) {
    const Problems p = check_plan(m, d);
    if (!p.empty()) {
      ++res.rejected[p.front().code];
      continue;
    }
    bool pairs = false;  // some kept prefill shape fits beside one decode worker
    for (const PrefillShape& s : kept) pairs = pairs || d.gpus() + s.w.gpus() <= space.gpus;
    if (!pairs) {
      if (!kept.empty()) ++res.rejected["pools_exceed_gpus"];
      continue;
    }
    bool oom = false;
    for (int b : space.batch) {
      if (oom) break;
      d.batch = b;
      StepLoad dl;
      dl.decode_seqs = b;
      dl.decode_ctx = prefix + wl.input_len + out_len / 2.0;
      const double td_full = step_time(*base.model, *base.system, d, dl).total.v;
      bool kv_capped = false;
      for (const PrefillShape& s : kept) {
        if (oom || kv_capped) break;
        const int ymax = (space.gpus - s.w.gpus()) / d.gpus();
        for (int y = 1; y <= ymax && !oom && !kv_capped; ++y) {
          const double need = 1.0 * y * d.attention_dp * b / (s.step_s + std::max(0.0, out_len - 1.0) * td_full);
          int x = std::max(1, static_cast<int>(std::ceil(need / s.worker_rps - 1e-9)));
          while (true) {
            if (x * s.w.gpus() + y * d.gpus() > space.gpus) {
              ++res.rejected["prefill_cannot_keep_up"];
              break;
            }
            ServeInputs in = base;
            in.plan = ServingPlan{};
            in.plan.mode = Mode::disaggregated;
            in.plan.max_num_tokens = base.plan.max_num_tokens;
            in.plan.prefill = s.w;
            in.plan.prefill.workers = x;
            in.plan.decode = d;
            in.plan.decode.workers = y;
            in.static_batch = 0;
            in.workload.concurrency = y * d.attention_dp * b;
            ++res.evaluated;
            ServePrediction pred;
            try {
              pred = serve_predict(in);
            } catch (const Infeasible&) {
              ++res.rejected["oom"];  // the decode worker: the prefill shapes were checked above
              oom = true;
              break;
            }
            if (pred.kv_max_batch < b) {
              ++res.rejected["kv_cache_caps_batch"];  // the same for every y and prefill shape
              kv_capped = true;
              break;
            }
            const double capacity = x * s.w.attention_dp * pb / pred.prefill_step.total.v;
            const double rate = pred.output_tokens_per_s / out_len;
            if (rate >= capacity * (1 - 1e-9)) {  // the prefill pool is the bottleneck: one more worker
              ++res.prefill_stepped;
              ++x;
              continue;
            }
            if (const char* miss = missed_target(pred, t); *miss) {
              ++res.rejected[miss];
              break;
            }
            DisaggCandidate c;
            c.plan = in.plan;
            c.concurrency = in.workload.concurrency;
            c.gpus_used = pred.gpus;
            c.idle_gpus = space.gpus - pred.gpus;
            c.prefill_capacity_rps = capacity;
            c.request_rate_rps = rate;
            c.output_tokens_per_s_per_gpu_budget = pred.output_tokens_per_s / space.gpus;
            c.prediction = pred;
            res.ranked.push_back(c);
            break;
          }
        }
      }
    }
  }
  std::sort(res.ranked.begin(), res.ranked.end(), [](const DisaggCandidate& a, const DisaggCandidate& b) {
    if (a.output_tokens_per_s_per_gpu_budget != b.output_tokens_per_s_per_gpu_budget)
      return a.output_tokens_per_s_per_gpu_budget > b.output_tokens_per_s_per_gpu_budget;
    return a.gpus_used < b.gpus_used;
  });
  return res;
}

DisaggLaunch disagg_launch(Engine e, int prefill_workers, int decode_workers) {
  DisaggLaunch l;
  const std::string x = std::to_string(prefill_workers), y = std::to_string(decode_workers);
  switch (e) {
    case Engine::vllm:
      // vllm-project/vllm@029e67cd28a384cbe019ce4427b26d93028ae7d3:docs/features/nixl_connector_usage.md
      // (multi-instance setup: kv_producer on prefillers, kv_consumer on decoders; the proxy it names is a toy
      // in vLLM's tests, so a production router is the user's choice).
      l.prefill_flags = R"( --kv-transfer-config '{"kv_connector":"NixlConnector","kv_role":"kv_producer"}')";
      l.decode_flags = R"( --kv-transfer-config '{"kv_connector":"NixlConnector","kv_role":"kv_consumer"}')";
      l.router = "python tests/v1/kv_connector/nixl_integration/toy_proxy_server.py --prefiller-hosts <" + x +
                 " prefill hosts> --prefiller-ports <ports> --decoder-hosts <" + y +
                 " decode hosts> --decoder-ports <ports>  (vLLM's toy proxy, from its source tree)";
      return l;
    case Engine::sglang:
      // sgl-project/sglang@cccb65463e6cd3fcb1af70f8c536e7b61c4eb68c:docs/advanced_features/pd_disaggregation.md
      // (--disaggregation-mode prefill|decode; Mooncake by default, --disaggregation-transfer-backend nixl).
      l.prefill_flags = " --disaggregation-mode prefill";
      l.decode_flags = " --disaggregation-mode decode";
      l.router = "python -m sglang_router.launch_router --pd-disaggregation --prefill <" + x +
                 " prefill URLs> --decode <" + y + " decode URLs>";
      return l;
    case Engine::trtllm:
      // NVIDIA/TensorRT-LLM@c3c3d76e28c57ee23adc3458fc6aca87300c8c21:examples/disaggregated/README.md (workers
      // take cache_transceiver_config in --extra_llm_api_options, context servers with the overlap scheduler
      // off; the router is `trtllm-serve disaggregated` over context_servers / generation_servers).
      l.prefill_flags = " --extra_llm_api_options ctx.yaml  (ctx.yaml: disable_overlap_scheduler: true, "
                        "cache_transceiver_config: {backend: DEFAULT})";
      l.decode_flags = " --extra_llm_api_options gen.yaml  (gen.yaml: cache_transceiver_config: {backend: DEFAULT})";
      l.router = "trtllm-serve disaggregated -c disagg.yaml  (disagg.yaml: context_servers: {num_instances: " + x +
                 ", urls: [...]}, generation_servers: {num_instances: " + y + ", urls: [...]})";
      return l;
    case Engine::llamacpp:
    case Engine::other: break;
  }
  return l;
}

}  // namespace shardplan::serving
