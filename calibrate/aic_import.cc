#include "calibrate/aic_import.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

#include "modeler/collectives_factors.h"
#include "modeler/problems.h"

namespace shardplan::calibrate {
namespace {

using nlohmann::json;

/// A CSV without quoted fields (the export writes none): header names -> column, rows split on commas.
class Csv {
 public:
  Csv(std::string_view text, std::string file) : file_(std::move(file)) {
    size_t pos = 0;
    int line = 0;
    while (pos < text.size()) {
      size_t end = text.find('\n', pos);
      if (end == std::string_view::npos) end = text.size();
      std::string_view row = text.substr(pos, end - pos);
      pos = end + 1;
      ++line;
      if (!row.empty() && row.back() == '\r') row.remove_suffix(1);
      if (row.empty()) continue;
      std::vector<std::string> cells;
      size_t start = 0;
      for (size_t i = 0; i <= row.size(); ++i)
        if (i == row.size() || row[i] == ',') {
          cells.emplace_back(row.substr(start, i - start));
          start = i + 1;
        }
      if (header_.empty()) {
        for (size_t i = 0; i < cells.size(); ++i) header_[cells[i]] = i;
        continue;
      }
      if (cells.size() != header_.size())
        throw ConfigError(file_ + ":" + std::to_string(line) + ": expected " + std::to_string(header_.size()) +
                          " columns, got " + std::to_string(cells.size()));
      rows_.push_back(std::move(cells));
      lines_.push_back(line);
    }
  }
  size_t size() const { return rows_.size(); }
  size_t column(const std::string& name) const {
    const auto it = header_.find(name);
    if (it == header_.end()) throw ConfigError(file_ + ":1: missing column '" + name + "'");
    return it->second;
  }
  const std::string& cell(size_t row, size_t col) const { return rows_[row][col]; }
  double number(size_t row, size_t col) const {
    const std::string& s = rows_[row][col];
    char* end = nullptr;
    const double v = std::strtod(s.c_str(), &end);
    if (s.empty() || *end != '\0' || !std::isfinite(v))
      throw ConfigError(where(row) + ": column " + std::to_string(col + 1) + ": expected a number, got '" + s + "'");
    return v;
  }
  std::string where(size_t row) const { return file_ + ":" + std::to_string(lines_[row]); }

 private:
  std::string file_;
  std::map<std::string, size_t> header_;
  std::vector<std::vector<std::string>> rows_;
  std::vector<int> lines_;
};

json result(const char* bench, const std::string& backend, double t_s, double t_min_s, double t_max_s) {
  return {{"record", "result"}, {"benchmark", bench}, {"backend", backend}, {"time_s", t_s},
          {"time_min_s", t_min_s}, {"time_max_s", t_max_s}, {"wrong", 0}};
}

double positive_time(const Csv& csv, size_t row, size_t col) {
  const double v = csv.number(row, col);
  if (!(v > 0)) throw ConfigError(csv.where(row) + ": latency must be positive, got " + num(v));
  return v * 1e-6;
}

void import_gemm(const Csv& csv, const std::string& system, AicImport& out) {
  const size_t sys = csv.column("system"), dt = csv.column("dtype"), cm = csv.column("m"), cn = csv.column("n"),
               ck = csv.column("k"), med = csv.column("latency_us_median"), lo = csv.column("latency_us_min"),
               hi = csv.column("latency_us_max");
  for (size_t r = 0; r < csv.size(); ++r) {
    if (csv.cell(r, sys) != system) continue;
    const std::string& dtype = csv.cell(r, dt);
    if (dtype != "bf16" && dtype != "fp8" && dtype != "fp8_block" && dtype != "nvfp4") continue;  // int8/int4
    const double m = csv.number(r, cm), n = csv.number(r, cn), k = csv.number(r, ck);
    json j = result("gemm", "aic " + csv.cell(r, csv.column("frameworks")), positive_time(csv, r, med),
                    positive_time(csv, r, lo), positive_time(csv, r, hi));
    j["flops"] = 2.0 * m * n * k;
    j["params"] = {{"dtype", dtype == "nvfp4" ? "fp4" : dtype}, {"m", m}, {"n", n}, {"k", k}};
    out.lines.push_back(j.dump());
    ++out.gemm;
  }
}

void import_attention(const Csv& csv, const std::string& system, const std::string& kernel, AicImport& out) {
  const size_t sys = csv.column("system"), scope = csv.column("scope"), dt = csv.column("dtype"),
               kv = csv.column("kv_dtype"), b = csv.column("batch"), s = csv.column("seq_len"),
               h = csv.column("heads"), kvh = csv.column("kv_heads"), d = csv.column("head_dim"),
               win = csv.column("window_size"), med = csv.column("latency_us_median"),
               lo = csv.column("latency_us_min"), hi = csv.column("latency_us_max");
  for (size_t r = 0; r < csv.size(); ++r) {
    if (csv.cell(r, sys) != system || csv.cell(r, scope) != "kernel" || csv.cell(r, dt) != "bf16" ||
        csv.cell(r, kv) != "bf16" || csv.number(r, d) != 128 || csv.number(r, win) != 0)
      continue;
    const double batch = csv.number(r, b), seq = csv.number(r, s), heads = csv.number(r, h);
    json j = result("attention", "aic " + csv.cell(r, csv.column("frameworks")), positive_time(csv, r, med),
                    positive_time(csv, r, lo), positive_time(csv, r, hi));
    j["kernel"] = kernel;
    // Causal: QK^T and PV over the lower triangle of the s x s square (the README's and layer_cost.cc's count).
    j["flops"] = 2.0 * batch * heads * 128.0 * seq * seq;
    j["params"] = {{"dir", "fwd"}, {"batch", batch}, {"seq_len", seq}, {"heads", heads},
                   {"kv_heads", csv.number(r, kvh)}, {"head_dim", 128}};
    out.lines.push_back(j.dump());
    ++out.attention;
  }
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

void import_nccl(const Csv& csv, const std::string& system, AicImport& out) {
  const size_t kind = csv.column("kind"), sys = csv.column("system"), coll = csv.column("collective"),
               g = csv.column("gpus"), nodes = csv.column("nodes"), dt = csv.column("dtype"),
               bytes = csv.column("bytes"), lat = csv.column("latency_us");
  std::map<std::tuple<std::string, int, double>, std::vector<double>> by_key;
  for (size_t r = 0; r < csv.size(); ++r) {
    if (csv.cell(r, kind) != "nccl" || csv.cell(r, sys) != system || csv.cell(r, dt) != "fp16" ||
        csv.number(r, nodes) != 1)
      continue;
    const auto c = collective_from_name(csv.cell(r, coll));
    if (!c) throw ConfigError(csv.where(r) + ": unknown collective '" + csv.cell(r, coll) + "'");
    by_key[{collective_name(*c), static_cast<int>(csv.number(r, g)), csv.number(r, bytes)}].push_back(
        positive_time(csv, r, lat));
  }
  for (const auto& [key, times] : by_key) {
    const auto& [name, gpus, size] = key;
    json j = result("collective", "nccl-tests (aic)", median(times), *std::min_element(times.begin(), times.end()),
                    *std::max_element(times.begin(), times.end()));
    j["bytes"] = size;
    j["params"] = {{"collective", name}, {"nranks", gpus}, {"bytes", size}};
    out.lines.push_back(j.dump());
    ++out.collectives;
  }
}

}  // namespace

std::optional<std::string> aic_system(const std::string& gpu) {
  static const std::map<std::string, std::string> kNames = {
      {"a100-sxm4-80gb", "a100_sxm"}, {"h100-sxm5-80gb", "h100_sxm"}, {"h200-sxm-141gb", "h200_sxm"},
      {"b200", "b200_sxm"},           {"gb200", "gb200"},             {"b300", "b300_sxm"},
      {"gb300", "gb300"},             {"l40s", "l40s"}};
  const auto it = kNames.find(gpu);
  if (it == kNames.end()) return std::nullopt;
  return it->second;
}

AicImport import_aic(const AicTables& tables, const std::string& system, const std::string& attention_kernel) {
  AicImport out;
  out.lines.push_back(json{{"record", "context"},
                           {"benchmark", "aic-import"},
                           {"backend", "aiconfigurator"},
                           {"gpu", system},
                           {"date", "2026-08-21"},
                           {"source", "NVIDIA AIConfigurator 095f58a51c4ca8e61b66ec108d86f223f8d559ce (Apache-2.0), "
                                      "latency_us_median"}}
                          .dump());
  if (!tables.gemm.empty()) import_gemm(Csv(tables.gemm, tables.gemm_file), system, out);
  if (!tables.attention_prefill.empty())
    import_attention(Csv(tables.attention_prefill, tables.attention_file), system, attention_kernel, out);
  if (!tables.nccl.empty()) import_nccl(Csv(tables.nccl, tables.nccl_file), system, out);
  if (out.gemm + out.attention + out.collectives == 0)
    throw ConfigError("no measured rows of AIC system '" + system + "' in " + tables.gemm_file + ", " +
                      tables.attention_file + " or " + tables.nccl_file);
  return out;
}

}  // namespace shardplan::calibrate
