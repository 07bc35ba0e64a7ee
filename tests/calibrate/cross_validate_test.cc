#include "calibrate/cross_validate.h"

#include <doctest/doctest.h>

#include <set>
#include <string>

#include "modeler/io/published_runs.h"
#include "modeler/problems.h"

using namespace shardplan;
using namespace shardplan::calibrate;

namespace {

std::string run_yaml(const std::string& id, const std::string& source, int hidden, double measured) {
  return "- id: " + id + "\n  source: " + source + "\n  framework: megatron-lm\n  model:\n    layers: 4\n    hidden: " +
         std::to_string(hidden) + "\n    ffn_hidden: " + std::to_string(hidden * 4) +
         "\n    heads: 16\n    kv_heads: 16\n    vocab: 32000\n    seq_len: 2048\n    gated_mlp: false\n"
         "    tied_embeddings: true\n  system:\n    gpu: a100-sxm4-80gb\n    gpus: 8\n  precision: bf16\n"
         "  plan:\n    tp: 2\n    pp: 1\n    dp: 4\n    global_batch: 16\n  measured:\n    tokens_per_s_per_gpu: " +
         std::to_string(measured) + "\n";
}

/// Six runs from two sources, measured 20% slower than the base tables predict (what a fit should remove).
std::vector<io::PublishedRun> runs() {
  std::string text;
  const int hidden[] = {1024, 2048, 3072, 4096, 1536, 2560};
  std::vector<io::PublishedRun> probe;
  for (int i = 0; i < 6; ++i)
    text += run_yaml("r" + std::to_string(i), i < 3 ? "Paper A (2024)" : "Paper B", hidden[i], 1);
  probe = io::parse_published_runs(text, "runs.yaml");
  const io::ValidationReport rep = io::run_validation(probe);
  text.clear();
  for (int i = 0; i < 6; ++i)
    text += run_yaml("r" + std::to_string(i), i < 3 ? "Paper A (2024)" : "Paper B", hidden[i],
                     rep.results[static_cast<size_t>(i)].predicted_tokens_per_s_per_gpu / 1.2);
  return io::parse_published_runs(text, "runs.yaml");
}

}  // namespace

TEST_SUITE("cross_validate") {

TEST_CASE("groups are GPU x framework family") {
  const auto r = runs();
  CHECK(fit_group(r[0]) == "a100-sxm4-80gb megatron-lm");
}

TEST_CASE("halves: deterministic for a seed, disjoint, the larger half fitted; held-out error falls") {
  const auto r = runs();
  const CrossValidation a = cross_validate_half(r, 1), b = cross_validate_half(r, 1), c = cross_validate_half(r, 7);
  REQUIRE(a.held_out.size() == 3);
  REQUIRE(a.fits.size() == 1);
  CHECK(a.fits[0].fitted_on.size() == 3);
  std::set<std::string> fitted, tested, tested_b, tested_c;
  for (const auto* f : a.fits[0].fitted_on) fitted.insert(f->id);
  for (const auto& h : a.held_out) tested.insert(h.run->id);
  for (const auto& h : b.held_out) tested_b.insert(h.run->id);
  for (const auto& h : c.held_out) tested_c.insert(h.run->id);
  for (const auto& id : tested) CHECK(fitted.count(id) == 0);
  CHECK(tested == tested_b);
  CHECK(a.scheme.find("seed 1") != std::string::npos);
  CHECK(c.scheme.find("seed 7") != std::string::npos);
  CHECK(a.dense.runs == 3);
  CHECK(a.moe.runs == 0);
  CHECK(a.dense.base_mape > 15);
  CHECK(a.dense.mape < a.dense.base_mape / 2);
}

TEST_CASE("leave one source out: each source predicted by the other's fit") {
  const CrossValidation cv = cross_validate_sources(runs());
  CHECK(cv.held_out.size() == 6);
  CHECK(cv.by_fold.size() == 2);
  CHECK(cv.by_fold.count("Paper A") == 1);
  CHECK(cv.by_fold.count("Paper B") == 1);
  for (const auto& f : cv.fits) CHECK(f.fitted_on.size() == 3);
  CHECK(cv.dense.mape < cv.dense.base_mape);
}

TEST_CASE("filter: fit on the matches, test on the rest; bad expressions are errors") {
  const auto r = runs();
  const CrossValidation cv = cross_validate_filter(r, "id", "^r[0-3]$");
  CHECK(cv.held_out.size() == 2);
  CHECK_THROWS_AS(cross_validate_filter(r, "colour", "x"), ConfigError);
  CHECK_THROWS_AS(cross_validate_filter(r, "id", "("), ConfigError);
  CHECK_THROWS_AS(cross_validate_filter(r, "id", "nothing-matches"), ConfigError);
  CHECK_THROWS_AS(cross_validate_filter(r, "id", "r"), ConfigError);  // everything matches: nothing to test
}

}
