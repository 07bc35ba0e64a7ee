#include "modeler/io/launcher_options.h"

#include <doctest/doctest.h>

#include <map>
#include <set>
#include <string>
#include <utility>

using namespace shardplan::io;

namespace {

bool lower_digit(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }

/// Megatron-LM's argparse flags: "--" then lowercase words joined by '-' ("--micro-batch-size").
bool megatron_style(const std::string& s) {
  if (s.size() < 3 || s.rfind("--", 0) != 0 || s[2] == '-' || s.back() == '-') return false;
  for (size_t i = 2; i < s.size(); ++i)
    if (!lower_digit(s[i]) && !(s[i] == '-' && s[i - 1] != '-')) return false;
  return true;
}

/// Config keys: snake_case segments joined by '.' ("parallelism.tensor_parallel_degree"); `min_segments` of them.
bool dotted_snake(const std::string& s, int min_segments) {
  int segments = 1;
  if (s.empty() || !lower_digit(s.front()) || !lower_digit(s.back())) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '.') {
      if (!lower_digit(s[i - 1]) || !lower_digit(s[i + 1])) return false;
      ++segments;
    } else if (!lower_digit(s[i]) && s[i] != '_') {
      return false;
    }
  }
  return segments >= min_segments;
}

}  // namespace

TEST_SUITE("launcher_options") {

TEST_CASE("every format has options, each named once, with a source") {
  std::map<std::string, int> per_format;
  std::set<std::pair<std::string, std::string>> seen;
  for (const LauncherOption& o : launcher_options()) {
    CAPTURE(o.name);
    ++per_format[o.format];
    CHECK(seen.insert({o.format, o.name}).second);
    CHECK(std::string(o.source).size() > 10);
  }
  CHECK(per_format.size() == 6);
  for (const char* f : {"megatron", "megatron-deepspeed", "torchtitan", "torchtitan-toml", "deepspeed", "nemo"})
    CHECK(per_format[f] > 0);
}

TEST_CASE("every name is spelled with its framework's convention") {
  for (const LauncherOption& o : launcher_options()) {
    const std::string f = o.format, n = o.name;
    CAPTURE(f);
    CAPTURE(n);
    if (f == "megatron") CHECK(megatron_style(n));
    // DeepSpeed's own launcher arguments (--deepspeed_config) keep its underscore spelling.
    else if (f == "megatron-deepspeed") CHECK((megatron_style(n) || n == "--deepspeed_config"));
    else if (f == "deepspeed" || f == "torchtitan") CHECK(dotted_snake(n, 1));  // top-level keys and section.key
    else CHECK(dotted_snake(n, 2));  // torchtitan v0.2.2 section.key, Megatron-Bridge ConfigContainer paths
  }
  // The checkers themselves.
  CHECK(megatron_style("--micro-batch-size"));
  CHECK_FALSE(megatron_style("--micro_batch_size"));
  CHECK_FALSE(megatron_style("-micro-batch-size"));
  CHECK_FALSE(megatron_style("--micro--batch"));
  CHECK(dotted_snake("parallelism.tensor_parallel_degree", 2));
  CHECK_FALSE(dotted_snake("parallelism..degree", 2));
  CHECK_FALSE(dotted_snake("Parallelism.degree", 2));
  CHECK_FALSE(dotted_snake("train_batch_size", 2));
}

TEST_CASE("is_launcher_option: by format and exact name") {
  CHECK(is_launcher_option("megatron", "--micro-batch-size"));
  CHECK(is_launcher_option("torchtitan", "parallelism.tensor_parallel_degree"));
  CHECK(is_launcher_option("deepspeed", "zero_optimization.stage"));
  CHECK(is_launcher_option("nemo", "model.tensor_model_parallel_size"));
  CHECK_FALSE(is_launcher_option("nemo", "--micro-batch-size"));      // another format's name
  CHECK_FALSE(is_launcher_option("megatron", "--micro-batch"));        // a prefix
  CHECK_FALSE(is_launcher_option("megatron", "--micro-batch-sizes"));  // a misspelling
  CHECK_FALSE(is_launcher_option("slurm", "--micro-batch-size"));      // an unknown format
}

}
