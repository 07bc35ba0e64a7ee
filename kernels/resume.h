// Resuming an interrupted calibration: a result row is identified by its benchmark and its parameters, so a re-run
// skips every (benchmark, params) already in the JSON-lines file. Header-only: the benchmarks (built without the
// shardplan libraries) and calibrate/ (which tests it) share this one definition.
#pragma once

#include <nlohmann/json.hpp>

#include <istream>
#include <set>
#include <string>

namespace shardplan::bench {

/// "benchmark|{params}" with params serialized in key order (nlohmann objects are sorted), so equal parameters
/// written by different runs give equal keys.
inline std::string row_key(const std::string& benchmark, const nlohmann::json& params) {
  return benchmark + "|" + params.dump();
}

/// Keys of the result rows in a JSON-lines stream. Context records and lines that do not parse (a line cut short
/// by an interrupted run) are ignored: the row they would have held is simply measured again.
inline std::set<std::string> done_keys(std::istream& in) {
  std::set<std::string> keys;
  std::string line;
  while (std::getline(in, line)) {
    const nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!j.is_object() || j.value("record", "") != "result") continue;
    if (!j.contains("benchmark") || !j.contains("params") || !j["benchmark"].is_string()) continue;
    keys.insert(row_key(j["benchmark"].get<std::string>(), j["params"]));
  }
  return keys;
}

}  // namespace shardplan::bench
