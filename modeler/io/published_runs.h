// The published-runs file (design.md contract, schema 1): measured training runs to validate against.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "modeler/io/system_io.h"
#include "modeler/model_desc.h"
#include "modeler/validation.h"

namespace shardplan::io {

struct PublishedRun {
  std::string id, source, url, trust, framework, notes;
  /// What the source states about its software (optional keys; empty or unset: not stated): the release
  /// (framework_version, as the framework names it), the publication date ("YYYY" or "YYYY-MM"), and whether the
  /// model ran under torch.compile. The fp8 recipe and the recipe-decided plan settings live in `plan`.
  std::string framework_version, date;
  std::string precision_name;  // the precision key as written (bf16, fp16, fp8, mxfp8, nvfp4, fp32)
  int line = 0;  // line of the entry in its file, for messages
  ModelDesc model;
  bool moe = false;  // the run trains a mixture-of-experts model (model.moe not null)
  std::string gpu;
  StandardSystemOptions system;
  std::optional<double> power_limit_w;
  OpenPlan plan;
  std::optional<int> etp;
  double measured_tokens_per_s_per_gpu = 0;
  std::optional<double> measured_step_time_s, measured_model_tflops_per_gpu, measured_peak_memory_gib;
};

/// Parses a published-runs file strictly (unknown keys rejected, each entry's problems named by id and line).
std::vector<PublishedRun> parse_published_runs(std::string_view text, const std::string& filename);
std::vector<PublishedRun> load_published_runs(const std::string& path);

}  // namespace shardplan::io
