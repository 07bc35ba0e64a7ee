// The speculative-decoding flags of `serve predict` and `serve search` (--spec, --spec-tokens, --spec-accept,
// --spec-accept-length, --spec-draft): registration, and their parsing into a SpecDecode with the draft model.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "modeler/serving/serve_predict.h"

namespace shardplan::cli {

struct SpecFlags {
  std::string method = "none";
  int tokens = 0;
  std::string accept;        // "A" or "A1,A2,...": per-position acceptance rates
  double accept_length = 0;  // mean tokens per step, bonus included
  std::string draft;         // draft model (models/ name, YAML or HF config.json); for eagle: the head's config
};

void add_spec_flags(CLI::App* app, SpecFlags* f);

/// The parsed setting and its draft model, ready for ServeInputs (spec, draft). Bad input throws ConfigError
/// naming the flag (exit 2).
struct SpecSetup {
  serving::SpecDecode spec;
  std::unique_ptr<serving::ServingModel> draft;  // draft_model, or eagle with --spec-draft; else nullptr
  std::string draft_name;                        // --spec-draft as given, for the launch arguments
};
SpecSetup parse_spec_flags(const SpecFlags& f, const serving::ServingModel& target, const serving::WorkerPlan& w,
                           serving::Engine engine);

}  // namespace shardplan::cli
