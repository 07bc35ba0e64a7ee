// shardplan serve predict: one serving plan for one model on one system under one workload.
#include <cstdio>
#include <iostream>
#include <map>

#include "apps/serve_command.h"
#include "apps/serve_shared_flags.h"
#include "apps/serve_spec_flags.h"
#include "apps/serve_workload_flags.h"
#include "apps/text.h"
#include "modeler/io/model_io.h"
#include "modeler/io/serving_json.h"
#include "modeler/io/system_io.h"
#include "modeler/problems.h"
#include "modeler/serving/serve_predict.h"
#include "modeler/serving/serve_search.h"

namespace shardplan::cli {

namespace {

using namespace serving;

/// "workers=1,tp=2,attention_dp=4,moe_ep=8,batch=64" -> a worker plan; every key named, each at most once.
WorkerPlan parse_worker(const std::string& flag, const std::string& spec) {
  WorkerPlan w;
  std::map<std::string, int> v;
  for (const std::string& kv : split_commas(spec)) {
    const auto eq = kv.find('=');
    if (eq == std::string::npos) throw ConfigError(flag + ": expected key=value, got '" + kv + "'");
    const std::string k = kv.substr(0, eq);
    int n = 0;
    try {
      size_t used = 0;
      n = std::stoi(kv.substr(eq + 1), &used);
      if (used != kv.size() - eq - 1) throw std::invalid_argument("trailing");
    } catch (const std::exception&) {
      throw ConfigError(flag + ": " + k + " must be an integer, got '" + kv.substr(eq + 1) + "'");
    }
    if (n < 1) throw ConfigError(flag + ": " + k + " must be at least 1");
    if (k != "workers" && k != "tp" && k != "pp" && k != "attention_dp" && k != "moe_tp" && k != "moe_ep" &&
        k != "batch")
      throw ConfigError(flag + ": unknown key '" + k + "' (workers tp pp attention_dp moe_tp moe_ep batch)");
    v[k] = n;
  }
  w.workers = v.count("workers") ? v["workers"] : 1;
  w.tp = v.count("tp") ? v["tp"] : 1;
  w.pp = v.count("pp") ? v["pp"] : 1;
  w.attention_dp = v.count("attention_dp") ? v["attention_dp"] : 1;
  const int group = w.tp * w.attention_dp;
  w.moe_ep = v.count("moe_ep") ? v["moe_ep"] : (v.count("moe_tp") ? group / v["moe_tp"] : 1);
  w.moe_tp = v.count("moe_tp") ? v["moe_tp"] : std::max(1, group / w.moe_ep);
  if (v.count("batch")) w.batch = v["batch"];
  return w;
}

WeightFormat parse_format(const std::string& flag, const std::string& s) {
  const auto f = parse_weight_format(s);
  if (!f) throw ConfigError(flag + ": unknown format '" + s + "' (one of: " + weight_format_names() + ")");
  return *f;
}

class ServePredictCommand final : public Command {
 public:
  CLI::App* setup(CLI::App& app) override {
    CLI::App* sub = app.add_subcommand("predict", "TTFT, TPOT, tokens/s, batch, KV capacity and GPU memory of one "
                                                  "serving plan");
    sub->add_option("--model", model_, "model name from models/, a YAML file or a Hugging Face config.json")
        ->required();
    sub->add_option("--gpu", gpu_, "GPU profile name (builds its standard node and network)");
    sub->add_option("--system", system_, "cluster profile name or file (instead of --gpu)");
    sub->add_option("--gpus", gpus_, "GPUs in the system (default: what the plan uses)");
    sub->add_option("--gpus-per-node", gpus_per_node_, "GPUs per node (default: the GPU's standard node)");
    sub->add_option("--engine", engine_, "vllm | sglang | trtllm | llama.cpp (default vllm): sets the memory "
                                         "rule and the step token budget")->capture_default_str();
    sub->add_option("--weights", weights_, std::string("weight format (default bf16): ") + weight_format_names())
        ->capture_default_str();
    sub->add_option("--moe-weights", moe_weights_, "routed-expert weight format (default: --weights)");
    sub->add_option("--kv", kv_, "KV-cache format: bf16 fp16 fp8 q8_0 q4_0 (default bf16)")->capture_default_str();
    sub->add_option("--tp", agg_.tp, "tensor parallel size (default 1)");
    sub->add_option("--pp", agg_.pp, "pipeline stages (default 1)");
    sub->add_option("--attention-dp", agg_.attention_dp, "attention data-parallel ranks (default 1)");
    sub->add_option("--moe-tp", moe_tp_, "MoE tensor parallel (default tp x attention_dp / moe_ep)");
    sub->add_option("--moe-ep", moe_ep_, "MoE expert parallel (default 1)");
    sub->add_option("--replicas", agg_.workers, "aggregated workers (default 1)");
    sub->add_option("--prefill", prefill_, "disaggregated prefill workers: workers=N,tp=..,pp=..,attention_dp=..,"
                                           "moe_tp=..,moe_ep=..,batch=.. (needs --decode)");
    sub->add_option("--decode", decode_, "disaggregated decode workers, same keys (needs --prefill)");
    CLI::Option* in_len =
        sub->add_option("--input-len", wl_.input_len, "prompt tokens per request (default 1024)")->capture_default_str();
    CLI::Option* out_len = sub->add_option("--output-len", wl_.output_len, "generated tokens per request (default 128)")
                               ->capture_default_str();
    CLI::Option* conc = sub->add_option("--concurrency", wl_.concurrency, "requests in flight, closed loop (default 1)")
                            ->capture_default_str();
    add_workload_flags(sub, &open_, conc, in_len, out_len);
    sub->add_option("--batch-size", static_batch_, "static batch instead of a closed loop (trtllm-bench static, "
                                                   "llama-bench)");
    sub->add_option("--context-depth", wl_.context_depth, "tokens already in the KV cache (default 0)");
    sub->add_option("--rounds", wl_.rounds, "simulate the closed-loop benchmark step by step: every client starts "
                                            "at once and sends N requests (AIConfigurator's benchmark: 20); "
                                            "default 0: the steady state of spread arrivals")
        ->check(CLI::Range(0, 1000));
    sub->add_option("--max-num-tokens", max_num_tokens_, "tokens per scheduler step (default: the engine's: "
                                                         "TRT-LLM 8192; vLLM 8192, 2048 below 70 GiB or on "
                                                         "A100; SGLang 8192, 16384 from 160 GiB, 4096 below 60, "
                                                         "2048 below 35; llama.cpp 512)");
    sub->add_flag("--mixed-chunk", mixed_chunk_, "SGLang --enable-mixed-chunk: decodes ride in prefill batches "
                                                 "(default off, SGLang's default: decoding pauses for them)");
    sub->add_option("--offload", offload_.mode, "layer | tensor: CPU offload on one GPU (needs --host); prints the "
                                                "best -ngl split and the tensor placement at equal VRAM");
    sub->add_option("--host", offload_.host, "host profile (hwprofiles/hosts) for --offload");
    sub->add_option("--vram-gib", offload_.vram_gib, "VRAM to plan offload for (default: the GPU's capacity)");
    add_shared_serve_flags(sub, &shared_, false);
    add_spec_flags(sub, &spec_);
    sub->add_flag("--json", json_, "print JSON");
    return sub;
  }

  int run() override {
    const auto engine = parse_engine(engine_);
    if (!engine || engine_ == "other" || engine_ == "flexgen" || engine_ == "hf-accelerate")
      throw ConfigError("--engine: unknown engine '" + engine_ + "' (vllm sglang trtllm llama.cpp)");
    if (gpu_.empty() == system_.empty()) throw ConfigError("give exactly one of --gpu and --system");
    if (prefill_.empty() != decode_.empty()) throw ConfigError("--prefill and --decode go together");
    const auto kv = parse_kv_bytes(kv_);
    if (!kv) throw ConfigError("--kv: unknown format '" + kv_ + "' (bf16 fp16 fp8 q8_0 q4_0)");
    Precision prec;
    prec.weights = parse_format("--weights", weights_);
    prec.moe_weights = moe_weights_.empty() ? prec.weights : parse_format("--moe-weights", moe_weights_);
    prec.kv_bytes = *kv;
    const ModelDesc model = io::load_model(model_, true);
    // A config.json whose checkpoint is block-scaled fp8 decides what --weights fp8 runs (formats.h).
    weights_note_ = apply_checkpoint_format(&prec.weights, &prec.moe_weights, model.checkpoint_fp8_block);
    ServingPlan plan;
    if (!prefill_.empty()) {
      plan.mode = Mode::disaggregated;
      plan.prefill = parse_worker("--prefill", prefill_);
      plan.decode = parse_worker("--decode", decode_);
    } else {
      const int group = agg_.tp * agg_.attention_dp;
      agg_.moe_ep = moe_ep_ > 0 ? moe_ep_ : (moe_tp_ > 0 ? group / moe_tp_ : 1);
      agg_.moe_tp = moe_tp_ > 0 ? moe_tp_ : std::max(1, group / agg_.moe_ep);
      if (shared_.max_batch > 0) agg_.batch = shared_.max_batch;
      plan.agg = agg_;
    }
    plan.max_num_tokens = max_num_tokens_;
    if (mixed_chunk_ && *engine != Engine::sglang)
      throw ConfigError("--mixed-chunk is an SGLang option; --engine is " + engine_);
    plan.mixed_chunk = mixed_chunk_;
    const int used = plan.mode == Mode::aggregated
                         ? plan.agg.gpus() * plan.agg.workers
                         : plan.prefill.gpus() * plan.prefill.workers + plan.decode.gpus() * plan.decode.workers;
    const int gpus = gpus_ > 0 ? gpus_ : used;
    if (gpus < used) throw Infeasible("the plan uses " + num(used) + " GPUs, the system has " + num(gpus));
    System sys;
    if (!system_.empty()) {
      sys = io::load_system(system_, gpus);
    } else {
      io::StandardSystemOptions so;
      so.gpus = gpus;
      so.gpus_per_node = gpus_per_node_;
      sys = io::standard_system(io::load_gpu_profile(gpu_), so);
    }
    const std::vector<Transform> transforms = parse_transforms(shared_);
    ServingModel sm = make_serving_model(model, prec, transforms);
    sm.engine = engine_step(*engine, "", model);  // the engine's current release
    check_transforms_run(sm, sys.gpu);
    const SpecSetup spec = parse_spec_flags(spec_, sm, plan.mode == Mode::aggregated ? plan.agg : plan.decode,
                                            *engine);
    if (!offload_.mode.empty()) {
      if (spec.spec.enabled()) throw ConfigError("--offload: not modelled with --spec");
      if (!open_.request_rate.empty()) throw ConfigError("--offload: not modelled with --request-rate");
      if (!transforms.empty())
        throw ConfigError("--offload: not modelled with --sparsity or --low-rank (the CPU kernels have no sparse or "
                          "factorised variant here)");
      offload_.input_len = wl_.input_len;
      offload_.output_len = wl_.output_len;
      offload_.context_depth = wl_.context_depth;
      offload_.batch = static_batch_ > 0 ? static_batch_ : wl_.concurrency;
      offload_.json = json_;
      return run_offload(sm, sys.gpu, offload_);
    }
    ServeInputs in;
    in.model = &sm;
    in.system = &sys;
    in.engine = *engine;
    in.plan = plan;
    in.workload = wl_;
    in.workload.prefix_hit = shared_.prefix_hit;
    in.static_batch = static_batch_;
    in.memory.fraction = shared_.mem_fraction;
    in.memory.max_num_tokens = max_num_tokens_;
    in.spec = spec.spec;
    in.draft = spec.draft.get();
    const OpenLoopWorkload open = make_open_loop_workload(open_, wl_.input_len, wl_.output_len);
    if (!open_.request_rate.empty()) {
      if (wl_.rounds > 0) throw ConfigError("--rounds is the closed loop's; --request-rate is an open loop");
      const OpenLoopPrediction op = predict_open_loop(in, open);
      if (json_) {
        nlohmann::json j = open_loop_json(open, open_, op);
        j["context"] = {{"model", model_}, {"system", system_.empty() ? gpu_ : system_},
                        {"engine", engine_name(*engine)}, {"weights", weights_}, {"kv", kv_}};
        std::cout << j.dump(2) << "\n";
        return 0;
      }
      std::printf("serve predict: %s on %d x %s, %s, weights %s, kv %s\n",
                  model.name.empty() ? model_.c_str() : model.name.c_str(), plan.agg.gpus() * plan.agg.workers,
                  sys.gpu.name.c_str(), engine_name(*engine).c_str(), weights_.c_str(), kv_.c_str());
      print_open_loop(open, open_, op);
      return 0;
    }
    if (spec.spec.enabled() && wl_.rounds > 0)
      throw ConfigError("--rounds: the step-by-step closed loop does not model --spec; drop --rounds for the steady "
                        "state");
    const ServePrediction p = serve_predict(in);
    const std::string spec_args = spec_engine_args(*engine, spec.spec, spec.draft_name);
    if (json_) {
      io::ServeJsonContext ctx{model_, system_.empty() ? gpu_ : system_, engine_name(*engine), weights_, kv_,
                               shared_.sparsity, shared_.low_rank, weights_note_};
      nlohmann::json j = io::serve_predict_json(ctx, in, p);
      if (spec.spec.enabled()) {
        j["speculative"]["draft"] = spec.draft_name.empty() ? nlohmann::json(nullptr) : nlohmann::json(spec.draft_name);
        j["speculative"]["engine_args"] = spec_args;
      }
      std::cout << j.dump(2) << "\n";
      return 0;
    }
    print(model, sys, in, p);
    if (spec.spec.enabled())
      std::printf("speculative decoding: %s, k %d, %.3f tokens per step per sequence (TPOT = decode step / that)%s%s\n",
                  spec_method_name(spec.spec.method).c_str(), spec.spec.tokens, p.tokens_per_step,
                  spec_args.empty() ? "" : "\n  engine args: ", spec_args.c_str());
    return 0;
  }

 private:
  void print(const ModelDesc& m, const System& sys, const ServeInputs& in, const ServePrediction& p) const {
    std::printf("serve predict: %s on %d x %s, %s, weights %s, kv %s\n",
                m.name.empty() ? model_.c_str() : m.name.c_str(), p.gpus, sys.gpu.name.c_str(),
                engine_name(in.engine).c_str(), weights_.c_str(), kv_.c_str());
    if (!weights_note_.empty()) std::printf("weights: %s\n", weights_note_.c_str());
    auto worker = [](const WorkerPlan& w) {
      return "workers " + num(w.workers) + " x (tp " + num(w.tp) + ", pp " + num(w.pp) + ", attention_dp " +
             num(w.attention_dp) + ", moe_tp " + num(w.moe_tp) + ", moe_ep " + num(w.moe_ep) + ")";
    };
    if (in.plan.mode == Mode::aggregated) std::printf("plan: aggregated, %s\n", worker(in.plan.agg).c_str());
    else std::printf("plan: disaggregated, prefill %s; decode %s\n", worker(in.plan.prefill).c_str(),
                     worker(in.plan.decode).c_str());
    if (const std::string t = transforms_note(shared_); !t.empty())
      std::printf("transforms: %s (bytes and FLOPs only; accuracy is not modelled)\n", t.c_str());
    std::printf("workload: input %d, output %d, %s\n\n", in.workload.input_len, in.workload.output_len,
                in.static_batch > 0 ? ("static batch " + num(in.static_batch)).c_str()
                                    : ("concurrency " + num(in.workload.concurrency)).c_str());
    std::printf("latency\n");
    std::printf("  TTFT                       %10.2f ms\n", to_ms(p.ttft));
    std::printf("  TPOT                       %10.2f ms   (excludes the first token: (e2e - TTFT) / (output - 1))\n",
                to_ms(p.tpot));
    std::printf("throughput\n");
    std::printf("  per request                %10.1f tok/s (decode)\n", p.request_tokens_per_s);
    std::printf("  aggregate output           %10.1f tok/s (%.1f per GPU; prompt + output %.1f per GPU)\n",
                p.output_tokens_per_s, p.output_tokens_per_s_per_gpu, p.total_tokens_per_s_per_gpu);
    std::printf("  one prompt (prefill)       %10.1f tok/s\n", p.prefill_tokens_per_s);
    std::printf("  decode, summed over batch  %10.1f tok/s\n", p.decode_tokens_per_s);
    std::printf("batch and KV cache\n");
    std::printf("  steady-state batch         %10.1f sequences per attention-DP rank (capped by %s)\n", p.batch,
                p.batch_cap.c_str());
    std::printf("  KV-cache capacity          %10.0f tokens per attention-DP rank (each GPU holds its share of every "
                "token) = %.1f sequences of %d tokens\n", p.kv_tokens,
                p.kv_max_batch, in.workload.context_depth + in.workload.input_len + in.workload.output_len);
    auto mem = [](const char* what, const MemoryReport& r) {
      std::printf("memory per GPU (%s): %s\n", what, r.rule.c_str());
      std::printf("  weights %.2f GiB, activations %.2f GiB, KV cache %.2f GiB, runtime %.2f GiB: total %.2f of %.2f "
                  "GiB (fraction %.2f)%s\n",
                  to_GiB(r.weights), to_GiB(r.activations), to_GiB(r.kv_cache), to_GiB(r.other), to_GiB(r.total),
                  to_GiB(r.capacity), r.fraction, r.fits ? "" : "  DOES NOT FIT");
    };
    if (p.kv_transfer) {
      const KvTransfer& t = *p.kv_transfer;
      std::printf("KV transfer (prefill -> decode worker, per request): %s\n", t.placement.c_str());
      std::printf(
          "  %.1f MiB moved (%.1f MiB of cache; %d prefill GPUs send %.1f MiB each, %d decode GPUs receive "
          "%.1f MiB each) at %.1f GB/s per GPU: %.3f ms alone, %.3f ms added to TTFT\n",
          t.shards.moved.v / kMiB, t.shards.unique.v / kMiB, t.shards.senders, t.shards.send_per_gpu.v / kMiB,
          t.shards.receivers, t.shards.recv_per_gpu.v / kMiB, to_GBps(t.bandwidth), to_ms(t.time), to_ms(t.exposed));
    }
    if (in.plan.mode == Mode::disaggregated) mem("prefill worker", p.prefill_memory);
    mem(in.plan.mode == Mode::disaggregated ? "decode worker" : "worker", p.memory);
    auto step = [](const char* what, const StepTime& s) {
      std::printf("  %-12s %8.3f ms = linear %.3f + attention %.3f + moe %.3f + comm %.3f + other %.3f\n", what,
                  to_ms(s.total), to_ms(s.linear), to_ms(s.attention), to_ms(s.moe), to_ms(s.comm), to_ms(s.other));
    };
    std::printf("step times\n");
    step("prefill step", p.prefill_step);
    step("decode step", p.decode_step);
  }

  std::string model_, gpu_, system_, engine_ = "vllm", weights_ = "bf16", moe_weights_, kv_ = "bf16";
  std::string prefill_, decode_;
  std::string weights_note_;  // what the checkpoint's quantisation made of --weights ("" when nothing)
  int gpus_ = 0, gpus_per_node_ = 0, moe_tp_ = 0, moe_ep_ = 0, static_batch_ = 0, max_num_tokens_ = 0;
  SharedServeFlags shared_;
  WorkerPlan agg_;
  Workload wl_;
  OffloadRequest offload_;
  SpecFlags spec_;
  WorkloadFlags open_;
  bool json_ = false, mixed_chunk_ = false;
};

}  // namespace

std::unique_ptr<Command> make_serve_predict_command() { return std::make_unique<ServePredictCommand>(); }

}  // namespace shardplan::cli
