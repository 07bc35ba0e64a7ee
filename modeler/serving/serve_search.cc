#include "modeler/serving/serve_search.h"

#include <algorithm>

namespace shardplan::serving {

const char* missed_target(const ServePrediction& p, const SearchTargets& t) {
  if (t.ttft_ms > 0 && to_ms(p.ttft) > t.ttft_ms) return "ttft_target";
  if (t.tpot_ms > 0 && to_ms(p.tpot) > t.tpot_ms) return "tpot_target";
  return "";
}

std::vector<WorkerPlan> worker_shapes(const ModelDesc& m, const ServeSearchSpace& space, const std::vector<int>& pps) {
  const bool moe = m.moe.has_value();
  std::vector<WorkerPlan> out;
  for (int tp : space.tp)
    for (int pp : pps)
      for (int adp : moe ? space.attention_dp : std::vector<int>{1}) {
        std::vector<std::pair<int, int>> splits = {{tp * adp, 1}};
        if (moe) splits.push_back({1, tp * adp});
        for (const auto& [moe_tp, moe_ep] : splits) {
          if (moe && moe_ep == 1 && adp > 1) continue;  // attention DP runs with expert parallelism
          WorkerPlan w;
          w.tp = tp;
          w.pp = pp;
          w.attention_dp = adp;
          w.moe_tp = moe ? moe_tp : tp;
          w.moe_ep = moe ? moe_ep : 1;
          out.push_back(w);
        }
      }
  return out;
}

ServeSearchResult serve_search(const ServeInputs& base, const ServeSearchSpace& space, const SearchTargets& t) {
  ServeSearchResult res;
  const ModelDesc& m = base.model->model;
  for (const WorkerPlan& shape : worker_shapes(m, space, space.pp)) {
    const int adp = shape.attention_dp;
    const int size = shape.tp * shape.pp * adp;
    if (size > space.gpus || space.gpus % size != 0) {
      ++res.rejected["gpus_divide"];
      continue;
    }
    for (int b : space.batch) {
      ServeInputs in = base;
      WorkerPlan w = shape;
      w.workers = space.gpus / size;
      w.batch = b;
      in.plan = ServingPlan{};
      in.plan.agg = w;
      in.plan.max_num_tokens = base.plan.max_num_tokens;
      in.static_batch = 0;
      in.workload.concurrency = w.workers * adp * b;
      ++res.evaluated;
      Problems p = check_plan(m, w);
      if (p.empty()) p = check_spec(in.spec, m, in.draft ? &in.draft->model : nullptr, w);  // draft's tp
      if (!p.empty()) {
        ++res.rejected[p.front().code];
        break;  // the batch does not change validity
      }
      ServePrediction pred;
      try {
        pred = serve_predict(in);
      } catch (const Infeasible&) {
        ++res.rejected["oom"];
        break;
      }
      if (pred.batch < b) {
        ++res.rejected["kv_cache_caps_batch"];
        continue;
      }
      if (const char* miss = missed_target(pred, t); *miss) {
        ++res.rejected[miss];
        continue;
      }
      res.ranked.push_back({in.plan, in.workload.concurrency, pred});
    }
  }
  std::sort(res.ranked.begin(), res.ranked.end(), [](const SearchCandidate& a, const SearchCandidate& b) {
    return a.prediction.output_tokens_per_s_per_gpu > b.prediction.output_tokens_per_s_per_gpu;
  });
  return res;
}

namespace {
std::string plan_args(Engine e, const std::string& model, const WorkerPlan& w, int kv_fp8) {
  const std::string b = w.batch ? std::to_string(*w.batch) : "";
  const int group = w.tp * w.attention_dp;
  switch (e) {
    case Engine::vllm: {
      std::string s = "vllm serve " + model + " --tensor-parallel-size " + std::to_string(w.tp) +
                      " --pipeline-parallel-size " + std::to_string(w.pp);
      if (w.attention_dp > 1) s += " --data-parallel-size " + std::to_string(w.attention_dp);
      if (w.moe_ep > 1) s += " --enable-expert-parallel";
      if (!b.empty()) s += " --max-num-seqs " + std::to_string(*w.batch * w.attention_dp);
      if (kv_fp8) s += " --kv-cache-dtype fp8";
      return s;
    }
    case Engine::sglang: {
      std::string s = "python -m sglang.launch_server --model-path " + model + " --tp " + std::to_string(group);
      if (w.pp > 1) s += " --pp-size " + std::to_string(w.pp);
      if (w.attention_dp > 1) s += " --dp " + std::to_string(w.attention_dp) + " --enable-dp-attention";
      if (w.moe_ep > 1) s += " --ep-size " + std::to_string(w.moe_ep);
      if (!b.empty()) s += " --max-running-requests " + std::to_string(*w.batch * w.attention_dp);
      if (kv_fp8) s += " --kv-cache-dtype fp8_e4m3";
      return s;
    }
    case Engine::trtllm: {
      std::string s =
          "trtllm-serve " + model + " --tp_size " + std::to_string(group) + " --pp_size " + std::to_string(w.pp);
      if (w.moe_ep > 1) s += " --ep_size " + std::to_string(w.moe_ep);
      if (!b.empty()) s += " --max_batch_size " + std::to_string(*w.batch);
      if (w.attention_dp > 1) s += "  (extra_llm_api_options: enable_attention_dp: true)";
      return s;
    }
    case Engine::llamacpp:
      return "llama-server -m " + model + " -ngl 999 -np " + b;
    case Engine::other:
      return "";
  }
  return "";
}

// The memory fraction and prefix cache as each engine's launcher names them:
// - vLLM: --gpu-memory-utilization, --enable-prefix-caching (vllm-project/vllm vllm/engine/arg_utils.py,
//   EngineArgs.gpu_memory_utilization / enable_prefix_caching; stated even where the release turns it on).
// - SGLang: --mem-fraction-static (python/sglang/srt/server_args.py, mem_fraction_static); the radix (prefix)
//   cache is on unless --disable-radix-cache (same file, disable_radix_cache = False), so no flag.
// - TRT-LLM: --kv_cache_free_gpu_memory_fraction (NVIDIA/TensorRT-LLM@00209af149e7774406881a37283dce303571eb11:
//   tensorrt_llm/commands/serve.py, an alias of --free_gpu_memory_fraction, KvCacheConfig's fraction); KV block
//   reuse is KvCacheConfig.enable_block_reuse, on by default (tensorrt_llm/llmapi/llm_args.py), so no flag.
std::string extra_args(Engine e, const LaunchExtras& x) {
  std::string s;
  const std::string f = x.mem_fraction > 0 ? num(x.mem_fraction) : "";
  switch (e) {
    case Engine::vllm:
      if (!f.empty()) s += " --gpu-memory-utilization " + f;
      if (x.prefix_cache) s += " --enable-prefix-caching";
      break;
    case Engine::sglang:
      if (!f.empty()) s += " --mem-fraction-static " + f;
      break;
    case Engine::trtllm:
      if (!f.empty()) s += " --kv_cache_free_gpu_memory_fraction " + f;
      break;
    case Engine::llamacpp:
    case Engine::other:
      break;
  }
  return s;
}
}  // namespace

std::string engine_args(Engine e, const std::string& model, const WorkerPlan& w, int kv_fp8, const SpecDecode& spec,
                        const std::string& draft, const LaunchExtras& x) {
  std::string s = plan_args(e, model, w, kv_fp8);
  // TRT-LLM's attention-DP note ends the command in parentheses: the flags go before it.
  const size_t note = s.find("  (");
  const std::string tail = note == std::string::npos ? "" : s.substr(note);
  if (note != std::string::npos) s.erase(note);
  if (!s.empty()) s += extra_args(e, x);
  const std::string sd = spec_engine_args(e, spec, draft);
  if (!s.empty() && !sd.empty()) s += " " + sd;
  return s + tail;
}

}  // namespace shardplan::serving
