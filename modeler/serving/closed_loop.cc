#include "modeler/serving/closed_loop.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <functional>
#include <queue>
#include <vector>

namespace shardplan::serving {

namespace {

enum class Phase { done, waiting, prefill, decode };

struct Client {
  Phase phase = Phase::waiting;
  double arrival = 0;       // when the current request was sent
  double prefilled = 0;     // prompt tokens already in the KV cache
  int decode_left = 0;      // tokens still to generate after the first
  double first = 0;         // time of the first token
  double ctx = 0;           // tokens in the KV cache while decoding
  int sent = 1;             // requests sent so far
};

struct Sim {
  const ServeInputs& in;
  const WorkerPlan& w;
  const ClosedLoopOptions& o;
  double prompt = 0, prefix = 0;
  int out_len = 1;
  std::vector<Client> cl;
  std::deque<int> waiting;      // FCFS
  std::vector<std::pair<int, int>> arriving;  // (client, steps it still misses): sent, not yet seen by the scheduler
  std::vector<int> prefilling;  // admitted, prompt not finished, in admission order
  int running = 0;              // slots in use: prefilling + decoding + retiring
  double t = 0;
  double ttft_sum = 0, tpot_sum = 0, batch_time = 0;
  long requests = 0, decoded_requests = 0, steps = 0;

  Sim(const ServeInputs& inputs, const WorkerPlan& wp, const ClosedLoopOptions& op) : in(inputs), w(wp), o(op) {
    const Workload& wl = in.workload;
    prompt = wl.input_len * (1.0 - wl.prefix_hit);
    prefix = wl.context_depth + wl.input_len * wl.prefix_hit;
    out_len = std::max(1, wl.output_len);
    cl.resize(static_cast<size_t>(std::max(1, o.clients)));
    for (size_t i = 0; i < cl.size(); ++i) waiting.push_back(static_cast<int>(i));
  }

  bool retiring_slots() const { return in.engine == Engine::trtllm; }

  // The client's request is finished at time t: free (or retire) its slot and send the next request at once.
  void finish(int i) {
    Client& c = cl[static_cast<size_t>(i)];
    if (out_len > 1) {
      tpot_sum += (t - c.first) / (out_len - 1.0);
      ++decoded_requests;
    }
    if (retiring_slots()) retiring.push_back(1);  // the slot stays taken through the next iteration
    else --running;
    if (c.sent >= o.rounds) {
      c.phase = Phase::done;
      return;
    }
    Client next;
    next.sent = c.sent + 1;
    next.arrival = t;
    c = next;
    arriving.emplace_back(i, o.client_lag_steps);
  }
  std::vector<int> retiring;  // per retiring slot: iterations it is still held

  double slots() const { return std::max(1.0, o.slots); }

  // Admits waiting prompts FCFS into `prefilling` while a slot is free.
  void admit_one() {
    const int i = waiting.front();
    waiting.pop_front();
    cl[static_cast<size_t>(i)].phase = Phase::prefill;
    prefilling.push_back(i);
    ++running;
  }

  ClosedLoopResult run() {
    ClosedLoopResult r;
    std::vector<std::pair<int, double>> chunks;  // (client, tokens) prefilled this step
    long guard = 0;
    const long max_iter = 50L * o.rounds * static_cast<long>(cl.size()) * (out_len + 8) + 1000;
    while (true) {
      if (++guard > max_iter) break;  // cannot happen for a valid plan; keeps a bad input from spinning
      // Retiring slots: released once they have been through their extra iteration, in which the overlap
      // scheduler had already put them (a wasted decode row).
      int wasted = 0;
      for (auto it = retiring.begin(); it != retiring.end();) {
        if (*it > 0) {
          --*it;
          ++wasted;
          ++it;
        } else {
          --running;
          it = retiring.erase(it);
        }
      }
      int decoding = 0;
      double ctx_sum = 0;
      int min_left = 1 << 30;
      for (const Client& c : cl) {
        if (c.phase == Phase::decode) {
          ++decoding;
          ctx_sum += c.ctx;
          min_left = std::min(min_left, c.decode_left);
        }
      }
      // A request sent while the engine idles is seen at once (the engine waits for work).
      if (o.client_lag_steps <= 0 || (decoding == 0 && prefilling.empty() && waiting.empty() && retiring.empty())) {
        for (const auto& a : arriving) waiting.push_back(a.first);
        arriving.clear();
      }
      if (decoding == 0 && prefilling.empty() && waiting.empty() && retiring.empty()) break;
      // Build the step.
      chunks.clear();
      bool run_decode = true;
      double budget = o.budget;
      const bool can_admit = !waiting.empty() && running < slots();
      const bool pausing = in.engine == Engine::sglang && !in.plan.mixed_chunk;
      if (pausing) {
        if (!prefilling.empty() || can_admit) {
          run_decode = false;  // a prefill batch; decoding waits
        }
      } else {
        // Mixed steps: the decode tokens take their share of the budget first (vLLM's token budget, TRT-LLM's
        // max_num_tokens, SGLang's PrefillAdder with mixed_with_decode_tokens = the running batch size).
        budget -= decoding + wasted;
      }
      if (!run_decode || !pausing) {
        if (in.engine == Engine::trtllm) {
          // Whole prompts while they fit; a prompt longer than the whole budget runs alone, chunked.
          for (int i : prefilling) {
            const double left = prompt - cl[static_cast<size_t>(i)].prefilled;
            const double take = std::min(left, std::max(0.0, budget));
            if (take <= 0) break;
            chunks.emplace_back(i, take);
            budget -= take;
          }
          while (!waiting.empty() && running < slots() && (budget >= prompt || (chunks.empty() && budget > 0))) {
            admit_one();
            const double take = std::min(prompt, budget);
            chunks.emplace_back(prefilling.back(), take);
            budget -= take;
          }
        } else {
          for (int i : prefilling) {
            if (budget <= 0) break;
            const double left = prompt - cl[static_cast<size_t>(i)].prefilled;
            const double take = std::min(left, budget);
            chunks.emplace_back(i, take);
            budget -= take;
          }
          while (!waiting.empty() && running < slots() && budget > 0) {
            admit_one();
            const double take = std::min(prompt, budget);
            chunks.emplace_back(prefilling.back(), take);
            budget -= take;
          }
        }
      }
      StepLoad load;
      int k = 1;
      if (wasted > 0) {
        load.decode_seqs = wasted;
        load.decode_ctx = prefix + prompt + out_len;
      }
      if (run_decode && decoding > 0) {
        // Nothing else can change until a decode finishes: run those steps in one go.
        const bool quiet = chunks.empty() && retiring.empty() && arriving.empty() &&
                           (waiting.empty() || running >= slots());
        if (quiet) k = std::max(1, min_left);
        const double ctx = ctx_sum / decoding + (k - 1) / 2.0;
        load.decode_ctx = (load.decode_ctx * load.decode_seqs + ctx * decoding) / (load.decode_seqs + decoding);
        load.decode_seqs += decoding;
      }
      double finishing = 0, ptok = 0, pkeys = 0;
      for (const auto& [i, tok] : chunks) {
        const Client& c = cl[static_cast<size_t>(i)];
        ptok += tok;
        pkeys += tok * (prefix + c.prefilled + tok / 2.0);
        if (c.prefilled + tok >= prompt - 1e-9) finishing += 1;
      }
      load.prefill_tokens = ptok;
      load.prefill_keys = ptok > 0 ? pkeys / ptok : 0;
      load.prefill_seqs = finishing;
      double dt = 0;
      if (load.decode_seqs + load.prefill_tokens > 0) {
        const StepTime st = step_time(*in.model, *in.system, w, load);
        dt = st.total.v * k;
        ++steps;
      }
      t += dt;
      batch_time += (run_decode ? decoding : 0) * dt;
      // Apply the step: decodes advance, prompts progress, finished requests leave.
      std::vector<int> finished;
      if (run_decode) {
        for (size_t i = 0; i < cl.size(); ++i) {
          Client& c = cl[i];
          if (c.phase != Phase::decode) continue;
          c.decode_left -= k;
          c.ctx += k;
          if (c.decode_left <= 0) finished.push_back(static_cast<int>(i));
        }
      }
      for (const auto& [i, tok] : chunks) {
        Client& c = cl[static_cast<size_t>(i)];
        c.prefilled += tok;
        if (c.prefilled < prompt - 1e-9) continue;
        c.first = t;
        ttft_sum += t - c.arrival;
        ++requests;
        c.phase = Phase::decode;
        c.decode_left = out_len - 1;
        c.ctx = prefix + prompt;
        prefilling.erase(std::find(prefilling.begin(), prefilling.end(), i));
        if (c.decode_left <= 0) finished.push_back(i);
      }
      // Requests sent during this step reach the scheduler for the next one.
      for (auto it = arriving.begin(); it != arriving.end();) {
        if (--it->second <= 0) {
          waiting.push_back(it->first);
          it = arriving.erase(it);
        } else {
          ++it;
        }
      }
      for (int i : finished) finish(i);
    }
    r.ttft = Seconds(requests ? ttft_sum / static_cast<double>(requests) : 0);
    r.tpot = Seconds(decoded_requests ? tpot_sum / static_cast<double>(decoded_requests) : 0);
    r.duration = Seconds(t);
    r.mean_batch = t > 0 ? batch_time / t : 0;
    r.steps = steps;
    StepLoad dl;
    dl.decode_seqs = std::max(1.0, r.mean_batch);
    dl.decode_ctx = prefix + prompt + out_len / 2.0;
    r.typical_step = step_time(*in.model, *in.system, w, dl);
    return r;
  }
};

}  // namespace

Seconds disaggregated_closed_loop_ttft(int clients, int rounds, double per_step, Seconds prefill_step,
                                       Seconds decode_time) {
  // FCFS queue of (arrival, requests sent); clients come back in time order (min-heap), so appending them as
  // their time passes keeps the queue sorted. The pool starts a step whenever it is idle and a prompt waits.
  using Item = std::pair<double, int>;
  std::deque<Item> queue;
  for (int i = 0; i < std::max(1, clients); ++i) queue.emplace_back(0.0, 1);
  std::priority_queue<Item, std::vector<Item>, std::greater<>> returning;
  const size_t batch = static_cast<size_t>(std::max(1.0, std::floor(per_step)));
  double free_at = 0, ttft_sum = 0;
  long n = 0;
  while (!queue.empty() || !returning.empty()) {
    const double next = queue.empty() ? returning.top().first : queue.front().first;
    const double start = std::max(free_at, next);
    while (!returning.empty() && returning.top().first <= start) {
      queue.push_back(returning.top());
      returning.pop();
    }
    const double end = start + prefill_step.v;
    for (size_t k = 0; k < batch && !queue.empty() && queue.front().first <= start; ++k) {
      const auto [arrival, sent] = queue.front();
      queue.pop_front();
      ttft_sum += end - arrival;
      ++n;
      if (sent < rounds) returning.emplace(end + decode_time.v, sent + 1);
    }
    free_at = end;
  }
  return Seconds(n ? ttft_sum / static_cast<double>(n) : 0);
}

ClosedLoopResult simulate_closed_loop(const ServeInputs& in, const WorkerPlan& w, const ClosedLoopOptions& o) {
  Sim s(in, w, o);
  return s.run();
}

}  // namespace shardplan::serving
