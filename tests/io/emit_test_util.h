// Helpers the emitter tests share: sample estimates, a torchtitan-flavored model, and readers of the emitted
// formats (script flags, TOML keys, JSON/YAML leaves).
#pragma once

#include <doctest/doctest.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "modeler/io/emit.h"
#include "modeler/io/launcher_options.h"
#include "modeler/problems.h"
#include "tests/modeler/test_fixtures.h"

namespace shardplan::test::emit_util {

inline Estimate sample(int tp, int pp, int vpp, int dp, int zero, Recompute rec, Dtype prec) {
  Estimate e;
  e.plan = test::plan_of(tp, pp, dp, 1, 1, 64, 4096);
  e.plan.vpp = vpp;
  e.plan.zero = zero;
  e.plan.sequence_parallel = tp > 1;
  e.plan.tp_comm_overlap = false;
  e.plan.recompute = rec;
  e.plan.precision = prec;
  e.time.compute = Seconds(1);
  e.tokens_per_s_per_gpu = 1000;
  return e;
}

inline std::vector<Estimate> samples() {
  return {sample(1, 1, 1, 16, 3, Recompute::none, Dtype::bf16), sample(2, 4, 2, 2, 1, Recompute::selective, Dtype::fp8),
          sample(4, 4, 1, 1, 0, Recompute::full, Dtype::fp16), sample(2, 1, 1, 8, 2, Recompute::full, Dtype::bf16)};
}

inline const char* profile_of(io::EmitFormat f) {
  const char* p = io::emit_profile(f);
  return p ? p : "megatron-lm";
}

inline std::string emit(io::EmitFormat f, const Estimate& e, const ModelDesc& m = test::llama3_8b(),
                        System sys = test::synthetic_system(16)) {
  return io::emit_plan(f, io::EmitInput{e, sys, m.name, profile_of(f), m.layers, m.moe.has_value(), &m});
}

/// The flags of a launch script's argument arrays (lines "    --flag ..." between NAME=( and )).
inline std::vector<std::string> script_flags(const std::string& text) {
  std::vector<std::string> flags;
  std::istringstream in(text);
  std::string line;
  bool inside = false;
  while (std::getline(in, line)) {
    if (line.size() > 2 && line.back() == '(' && line[line.size() - 2] == '=')
      inside = line != "LAUNCHER=(";
    else if (line == ")")
      inside = false;
    else if (inside && line.rfind("    --", 0) == 0)
      flags.push_back(line.substr(4, line.find(' ', 4) - 4));
  }
  return flags;
}

/// The value of `flag` in a script ("--tp \"2\"" -> "2"), "" for a bare flag, "<absent>" when missing.
inline std::string flag_value(const std::string& text, const std::string& flag) {
  const std::string key = "    " + flag;
  size_t at = 0;
  while ((at = text.find(key, at)) != std::string::npos) {
    const size_t end = text.find('\n', at);
    const std::string rest = text.substr(at + key.size(), end - at - key.size());
    if (rest.empty()) return "";
    if (rest[0] == ' ') {
      std::string v = rest.substr(1);
      v.erase(std::remove(v.begin(), v.end(), '"'), v.end());
      return v;
    }
    at = end;
  }
  return "<absent>";
}

/// Dotted names of every leaf of a JSON/YAML tree.
inline void leaves(const nlohmann::json& j, const std::string& prefix, std::vector<std::string>* out) {
  if (!j.is_object()) {
    out->push_back(prefix);
    return;
  }
  for (const auto& [k, v] : j.items()) leaves(v, prefix.empty() ? k : prefix + "." + k, out);
}
inline void leaves(const YAML::Node& n, const std::string& prefix, std::vector<std::string>* out) {
  if (!n.IsMap()) {
    out->push_back(prefix);
    return;
  }
  for (const auto& kv : n)
    leaves(kv.second, prefix.empty() ? kv.first.as<std::string>() : prefix + "." + kv.first.as<std::string>(), out);
}

/// A TOML syntax check for the subset the torchtitan emitter writes: comments, [table] headers, and
/// key = value lines with integers, booleans, basic strings and arrays of strings. Returns "table.key" names;
/// fails the test on any other line or a repeated key.
inline std::vector<std::string> toml_keys(const std::string& text) {
  static const std::regex table(R"(\[([A-Za-z0-9_.]+)\])");
  static const std::regex pair(R"(([A-Za-z0-9_]+) = (-?[0-9]+|true|false|"[^"\\]*"|\[("[^"\\]*"(, "[^"\\]*")*)?\]|)"
                               R"(\[\[("[^"\\]*"(, "[^"\\]*")*)?\](, \[("[^"\\]*"(, "[^"\\]*")*)?\])*\]))");
  std::vector<std::string> keys;
  std::string current;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    std::smatch m;
    if (line.empty() || line[0] == '#') continue;
    if (std::regex_match(line, m, table)) {
      current = m[1];
      continue;
    }
    INFO("TOML line: " << line);
    REQUIRE(std::regex_match(line, m, pair));
    REQUIRE(!current.empty());
    const std::string key = current + "." + m[1].str();
    CHECK(std::find(keys.begin(), keys.end(), key) == keys.end());
    keys.push_back(key);
  }
  return keys;
}

}  // namespace shardplan::test::emit_util
