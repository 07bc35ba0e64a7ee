#include "modeler/serving/open_loop.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <random>

namespace shardplan::serving {

std::vector<double> poisson_arrivals(int n, double rate, uint64_t seed) {
  std::vector<double> t(static_cast<size_t>(std::max(0, n)), 0.0);
  if (!std::isfinite(rate)) return t;
  std::mt19937_64 gen(seed);
  double now = 0;
  for (size_t i = 1; i < t.size(); ++i) {
    // u in [0, 1) from the top 53 bits; -ln(1 - u) / rate is exponential with mean 1 / rate.
    const double u = static_cast<double>(gen() >> 11) * (1.0 / 9007199254740992.0);
    now += -std::log1p(-u) / rate;
    t[i] = now;
  }
  return t;
}

std::vector<OpenLoopRequest> make_requests(const std::vector<double>& arrivals,
                                           const std::vector<LengthPair>& lengths) {
  std::vector<OpenLoopRequest> r;
  for (size_t i = 0; i < arrivals.size() && i < lengths.size(); ++i)
    r.push_back({arrivals[i], lengths[i].input_len, lengths[i].output_len});
  return r;
}

namespace {

// Mean and numpy-style percentiles of values with multiplicities (ITL gaps repeat when steps are run in one go).
Summary summarise(std::vector<std::pair<double, long>> v) {
  Summary s;
  std::sort(v.begin(), v.end());
  double sum = 0;
  for (const auto& [x, c] : v) {
    sum += x * static_cast<double>(c);
    s.count += c;
  }
  if (s.count == 0) return s;
  s.mean = sum / static_cast<double>(s.count);
  // The value at (0-based) position `pos` of the expanded, sorted list.
  auto at = [&](long pos) {
    long seen = 0;
    for (const auto& [x, c] : v) {
      seen += c;
      if (pos < seen) return x;
    }
    return v.back().first;
  };
  auto pct = [&](double p) {
    const double idx = p * static_cast<double>(s.count - 1);
    const long lo = static_cast<long>(std::floor(idx));
    const double a = at(lo), b = at(std::min(lo + 1, s.count - 1));
    return a + (b - a) * (idx - static_cast<double>(lo));
  };
  s.p50 = pct(0.5);
  s.p99 = pct(0.99);
  return s;
}

enum class State { pending, waiting, prefill, decode, done };

struct Req {
  State state = State::pending;
  double arrival = 0, prompt = 0, prefix = 0, prefilled = 0, ctx = 0, first = 0, last = 0, need = 0;
  int out = 1, left = 0;
};

struct Sim {
  const ServeInputs& in;
  const WorkerPlan& w;
  const OpenLoopOptions& o;
  std::vector<Req> rq;
  std::deque<int> waiting;
  std::vector<int> prefilling, decoding;
  std::vector<std::pair<int, double>> retiring;  // TRT-LLM: (iterations the slot is still held, its context)
  int running = 0;
  double kv_used = 0, t = 0, batch_time = 0;
  long steps = 0;
  std::vector<std::pair<double, long>> ttft, tpot, itl, e2e;

  Sim(const ServeInputs& inputs, const WorkerPlan& wp, const std::vector<OpenLoopRequest>& reqs,
      const OpenLoopOptions& op)
      : in(inputs), w(wp), o(op) {
    const Workload& wl = in.workload;
    for (const OpenLoopRequest& r : reqs) {
      Req q;
      q.arrival = r.arrival;
      q.prompt = std::max(1.0, r.input_len * (1.0 - wl.prefix_hit));
      q.prefix = wl.context_depth + r.input_len * wl.prefix_hit;
      q.out = r.output_len;
      q.need = wl.context_depth + r.input_len + r.output_len;
      rq.push_back(q);
    }
  }

  // A slot is free and the cache holds the request's whole sequence beside the running ones (one request is
  // always admitted into an empty engine, so a sequence longer than the cache still runs).
  bool admissible(int i) const {
    return running < std::max(1.0, o.slots) &&
           (running == 0 || kv_used + rq[static_cast<size_t>(i)].need <= o.kv_tokens);
  }
  void admit() {
    const int i = waiting.front();
    waiting.pop_front();
    rq[static_cast<size_t>(i)].state = State::prefill;
    prefilling.push_back(i);
    ++running;
    kv_used += rq[static_cast<size_t>(i)].need;
  }
  void finish(int i) {
    Req& q = rq[static_cast<size_t>(i)];
    q.state = State::done;
    if (q.out > 1) tpot.emplace_back((t - q.first) / (q.out - 1.0), 1);
    e2e.emplace_back(t - q.arrival, 1);
    kv_used -= q.need;
    if (in.engine == Engine::trtllm)
      retiring.emplace_back(1, q.ctx);  // the overlap scheduler's extra iteration
    else
      --running;
  }

  // Prompt chunks for this step, admitting waiting requests FCFS (closed_loop.cc has the engines' rules).
  void schedule_prefill(double budget, std::vector<std::pair<int, double>>* chunks) {
    const bool trt = in.engine == Engine::trtllm;
    for (int i : prefilling) {
      const double left = rq[static_cast<size_t>(i)].prompt - rq[static_cast<size_t>(i)].prefilled;
      const double take = std::min(left, std::max(0.0, budget));
      if (take <= 0) break;
      chunks->emplace_back(i, take);
      budget -= take;
    }
    while (!waiting.empty() && admissible(waiting.front())) {
      const double p = rq[static_cast<size_t>(waiting.front())].prompt;
      // TRT-LLM (chunked prefill off): whole prompts while they fit; one longer than the budget runs alone.
      if (trt ? !(budget >= p || (chunks->empty() && budget > 0)) : budget <= 0) break;
      admit();
      const double take = std::min(p, budget);
      chunks->emplace_back(prefilling.back(), take);
      budget -= take;
    }
  }

  OpenLoopResult run() {
    const size_t n = rq.size();
    size_t next = 0;
    int max_waiting = 0;
    std::vector<std::pair<int, double>> chunks;
    const bool pausing = in.engine == Engine::sglang && !in.plan.mixed_chunk;
    long guard = 0, max_iter = 1000;
    for (const Req& q : rq) max_iter += 50L * (q.out + 8);
    while (++guard < max_iter) {
      while (next < n && rq[next].arrival <= t) {
        rq[next].state = State::waiting;
        waiting.push_back(static_cast<int>(next++));
      }
      max_waiting = std::max(max_waiting, static_cast<int>(waiting.size()));
      if (decoding.empty() && prefilling.empty() && waiting.empty() && retiring.empty()) {
        if (next >= n) break;
        t = rq[next].arrival;  // idle until the next request
        continue;
      }
      int wasted = 0;
      double wasted_ctx = 0;
      for (auto it = retiring.begin(); it != retiring.end();) {
        if (it->first > 0) {
          --it->first;
          ++wasted;
          wasted_ctx += it->second;
          ++it;
        } else {
          --running;
          it = retiring.erase(it);
        }
      }
      chunks.clear();
      bool run_decode = true;
      double budget = o.budget;
      const bool can_admit = !waiting.empty() && admissible(waiting.front());
      if (pausing) {
        if (!prefilling.empty() || can_admit) run_decode = false;  // a prefill batch; decoding waits
      } else {
        budget -= static_cast<double>(decoding.size()) + wasted;
      }
      if (!run_decode || !pausing) schedule_prefill(budget, &chunks);
      const bool decode_now = run_decode && !decoding.empty();
      double ctx_sum = 0;
      int min_left = 1 << 30;
      for (int i : decoding) {
        ctx_sum += rq[static_cast<size_t>(i)].ctx;
        min_left = std::min(min_left, rq[static_cast<size_t>(i)].left);
      }
      auto load_of = [&](int k) {
        StepLoad l;
        if (wasted > 0) {
          l.decode_seqs = wasted;
          l.decode_ctx = wasted_ctx / wasted;
        }
        if (decode_now) {
          const double d = static_cast<double>(decoding.size());
          const double ctx = ctx_sum / d + (k - 1) / 2.0;
          l.decode_ctx = (l.decode_ctx * l.decode_seqs + ctx * d) / (l.decode_seqs + d);
          l.decode_seqs += d;
        }
        double ptok = 0, pkeys = 0, finishing = 0;
        for (const auto& [i, tok] : chunks) {
          const Req& q = rq[static_cast<size_t>(i)];
          ptok += tok;
          pkeys += tok * (q.prefix + q.prefilled + tok / 2.0);
          if (q.prefilled + tok >= q.prompt - 1e-9) finishing += 1;
        }
        l.prefill_tokens = ptok;
        l.prefill_keys = ptok > 0 ? pkeys / ptok : 0;
        l.prefill_seqs = finishing;
        return l;
      };
      auto cost = [&](const StepLoad& l) { return step_time(*in.model, *in.system, w, l).total.v; };
      // Nothing changes until a decode finishes or a request arrives: run those steps in one go.
      int k = 1;
      if (decode_now && chunks.empty() && retiring.empty() && (waiting.empty() || !can_admit) && min_left > 1) {
        k = min_left;
        if (next < n) {
          const double one = cost(load_of(1));
          k = static_cast<int>(
              std::clamp(std::floor((rq[next].arrival - t) / one), 1.0, static_cast<double>(min_left)));
        }
      }
      const StepLoad load = load_of(k);
      const double dt = load.decode_seqs + load.prefill_tokens > 0 ? cost(load) * k : 0;
      if (dt > 0) ++steps;
      const double start = t;
      t += dt;
      batch_time += (decode_now ? static_cast<double>(decoding.size()) : 0) * dt;
      std::vector<int> finished;
      if (decode_now) {
        const double each = dt / k;
        for (int i : decoding) {
          Req& q = rq[static_cast<size_t>(i)];
          itl.emplace_back(start + each - q.last, 1);
          if (k > 1) itl.emplace_back(each, k - 1);
          q.last = t;
          q.left -= k;
          q.ctx += k;
          if (q.left <= 0) finished.push_back(i);
        }
      }
      for (const auto& [i, tok] : chunks) {
        Req& q = rq[static_cast<size_t>(i)];
        q.prefilled += tok;
        if (q.prefilled < q.prompt - 1e-9) continue;
        q.first = q.last = t;
        ttft.emplace_back(t - q.arrival, 1);
        q.state = State::decode;
        q.left = q.out - 1;
        q.ctx = q.prefix + q.prompt;
        prefilling.erase(std::find(prefilling.begin(), prefilling.end(), i));
        if (q.left <= 0)
          finished.push_back(i);
        else
          decoding.push_back(i);
      }
      for (int i : finished) {
        finish(i);
        decoding.erase(std::remove(decoding.begin(), decoding.end(), i), decoding.end());
      }
    }
    OpenLoopResult r;
    r.ttft = summarise(ttft);
    r.tpot = summarise(tpot);
    r.itl = summarise(itl);
    r.e2e = summarise(e2e);
    r.duration = t;
    r.steps = steps;
    r.max_waiting = max_waiting;
    r.mean_batch = t > 0 ? batch_time / t : 0;
    double out_tok = 0, in_tok = 0;
    for (const Req& q : rq) {
      if (q.state != State::done) continue;
      out_tok += q.out;
      in_tok += q.need - in.workload.context_depth - q.out;
    }
    if (t > 0) {
      r.requests_per_s = static_cast<double>(r.e2e.count) / t;
      r.output_tokens_per_s = out_tok / t;
      r.input_tokens_per_s = in_tok / t;
    }
    return r;
  }
};

}  // namespace

OpenLoopResult simulate_open_loop(const ServeInputs& in, const WorkerPlan& w, const std::vector<OpenLoopRequest>& reqs,
                                  const OpenLoopOptions& o) {
  if (reqs.empty()) throw ConfigError("open loop: no requests");
  for (size_t i = 0; i < reqs.size(); ++i) {
    if (reqs[i].input_len < 1 || reqs[i].output_len < 1)
      throw ConfigError("open loop: request " + num(static_cast<int>(i) + 1) + " has a length below 1 token");
    if (i > 0 && reqs[i].arrival < reqs[i - 1].arrival)
      throw ConfigError("open loop: requests must be sorted by arrival");
  }
  Sim s(in, w, reqs, o);
  return s.run();
}

OpenLoopPrediction predict_open_loop(const ServeInputs& in, const OpenLoopWorkload& wl) {
  SHARDPLAN_CHECK(in.model && in.system);
  if (in.plan.mode != Mode::aggregated)
    throw ConfigError("request rate: only aggregated plans are simulated open-loop (not --prefill/--decode)");
  if (in.static_batch > 0) throw ConfigError("request rate: a static batch has no arrivals (drop --batch-size)");
  if (in.spec.enabled()) throw ConfigError("request rate: speculative decoding is not modelled in the open loop");
  if (!(wl.rate > 0)) throw ConfigError("request rate must be above 0 requests/s (inf: all at once)");
  if (wl.lengths.empty()) throw ConfigError("request rate: no request lengths");
  const WorkerPlan& w = in.plan.agg;
  if (const Problems p = check_plan(in.model->model, w); !p.empty()) throw ConfigError(join_problems(p));
  OpenLoopPrediction out;
  // The cache is sized at the longest sequence (it matters where a sliding window caps the cached keys).
  double seq = 0;
  for (const LengthPair& l : wl.lengths) {
    if (l.input_len < 1 || l.output_len < 1) throw ConfigError("request lengths must be at least 1 token");
    seq = std::max(seq, static_cast<double>(in.workload.context_depth + l.input_len + l.output_len));
  }
  out.memory = engine_memory(*in.model, in.system->gpu, w, in.engine, in.memory, seq);
  if (!out.memory.fits)
    throw Infeasible("the weights (" + num(to_GiB(out.memory.weights), "%.1f") + " GiB per GPU) and activations " +
                     "leave no room for a KV cache in " + num(to_GiB(out.memory.capacity), "%.1f") + " GiB");
  const Bytes per = kv_bytes_per_token(*in.model, w, seq);
  out.kv_tokens = per.v > 0 ? out.memory.kv_cache / per : 0;
  OpenLoopOptions o;
  if (w.batch) o.slots = *w.batch;
  o.kv_tokens = out.kv_tokens;
  o.budget = in.plan.max_num_tokens > 0 ? in.plan.max_num_tokens : default_max_num_tokens(in.engine, in.system->gpu);
  out.ranks = w.workers * w.attention_dp;
  const std::vector<double> arrivals = poisson_arrivals(static_cast<int>(wl.lengths.size()), wl.rate, wl.seed);
  std::vector<OpenLoopRequest> mine, burst;
  for (size_t i = 0; i < arrivals.size(); i += static_cast<size_t>(out.ranks)) {
    mine.push_back({arrivals[i], wl.lengths[i].input_len, wl.lengths[i].output_len});
    burst.push_back({0.0, wl.lengths[i].input_len, wl.lengths[i].output_len});
  }
  out.run = simulate_open_loop(in, w, mine, o);
  const OpenLoopResult sat = std::isfinite(wl.rate) ? simulate_open_loop(in, w, burst, o) : out.run;
  const double r = out.ranks;
  out.run.requests_per_s *= r;
  out.run.output_tokens_per_s *= r;
  out.run.input_tokens_per_s *= r;
  out.capacity_rps = sat.requests_per_s * r;
  out.stable = wl.rate < out.capacity_rps;
  out.queue_growth_rps = out.stable ? 0 : wl.rate - out.capacity_rps;
  return out;
}

}  // namespace shardplan::serving
