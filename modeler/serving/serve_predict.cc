#include "modeler/serving/serve_predict.h"

#include "modeler/serving/closed_loop.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

namespace shardplan::serving {

Problems check_plan(const ModelDesc& m, const WorkerPlan& w) {
  Problems p;
  auto bad = [&](const char* code, std::string msg) { p.push_back({code, std::move(msg)}); };
  if (w.tp < 1 || w.pp < 1 || w.attention_dp < 1 || w.moe_tp < 1 || w.moe_ep < 1 || w.workers < 1)
    bad("positive_sizes", "tp, pp, attention_dp, moe_tp, moe_ep and workers must be at least 1");
  if (!p.empty()) return p;
  if (m.heads % w.tp != 0)
    bad("tp_divides_heads", "tp (" + num(w.tp) + ") does not divide heads (" + num(m.heads) + ")");
  if (w.pp > m.layers) bad("pp_layers", "pp (" + num(w.pp) + ") exceeds layers (" + num(m.layers) + ")");
  if (m.moe) {
    if (w.moe_tp * w.moe_ep != w.tp * w.attention_dp)
      bad("moe_group", "moe_tp x moe_ep (" + num(w.moe_tp * w.moe_ep) + ") must equal tp x attention_dp (" +
                           num(w.tp * w.attention_dp) + ")");
    if (m.moe->experts % w.moe_ep != 0)
      bad("ep_divides_experts",
          "moe_ep (" + num(w.moe_ep) + ") does not divide experts (" + num(m.moe->experts) + ")");
  } else if (w.moe_ep > 1) {
    bad("ep_dense", "moe_ep > 1 on a dense model");
  }
  if (w.batch && *w.batch < 1) bad("batch", "batch must be at least 1");
  return p;
}

namespace {

// One worker's steps: plain, or speculative (verification of k drafts and the draft passes) where `draft` is set.
struct Phase {
  const ServeInputs& in;
  const WorkerPlan& w;
  const ServingModel* draft = nullptr;
  StepTime run(const StepLoad& l) const {
    return draft ? spec_step_time(*in.model, *draft, *in.system, w, l, in.spec) : step_time(*in.model, *in.system, w, l);
  }
};

double kv_capacity_tokens(const ServeInputs& in, const WorkerPlan& w, const MemoryReport& mem, double seq,
                          const ServingModel* draft) {
  Bytes per = kv_bytes_per_token(*in.model, w, seq);
  if (draft) per += draft_kv_bytes_per_token(*draft, w, seq);  // the draft's own layers keep K/V too
  return per.v > 0 ? mem.kv_cache / per : 0;
}

// The worker's memory, with the draft's weights beside the target's when speculative decoding is on.
MemoryReport worker_memory(const ServeInputs& in, const WorkerPlan& w, double seq, const ServingModel* draft) {
  const MemoryReport r = engine_memory(*in.model, in.system->gpu, w, in.engine, in.memory, seq);
  if (!draft) return r;
  return with_draft_weights(r, draft_weight_bytes_per_gpu(*draft, w, in.spec.method), in.engine);
}

// KV slots a sequence holds beyond its own tokens: the k draft tokens of the step being verified. vLLM's
// scheduler allocates 1 + k new slots per running request and step plus num_lookahead_tokens = k more for EAGLE,
// MTP and draft-model methods (vllm/v1/core/sched/scheduler.py, indexed snapshots); SGLang's and TRT-LLM's
// reservations were not read. k is counted for every engine.
double kv_slots(const ServeInputs& in) { return in.spec.enabled() ? in.spec.tokens : 0; }

// Decode batch per attention-DP rank and what caps it.
double decode_batch(double wanted, const WorkerPlan& w, double kv_max, std::string* cap) {
  double b = wanted;
  *cap = "concurrency";
  if (w.batch && *w.batch < b) {
    b = *w.batch;
    *cap = "max_batch";
  }
  if (kv_max < b) {
    b = std::max(1.0, std::floor(kv_max));
    *cap = "kv_cache";
  }
  return std::max(1.0, b);
}

void aggregated(const ServeInputs& in, const ServingModel* draft, ServePrediction* out) {
  const WorkerPlan& w = in.plan.agg;
  const Workload& wl = in.workload;
  const Phase ph{in, w, draft};
  const double e = out->tokens_per_step;
  const double in_len = wl.input_len * (1.0 - wl.prefix_hit), out_len = wl.output_len;
  const double prefix = wl.context_depth + wl.input_len * wl.prefix_hit;
  const double seq = wl.context_depth + wl.input_len + wl.output_len;
  out->memory = worker_memory(in, w, seq, draft);
  if (!out->memory.fits)
    throw Infeasible("the weights (" + num(to_GiB(out->memory.weights), "%.1f") + " GiB per GPU) and activations " +
                     "leave no room for a KV cache in " + num(to_GiB(out->memory.capacity), "%.1f") + " GiB");
  out->kv_tokens = kv_capacity_tokens(in, w, out->memory, seq, draft);
  out->kv_max_batch = out->kv_tokens / (seq + out->kv_slots_per_seq);
  const double budget = in.plan.max_num_tokens > 0 ? in.plan.max_num_tokens : default_max_num_tokens(in.engine, in.system->gpu);
  const double decode_ctx = (in.separate_phases ? wl.context_depth : prefix + wl.input_len) + out_len / 2.0;
  if (in.static_batch > 0) {
    // Static batch: all prompts first (in chunks of the step budget), then all sequences decode together.
    const double b = in.static_batch;
    const double total = b * in_len;
    const double chunks = std::ceil(total / budget);
    StepLoad pl;
    pl.prefill_tokens = total / chunks;
    pl.prefill_keys = prefix + in_len / 2.0;
    pl.prefill_seqs = b / chunks;
    out->prefill_step = ph.run(pl);
    out->ttft = out->prefill_step.total * chunks;
    StepLoad dl;
    dl.decode_seqs = b;
    dl.decode_ctx = decode_ctx;
    out->decode_step = ph.run(dl);
    out->tpot = out->decode_step.total * (1.0 / e);
    out->batch = b;
    out->batch_cap = b > out->kv_max_batch ? "kv_cache (over capacity)" : "batch_size";
    const Seconds e2e = out->ttft + out->tpot * (out_len - 1);
    out->output_tokens_per_s = b * out_len / e2e.v * w.workers * w.attention_dp;
    return;
  }
  const double per_rank = std::max(1.0, 1.0 * wl.concurrency / (w.workers * w.attention_dp));
  const double b = decode_batch(per_rank, w, out->kv_max_batch, &out->batch_cap);
  if (wl.rounds > 0) {
    if (draft)
      throw ConfigError("speculative decoding is not modelled in the step-by-step closed loop (rounds); use the "
                        "steady state (rounds 0)");
    // The benchmark itself, step by step (closed_loop.h).
    ClosedLoopOptions o;
    o.clients = std::max(1, static_cast<int>(std::lround(per_rank)));
    o.rounds = wl.rounds;
    o.slots = std::floor(b < per_rank ? b : std::max(b, per_rank));
    o.budget = budget;
    const ClosedLoopResult r = simulate_closed_loop(in, w, o);
    out->ttft = r.ttft;
    out->tpot = r.tpot;
    out->batch = r.mean_batch;
    out->decode_step = r.typical_step;
    StepLoad pl;
    pl.prefill_tokens = std::min(in_len, budget);
    pl.prefill_keys = prefix + pl.prefill_tokens / 2.0;
    pl.prefill_seqs = pl.prefill_tokens >= in_len ? 1 : 0;
    out->prefill_step = ph.run(pl);
    out->output_tokens_per_s = r.duration.v > 0 ? o.clients * o.rounds * out_len / r.duration.v * w.workers *
                                                      w.attention_dp : 0;
    return;
  }
  out->batch = b;
  // Steady state of a closed loop (arrivals spread over time): every step decodes the batch and prefills the
  // prompts of the requests that replace finished ones, b / output_len of them per step on average (b e /
  // output_len where a speculative step emits e tokens per sequence). That mixed step over e is the TPOT every
  // request sees.
  StepLoad ml;
  ml.decode_seqs = b;
  ml.decode_ctx = decode_ctx;
  ml.prefill_tokens = b * e * in_len / out_len;
  ml.prefill_keys = prefix + in_len / 2.0;
  ml.prefill_seqs = b * e / out_len;
  out->decode_step = ph.run(ml);
  // A new request waits half a step for the running one to end, then its prompt runs in chunks of the step
  // budget, each chunk sharing its step with the batch's decode tokens.
  const double chunks = std::ceil(in_len / budget);
  StepLoad pl;
  pl.prefill_tokens = in_len / chunks;
  pl.prefill_keys = prefix + in_len / 2.0;
  pl.prefill_seqs = 1.0 / chunks;
  pl.decode_seqs = b;
  pl.decode_ctx = decode_ctx;
  out->prefill_step = ph.run(pl);
  const Seconds ttft = out->decode_step.total * 0.5 + out->prefill_step.total * chunks;
  const Seconds tpot = out->decode_step.total * (1.0 / e);
  const Seconds request = ttft + tpot * (out_len - 1.0);
  // Requests beyond the batch wait for a slot: in a closed loop each goes around (per_rank / b - 1) times.
  out->ttft = per_rank > b ? ttft + request * (per_rank / b - 1.0) : ttft;
  out->tpot = tpot;
  out->output_tokens_per_s = b * out_len / request.v * w.workers * w.attention_dp;
}

void disaggregated(const ServeInputs& in, const ServingModel* draft, ServePrediction* out) {
  const WorkerPlan& pw = in.plan.prefill;
  const WorkerPlan& dw = in.plan.decode;
  const Workload& wl = in.workload;
  const double e = out->tokens_per_step;
  const double in_len = wl.input_len * (1.0 - wl.prefix_hit), out_len = wl.output_len;
  const double prefix = wl.context_depth + wl.input_len * wl.prefix_hit;
  const double seq = wl.context_depth + wl.input_len + wl.output_len;
  // Both pools run the draft: the prefill workers prefill it with the prompt, the decode workers draft.
  out->prefill_memory = worker_memory(in, pw, seq, draft);
  out->memory = worker_memory(in, dw, seq, draft);
  if (!out->memory.fits || !out->prefill_memory.fits)
    throw Infeasible("the weights leave no room for a KV cache on the " +
                     std::string(out->memory.fits ? "prefill" : "decode") + " workers");
  out->kv_tokens = kv_capacity_tokens(in, dw, out->memory, seq, draft);
  out->kv_max_batch = out->kv_tokens / (seq + out->kv_slots_per_seq);
  // Prefill: `batch` prompts per attention-DP rank per step.
  const double pb = pw.batch.value_or(1);
  StepLoad pl;
  pl.prefill_tokens = pb * in_len;
  pl.prefill_keys = prefix + in_len / 2.0;
  pl.prefill_seqs = pb;
  out->prefill_step = Phase{in, pw, draft}.run(pl);
  const double tp_s = out->prefill_step.total.v;
  const double prefill_rate = pw.workers * pw.attention_dp * pb / tp_s;  // requests / s
  // The prompt's cache, prefill worker to decode worker (kv_transfer.h): `xfer` seconds after its prefill step
  // on average; the links' own capacity caps the request rate (each rank's GPUs send or receive one request's
  // shard at a time).
  KvTransferInputs ki;
  ki.model = in.model;
  ki.draft = draft;
  ki.system = in.system;
  ki.engine = in.engine;
  ki.transport = in.plan.kv_transport;
  ki.placement = in.plan.kv_placement;
  ki.prefill = pw;
  ki.decode = dw;
  ki.tokens = wl.context_depth + wl.input_len;
  const double budget =
      in.plan.max_num_tokens > 0 ? in.plan.max_num_tokens : default_max_num_tokens(in.engine, in.system->gpu);
  ki.chunks = static_cast<int>(std::ceil(in_len / budget));
  ki.prompts_per_step = pb;
  ki.prefill_step = out->prefill_step.total;
  const KvTransfer& kt = *(out->kv_transfer = kv_transfer(ki));
  const double xfer = kt.exposed.v;
  auto link_cap = [](double ranks, Seconds per_request) {
    return per_request.v > 0 ? ranks / per_request.v : std::numeric_limits<double>::infinity();
  };
  const double link_rate = std::min(link_cap(pw.workers * pw.attention_dp, kt.send_time),
                                    link_cap(dw.workers * dw.attention_dp, kt.recv_time));
  // Decode: iterate the batch to the closed loop's fixed point (a smaller batch decodes faster).
  const double slots_wanted = 1.0 * wl.concurrency / (dw.workers * dw.attention_dp);
  double b = decode_batch(std::max(1.0, slots_wanted), dw, out->kv_max_batch, &out->batch_cap);
  StepLoad dl;
  dl.decode_ctx = prefix + wl.input_len + out_len / 2.0;
  double rate = 0, td = 0;
  for (int it = 0; it < 4; ++it) {
    dl.decode_seqs = b;
    out->decode_step = Phase{in, dw, draft}.run(dl);
    td = out->decode_step.total.v / e;  // per output token
    const double decode_rate = dw.workers * dw.attention_dp * b / (std::max(1.0, out_len - 1.0) * td);
    const double loop_rate = wl.concurrency / (tp_s + xfer + std::max(0.0, out_len - 1.0) * td);
    rate = std::min({prefill_rate, decode_rate, loop_rate, link_rate});
    const double in_decode = rate * std::max(0.0, out_len - 1.0) * td / (dw.workers * dw.attention_dp);
    const double nb = std::clamp(in_decode, 1.0, b);
    if (std::abs(nb - b) < 0.5) break;
    b = nb;
  }
  out->batch = b;
  out->tpot = Seconds(td);
  out->ttft = Seconds(std::max(tp_s + xfer, wl.concurrency / rate - std::max(0.0, out_len - 1.0) * td));
  if (wl.rounds > 0) {
    // The benchmark's synchronised start queues the prompts at the prefill pool (closed_loop.h); each first token
    // comes `xfer` after its prefill step, and the request returns that much later.
    out->ttft =
        disaggregated_closed_loop_ttft(wl.concurrency, wl.rounds, pw.workers * pw.attention_dp * pb,
                                       out->prefill_step.total, Seconds(xfer + std::max(0.0, out_len - 1.0) * td)) +
        Seconds(xfer);
  }
  out->output_tokens_per_s = rate * out_len;
}

}  // namespace

ServePrediction serve_predict(const ServeInputs& in) {
  SHARDPLAN_CHECK(in.model && in.system);
  const ModelDesc& m = in.model->model;
  const bool agg = in.plan.mode == Mode::aggregated;
  for (const WorkerPlan* w : agg ? std::vector<const WorkerPlan*>{&in.plan.agg}
                                 : std::vector<const WorkerPlan*>{&in.plan.prefill, &in.plan.decode}) {
    Problems p = check_plan(m, *w);
    if (p.empty()) p = check_spec(in.spec, m, in.draft ? &in.draft->model : nullptr, *w);  // every worker drafts
    if (!p.empty()) throw ConfigError(join_problems(p));
  }
  if (in.workload.input_len < 1 || in.workload.output_len < 1)
    throw ConfigError("input and output lengths must be at least 1 token");
  // The draft: the caller's, or the MTP module / EAGLE head built from the target.
  std::optional<ServingModel> head;
  const ServingModel* draft = nullptr;
  if (in.spec.enabled()) {
    if (!in.draft) head = make_draft_head(*in.model, in.spec.method);
    draft = in.draft ? in.draft : &*head;
  }
  ServePrediction out;
  out.tokens_per_step = expected_tokens_per_step(in.spec);
  out.kv_slots_per_seq = kv_slots(in);
  if (agg) {
    aggregated(in, draft, &out);
    out.gpus = in.plan.agg.gpus() * in.plan.agg.workers;
  } else {
    disaggregated(in, draft, &out);
    out.gpus = in.plan.prefill.gpus() * in.plan.prefill.workers + in.plan.decode.gpus() * in.plan.decode.workers;
  }
  out.request_tokens_per_s = out.tpot.v > 0 ? 1.0 / out.tpot.v : 0;
  out.output_tokens_per_s_per_gpu = out.output_tokens_per_s / out.gpus;
  out.total_tokens_per_s_per_gpu =
      out.output_tokens_per_s_per_gpu * (in.workload.input_len + in.workload.output_len) / in.workload.output_len;
  // llama-bench semantics: one prompt of input_len in ubatch-sized steps; tg over the batch.
  const WorkerPlan& w = agg ? in.plan.agg : in.plan.prefill;
  const double ub = in.plan.max_num_tokens > 0 ? in.plan.max_num_tokens : default_max_num_tokens(in.engine, in.system->gpu);
  const double steps = std::ceil(in.workload.input_len / ub);
  StepLoad pl;
  pl.prefill_tokens = in.workload.input_len / steps;
  pl.prefill_keys = in.workload.context_depth + in.workload.input_len / 2.0;
  pl.prefill_seqs = 1.0 / steps;
  const Seconds one_prompt = Phase{in, w, draft}.run(pl).total * steps;
  out.prefill_tokens_per_s = in.workload.input_len / one_prompt.v;
  out.decode_tokens_per_s = out.batch * out.tokens_per_step / out.decode_step.total.v;
  return out;
}

}  // namespace shardplan::serving
