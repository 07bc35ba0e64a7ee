#include "calibrate/nccl_tests_log.h"

#include <cstdlib>
#include <regex>
#include <sstream>

#include "modeler/problems.h"

namespace shardplan::calibrate {
namespace {

std::vector<std::string> tokens(const std::string& line) {
  std::istringstream ss(line);
  std::vector<std::string> out;
  for (std::string t; ss >> t;) out.push_back(t);
  return out;
}

bool to_number(const std::string& t, double* v) {
  if (t.empty()) return false;
  char* end = nullptr;
  *v = std::strtod(t.c_str(), &end);
  return end == t.c_str() + t.size();
}

/// A data row: first two tokens integers (size, count) and at least 8 trailing numeric-or-N/A tokens.
std::optional<NcclTestsRow> parse_row(const std::string& line, bool error_column) {
  auto t = tokens(line);
  // -S 1 appends "YYYY-MM-DD HH:MM:SS"; drop it.
  if (t.size() >= 2 && t[t.size() - 2].size() == 10 && t[t.size() - 2][4] == '-' &&
      t.back().find(':') != std::string::npos)
    t.resize(t.size() - 2);
  if (t.size() < 10) return std::nullopt;
  double size = 0, count = 0;
  if (!to_number(t[0], &size) || !to_number(t[1], &count)) return std::nullopt;
  double v[8];
  for (int i = 0; i < 8; ++i) {
    const std::string& s = t[t.size() - 8 + static_cast<size_t>(i)];
    if (s == "N/A") v[i] = 0;
    else if (!to_number(s, &v[i])) return std::nullopt;
  }
  NcclTestsRow r;
  r.bytes = size;
  r.time_us = v[0];
  r.algbw_gbps = v[1];
  r.busbw_gbps = v[2];
  // Older logs print a max error; nccl-tests counted it as a failure above its tolerance, which the footer
  // reports. A relative error of order 1 means garbage, so treat >= 1e-2 as wrong.
  r.wrong = error_column ? (v[3] >= 1e-2 ? 1 : 0) : v[3];
  r.ip_time_us = v[4];
  if (!error_column && v[7] > 0) r.wrong += v[7];
  if (error_column && v[7] >= 1e-2) r.wrong += 1;
  return r;
}

}  // namespace

std::vector<NcclTestsRun> parse_nccl_tests(std::string_view text) {
  static const std::regex kBinary(R"(([A-Za-z_]+)_perf\b)");
  std::vector<NcclTestsRun> runs;
  std::string pending_binary;
  bool have_run = false, in_devices = false;
  std::istringstream in{std::string(text)};
  std::string line;
  int line_no = 0;
  const auto start_run = [&](int at) {
    runs.emplace_back();
    runs.back().line = at;
    runs.back().binary = pending_binary;
    if (!pending_binary.empty())
      runs.back().collective = collective_from_name(pending_binary.substr(0, pending_binary.size() - 5));
    have_run = true;
  };
  while (std::getline(in, line)) {
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    std::smatch m;
    const bool is_comment = line.find_first_not_of(' ') != std::string::npos && line[line.find_first_not_of(' ')] == '#';
    if (std::regex_search(line, m, kBinary) && line.find("concluded") == std::string::npos) {
      pending_binary = m[1].str() + "_perf";
      if (have_run && runs.back().rows.empty() && runs.back().binary.empty()) {
        runs.back().binary = pending_binary;
        runs.back().collective = collective_from_name(m[1].str());
      }
    }
    if (!is_comment) {
      in_devices = false;
      if (!have_run) continue;
      if (auto r = parse_row(line, runs.back().error_column)) {
        if (r->wrong > 0 && runs.back().failure.empty())
          runs.back().failure = "line " + std::to_string(line_no) + " reports wrong results: \"" + line + "\"";
        runs.back().rows.push_back(*r);
      }
      continue;
    }
    const auto t = tokens(line);
    if (line.find("# nThread") != std::string::npos) {
      start_run(line_no);
      in_devices = false;
    } else if (line.find("Using devices") != std::string::npos) {
      in_devices = true;
    } else if (in_devices && t.size() > 2 && t[1] == "Rank") {
      if (have_run) ++runs.back().nranks;
    } else if (t.size() > 3 && t[1] == "size" && t[2] == "count") {
      // Column header: a new run if the current one already has rows (several runs without "# nThread" lines).
      if (!have_run || !runs.back().rows.empty()) start_run(line_no);
      runs.back().error_column = t.back() == "error";
      in_devices = false;
    } else if (line.find("Out of bounds values") != std::string::npos && line.find("FAILED") != std::string::npos) {
      if (have_run) runs.back().failure = "line " + std::to_string(line_no) + ": \"" + line + "\"";
    }
  }
  return runs;
}

void check_usable(const NcclTestsRun& run, const std::string& filename, int ranks_override) {
  const std::string name = run.binary.empty() ? "the run" : run.binary + " run";
  const std::string where = filename + ":" + std::to_string(run.line) + ": ";
  if (!run.failure.empty())
    throw ConfigError(where + name + " failed its correctness check (" + run.failure +
                      "); its timings cannot be used: fix the run and measure again");
  if (!run.collective)
    throw ConfigError(where + name + ": cannot tell which collective this is (no '<name>_perf' line before it)");
  if (run.nranks <= 0 && ranks_override <= 0)
    throw ConfigError(where + name + ": the log lists no devices; pass --ranks N");
  if (run.rows.empty()) throw ConfigError(where + name + ": no data rows");
}

}  // namespace shardplan::calibrate
