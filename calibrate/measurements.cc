#include "calibrate/measurements.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>

#include "modeler/problems.h"

namespace shardplan::calibrate {
namespace {

using nlohmann::json;

[[noreturn]] void fail(const std::string& where, const std::string& msg) { throw ConfigError(where + ": " + msg); }

std::string num_text(double v) { return shardplan::num(v); }

double num(const json& j, const char* key, const std::string& where) {
  const auto it = j.find(key);
  if (it == j.end() || !it->is_number()) fail(where, std::string("missing number '") + key + "'");
  return it->get<double>();
}

/// An optional number: absent or null gives `fallback`; any other type is an error naming the key (nlohmann's
/// value() would throw type_error, an internal error to the user).
double opt_num(const json& j, const char* key, double fallback, const std::string& where) {
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  if (!it->is_number()) fail(where, std::string(key) + ": expected a number, got " + it->dump());
  return it->get<double>();
}

std::string opt_str(const json& j, const char* key, const std::string& fallback, const std::string& where) {
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  if (!it->is_string()) fail(where, std::string(key) + ": expected a string, got " + it->dump());
  return it->get<std::string>();
}

std::string str(const json& j, const char* key, const std::string& where) {
  const auto it = j.find(key);
  if (it == j.end() || !it->is_string()) fail(where, std::string("missing string '") + key + "'");
  return it->get<std::string>();
}

Dtype parse_dtype(const std::string& s, const std::string& where) {
  for (int i = 0; i < kNumDtypes; ++i)
    if (s == kDtypeNames[i]) return static_cast<Dtype>(i);
  fail(where, "params.dtype: unknown dtype '" + s + "'");
}

std::string context_summary(const json& j, const std::string& where) {
  std::string s = opt_str(j, "benchmark", "?", where) + " (" + opt_str(j, "backend", "?", where) + ")";
  for (const char* key : {"gpu", "driver", "cuda", "nccl", "mpi", "date"})
    if (j.contains(key) && !j[key].is_null())
      s += std::string(", ") + key + " " + (j[key].is_string() ? j[key].get<std::string>() : j[key].dump());
  if (j.contains("hosts") && j["hosts"].is_array()) {
    std::vector<std::string> uniq;
    for (const auto& h : j["hosts"])
      if (h.is_string() && std::find(uniq.begin(), uniq.end(), h.get<std::string>()) == uniq.end())
        uniq.push_back(h.get<std::string>());
    s += ", hosts";
    for (const auto& h : uniq) s += " " + h;
  }
  return s;
}

Measurement parse_row(const json& j, const std::string& where) {
  Measurement m;
  m.where = where;
  const std::string bench = str(j, "benchmark", where);
  m.backend = str(j, "backend", where);
  m.time_s = num(j, "time_s", where);
  m.time_min_s = opt_num(j, "time_min_s", m.time_s, where);
  m.time_max_s = opt_num(j, "time_max_s", m.time_s, where);
  m.flops = opt_num(j, "flops", 0.0, where);
  m.bytes = opt_num(j, "bytes", 0.0, where);
  const double wrong = num(j, "wrong", where);
  const auto pit = j.find("params");
  if (pit == j.end() || !pit->is_object()) fail(where, "missing object 'params'");
  const json& p = *pit;
  if (wrong < 0) fail(where, "wrong: expected a count of at least 0, got " + num_text(wrong));
  if (wrong > 0)  // printed as %g: 1e300 does not fit an integer
    fail(where, bench + " " + p.dump() + " produced " + num_text(wrong) +
                    " wrong results; refusing to fit incorrect measurements (fix the cause and re-run this row)");
  if (!(m.time_s > 0)) fail(where, "time_s must be positive");
  if (bench == "gemm") {
    m.bench = Bench::gemm;
    const std::string dtype = str(p, "dtype", where);
    // fp8_block: an fp8 GEMM with block scales (gemm_model.h Fp8Scaling), fitted into a table of its own.
    m.block_scaled = dtype == "fp8_block";
    m.dtype = m.block_scaled ? Dtype::fp8 : parse_dtype(dtype, where);
    m.m = num(p, "m", where);
    m.n = num(p, "n", where);
    m.k = num(p, "k", where);
    for (const auto& [key, v] : {std::pair{"m", m.m}, std::pair{"n", m.n}, std::pair{"k", m.k}})
      if (!(v >= 1))
        fail(where, std::string("params.") + key + ": a GEMM dimension must be at least 1, got " + num_text(v));
    if (m.flops <= 0) m.flops = 2 * m.m * m.n * m.k;
  } else if (bench == "attention") {
    m.bench = Bench::attention;
    m.kernel = str(j, "kernel", where);
    const std::string dir = str(p, "dir", where);
    if (dir != "fwd" && dir != "bwd") fail(where, "params.dir: expected fwd or bwd, got '" + dir + "'");
    m.backward = dir == "bwd";
    if (!(m.flops > 0)) fail(where, "attention row needs positive 'flops'");
  } else if (bench == "memory") {
    m.bench = Bench::memory;
    m.op = str(p, "op", where);
    if (!(m.bytes > 0)) fail(where, "memory row needs positive 'bytes'");
  } else if (bench == "collective") {
    m.bench = Bench::collective;
    const std::string name = str(p, "collective", where);
    const auto c = collective_from_name(name);
    if (!c) fail(where, "params.collective: unknown collective '" + name + "'");
    m.collective = *c;
    const double nranks = num(p, "nranks", where), stride = opt_num(p, "stride", 1.0, where);
    if (!(nranks >= 2 && nranks <= (1 << 24) && nranks == std::floor(nranks)))
      fail(where,
           "params.nranks: a collective needs a whole number of ranks from 2 to 16777216, got " + num_text(nranks));
    if (!(stride >= 1 && stride <= (1 << 24) && stride == std::floor(stride)))
      fail(where, "params.stride: expected a whole number from 1 to 16777216, got " + num_text(stride));
    m.nranks = static_cast<int>(nranks);
    m.stride = static_cast<int>(stride);
    m.bytes = num(p, "bytes", where);
    if (!(m.bytes > 0)) fail(where, "params.bytes: a collective row needs positive bytes, got " + num_text(m.bytes));
  } else {
    fail(where, "unknown benchmark '" + bench + "' (expected gemm, attention, memory or collective)");
  }
  return m;
}

}  // namespace

RawFile parse_jsonl(std::string_view text, const std::string& filename) {
  RawFile out;
  size_t pos = 0;
  int line_no = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    const bool last = end == std::string_view::npos;
    if (last) end = text.size();
    const std::string line(text.substr(pos, end - pos));
    pos = end + 1;
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string where = filename + ":" + std::to_string(line_no);
    const json j = json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded()) {
      if (last) continue;  // cut short by an interrupted run; `calibrate run` measures it again
      fail(where, "not a JSON object");
    }
    if (!j.is_object()) fail(where, "not a JSON object");
    const std::string record = opt_str(j, "record", "", where);
    if (const auto g = j.find("gpu"); record == "context" && g != j.end() && g->is_string())
      out.gpus.emplace_back(g->get<std::string>(), where);
    if (record == "context") out.contexts.push_back(context_summary(j, where));
    else if (record == "result") out.rows.push_back(parse_row(j, where));
    else fail(where, "expected \"record\": \"context\" or \"result\"");
  }
  return out;
}

}  // namespace shardplan::calibrate
