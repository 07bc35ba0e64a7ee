// Shared by the libFuzzer targets: what counts as a finding, and the few plans every parsed input is evaluated on.
// Bad input may end in ConfigError or Infeasible (the CLI's exit 2); anything else that escapes, a signal, a
// sanitizer report, or an output that is not a finite, non-negative number is a finding (docs/fuzzing.md).
#pragma once

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <string_view>
#include <vector>

#include "modeler/evaluate.h"
#include "modeler/framework.h"
#include "modeler/io/model_io.h"
#include "modeler/io/system_io.h"
#include "modeler/problems.h"

namespace shardplan::fuzz {

[[noreturn]] inline void finding(const std::string& what) {
  std::fprintf(stderr, "fuzz finding: %s\n", what.c_str());
  std::abort();
}

inline void check_value(double v, const char* what) {
  if (!std::isfinite(v) || v < 0) finding(std::string(what) + " is " + std::to_string(v));
}

/// Every number a user sees of an estimate: finite and non-negative; a valid plan's step time positive.
inline void check_estimate(const Estimate& e) {
  const MemoryBreakdown& m = e.memory;
  for (const auto& [v, what] : {std::pair{m.weights.v, "weights"}, {m.gradients.v, "gradients"},
                                {m.optimizer.v, "optimizer"}, {m.activations.v, "activations"},
                                {m.logits.v, "logits"}, {m.buffers.v, "buffers"}, {m.total().v, "memory total"}})
    check_value(v, what);
  const TimeBreakdown& t = e.time;
  for (const auto& [v, what] : {std::pair{t.compute.v, "compute"}, {t.bubble.v, "bubble"},
                                {t.optimizer.v, "optimizer time"}, {t.step().v, "step"}})
    check_value(v, what);
  for (double v : {e.tokens_per_s, e.tokens_per_s_per_gpu, e.mfu, e.hfu, e.model_flops_per_token})
    check_value(v, "throughput");
  if (!(t.step().v > 0)) finding("a valid plan with step time " + std::to_string(t.step().v));
  if (e.plan.num_microbatches() < 1) finding("fewer than one micro-batch per step");
}

/// Evaluates `model` on `system` at a few plans (all data parallel; tp 2; pp 2; cp 2 with ZeRO-3) that the
/// degrees allow. Problems are fine (the CLI prints them); numbers out of range are findings.
inline void evaluate_some(const ModelDesc& model, const System& system) {
  const Framework& fw = *find_framework("megatron-lm");
  const int gpus = system.gpus;
  const int shapes[][3] = {{1, 1, 1}, {2, 1, 1}, {1, 2, 1}, {1, 1, 2}};  // tp, pp, cp
  for (const auto& [tp, pp, cp] : shapes) {
    if (gpus % (tp * pp * cp) != 0) continue;
    Plan p;
    p.tp = p.etp = tp;
    p.pp = pp;
    p.cp = cp;
    p.dp = gpus / (tp * pp * cp);
    p.zero = cp > 1 ? 3 : 1;
    p.sequence_parallel = tp > 1;
    p.micro_batch = 1;
    p.global_batch = 2 * p.dp * pp;
    p.seq_len = 2048;
    const Estimate e = evaluate(model, system, p, fw);
    if (e.time.compute.v > 0) check_estimate(e);  // evaluated (fits or not)
  }
}

/// The reference system inputs are evaluated on: a DGX H100 node pair from the repository's profiles.
inline const System& reference_system() {
  static const System s = io::load_system("dgx-h100", 16);
  return s;
}
inline const ModelDesc& reference_model() {
  static const ModelDesc m = io::load_model("llama-3-8b");
  return m;
}

/// Runs `body`; the errors bad input may raise end the input, anything else is a finding.
template <class F>
int guarded(F&& body) {
  try {
    body();
  } catch (const ConfigError&) {
  } catch (const Infeasible&) {
  } catch (const std::exception& e) {
    finding(std::string("internal error escaped: ") + e.what());
  }
  return 0;
}

inline std::string_view as_text(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

}  // namespace shardplan::fuzz
