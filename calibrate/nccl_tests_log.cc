#include "calibrate/nccl_tests_log.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <map>
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

/// A data row: first two tokens integers (size, count) and at least 8 trailing numeric-or-N/A tokens. A row whose
/// numbers parse but are not finite and non-negative ("inf", "nan", "1e999", a negative time) sets `*bad` to the
/// offending token, so that its run is refused rather than the row silently skipped.
std::optional<NcclTestsRow> parse_row(const std::string& line, bool error_column, std::string* bad) {
  auto t = tokens(line);
  // -S 1 appends "YYYY-MM-DD HH:MM:SS"; drop it.
  if (t.size() >= 2 && t[t.size() - 2].size() == 10 && t[t.size() - 2][4] == '-' &&
      t.back().find(':') != std::string::npos)
    t.resize(t.size() - 2);
  if (t.size() < 10) return std::nullopt;
  double size = 0, count = 0;
  if (!to_number(t[0], &size) || !to_number(t[1], &count)) return std::nullopt;
  double v[8];
  const std::string* worst = nullptr;
  for (int i = 0; i < 8; ++i) {
    const std::string& s = t[t.size() - 8 + static_cast<size_t>(i)];
    if (s == "N/A") v[i] = 0;
    else if (!to_number(s, &v[i])) return std::nullopt;
    if (!std::isfinite(v[i]) || v[i] < 0) worst = &s;
  }
  if (!std::isfinite(size) || size < 0) worst = &t[0];
  if (worst) *bad = *worst;
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

bool is_word_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }
bool is_name_char(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }

/// "all_reduce" from a line naming "all_reduce_perf" (a path, the command, "Collective test starting: ..."), or "".
/// A name is letters and underscores before "_perf" and a word boundary after it; names longer than 64 characters
/// are not binaries, which also keeps the scan linear on long words.
std::string perf_name(const std::string& line) {
  constexpr size_t kMaxName = 64;
  for (size_t at = line.find("_perf"); at != std::string::npos; at = line.find("_perf", at + 1)) {
    const size_t after = at + 5;
    if (after < line.size() && is_word_char(line[after])) continue;
    size_t b = at;
    while (b > 0 && at - b <= kMaxName && is_name_char(line[b - 1])) --b;
    if (b == at || at - b > kMaxName) continue;
    return line.substr(b, at - b);
  }
  return "";
}

/// "#  Rank  0 Group  0 Pid   6899 on host device  0 [0000:04:00] NVIDIA H100 80GB HBM3" (older logs have no
/// Group): the host after "on", the device name after the bus id's ']'.
NcclTestsRank rank_line(const std::string& line, const std::vector<std::string>& t) {
  NcclTestsRank r;
  for (size_t i = 2; i + 1 < t.size(); ++i)
    if (t[i] == "on") {
      r.host = t[i + 1];
      break;
    }
  const size_t bracket = line.find(']');
  if (bracket != std::string::npos) {
    const size_t b = line.find_first_not_of(' ', bracket + 1);
    const size_t e = line.find_last_not_of(' ');
    if (b != std::string::npos && e >= b) r.device = line.substr(b, e - b + 1);
  }
  return r;
}

/// A launcher's tag at the start of a line: `key` identifies the process ("" when there is none), `length` the
/// characters to drop.
struct Prefix {
  std::string key;
  size_t length = 0;
};

Prefix launcher_prefix(std::string_view line) {
  Prefix p;
  size_t i = 0;
  if (!line.empty() && line[0] == '[') {
    // Open MPI / PRRTE: "[jobid,rank]", then optionally "[host:pid]", "<stdout>", ":"; MPICH-style "[rank] ".
    const size_t close = line.find(']');
    if (close == std::string_view::npos || close < 2 || close > 128) return p;
    const std::string_view id = line.substr(1, close - 1);
    const bool digits_only = id.find_first_not_of("0123456789") == std::string_view::npos;
    if (!digits_only && id.find(',') == std::string_view::npos) return p;
    for (const char c : id)
      if (!(std::isalnum(static_cast<unsigned char>(c)) || c == ',' || c == '@' || c == '.' || c == '-' || c == '_'))
        return p;
    i = close + 1;
    if (i < line.size() && line[i] == '[') {
      const size_t c2 = line.find(']', i);
      if (c2 == std::string_view::npos || c2 - i > 256) return p;
      i = c2 + 1;
    }
    if (i < line.size() && line[i] == '<') {
      const size_t c3 = line.find('>', i);
      if (c3 == std::string_view::npos || c3 - i > 16) return p;
      i = c3 + 1;
    }
    if (i < line.size() && line[i] == ':') ++i;
    if (i < line.size() && line[i] == ' ' && (digits_only || line[i - 1] == ':')) ++i;
    p.key = std::string(id);
    // An id without a rank part ("[1]" alone, then text) from a rank-prefix format: rank only.
    p.length = i;
    return p;
  }
  // Slurm srun --label: the task number, right-aligned, then ": ".
  while (i < line.size() && i < 8 && line[i] == ' ') ++i;
  const size_t digits = i;
  while (i < line.size() && i - digits < 7 && std::isdigit(static_cast<unsigned char>(line[i]))) ++i;
  if (i == digits || i >= line.size() || line[i] != ':') return p;
  if (i + 1 < line.size() && line[i + 1] != ' ') return p;
  p.key = "task " + std::string(line.substr(digits, i - digits));
  p.length = std::min(line.size(), i + 2);
  return p;
}

}  // namespace

std::vector<NcclTestsRun> parse_nccl_tests(std::string_view text) {
  // Per launcher prefix: the run being read and the state of the header it is in.
  struct Stream {
    int run = -1;  // index into `runs`
    std::string pending_binary;
    bool in_devices = false;
  };
  std::vector<NcclTestsRun> runs;
  std::map<std::string, Stream> streams;
  int line_no = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view raw = text.substr(pos, end - pos);
    pos = end + 1;
    ++line_no;
    while (!raw.empty() && raw.back() == '\r') raw.remove_suffix(1);
    const Prefix prefix = launcher_prefix(raw);
    const std::string line(raw.substr(prefix.length));
    Stream& st = streams[prefix.key];
    const auto start_run = [&](int at) {
      runs.emplace_back();
      runs.back().line = at;
      runs.back().stream = prefix.key;
      runs.back().binary = st.pending_binary;
      if (!st.pending_binary.empty())
        runs.back().collective = collective_from_name(st.pending_binary.substr(0, st.pending_binary.size() - 5));
      st.run = static_cast<int>(runs.size()) - 1;
    };
    const size_t first = line.find_first_not_of(' ');
    const bool is_comment = first != std::string::npos && line[first] == '#';
    if (const std::string name = perf_name(line); !name.empty() && line.find("concluded") == std::string::npos) {
      st.pending_binary = name + "_perf";
      if (st.run >= 0) {
        NcclTestsRun& r = runs[static_cast<size_t>(st.run)];
        if (r.rows.empty() && r.binary.empty()) {
          r.binary = st.pending_binary;
          r.collective = collective_from_name(name);
        }
      }
    }
    if (!is_comment) {
      st.in_devices = false;
      if (st.run < 0) continue;
      NcclTestsRun& r = runs[static_cast<size_t>(st.run)];
      std::string bad;
      if (auto row = parse_row(line, r.error_column, &bad)) {
        if (!bad.empty()) {  // the run is refused (check_usable); its rows stay finite for every other reader
          if (r.unreadable.empty())
            r.unreadable = "line " + std::to_string(line_no) + " has \"" + bad +
                           "\" where a finite, non-negative number belongs: \"" + line + "\"";
          continue;
        }
        if (row->wrong > 0 && r.failure.empty())
          r.failure = "line " + std::to_string(line_no) + " reports wrong results: \"" + line + "\"";
        r.rows.push_back(*row);
      }
      continue;
    }
    const auto t = tokens(line);
    if (line.find("# nThread") != std::string::npos) {
      start_run(line_no);
      st.in_devices = false;
    } else if (line.find("Using devices") != std::string::npos) {
      st.in_devices = true;
    } else if (st.in_devices && t.size() > 2 && t[1] == "Rank") {
      if (st.run >= 0) {
        NcclTestsRun& r = runs[static_cast<size_t>(st.run)];
        r.ranks.push_back(rank_line(line, t));
        r.nranks = static_cast<int>(r.ranks.size());
      }
    } else if (t.size() > 3 && t[1] == "size" && t[2] == "count") {
      // Column header: a new run if the current one already has rows (several runs without "# nThread" lines).
      if (st.run < 0 || !runs[static_cast<size_t>(st.run)].rows.empty()) start_run(line_no);
      runs[static_cast<size_t>(st.run)].error_column = t.back() == "error";
      st.in_devices = false;
    } else if (line.find("Out of bounds values") != std::string::npos && line.find("FAILED") != std::string::npos) {
      if (st.run >= 0)
        runs[static_cast<size_t>(st.run)].failure = "line " + std::to_string(line_no) + ": \"" + line + "\"";
    }
  }
  // Runs in order of their first line, whichever process printed them.
  std::stable_sort(runs.begin(), runs.end(),
                   [](const NcclTestsRun& a, const NcclTestsRun& b) { return a.line < b.line; });
  return runs;
}

size_t launcher_prefix_length(std::string_view line) { return launcher_prefix(line).length; }

std::vector<std::string> run_hosts(const NcclTestsRun& run) {
  std::vector<std::string> hosts;
  for (const NcclTestsRank& r : run.ranks)
    if (!r.host.empty() && std::find(hosts.begin(), hosts.end(), r.host) == hosts.end()) hosts.push_back(r.host);
  return hosts;
}

void check_usable(const NcclTestsRun& run, const std::string& filename, int ranks_override) {
  const std::string name = run.binary.empty() ? "the run" : run.binary + " run";
  const std::string where = filename + ":" + std::to_string(run.line) + ": ";
  if (!run.failure.empty())
    throw ConfigError(where + name + " failed its correctness check (" + run.failure +
                      "); its timings cannot be used: fix the run and measure again");
  if (!run.unreadable.empty())
    throw ConfigError(where + name + ": " + run.unreadable + "; its timings cannot be used");
  if (!run.collective)
    throw ConfigError(where + name + ": cannot tell which collective this is (no '<name>_perf' line before it)");
  if (run.nranks <= 0 && ranks_override <= 0)
    throw ConfigError(where + name + ": the log lists no devices; pass --ranks N");
  if (run.nranks == 1)
    throw ConfigError(where + name +
                      ": ran on a single rank, and a collective needs two or more (nccl-tests built "
                      "without MPI=1 and started by mpirun runs one independent 1-GPU test per "
                      "process; rebuild it with MPI=1)");
  if (run.rows.empty()) throw ConfigError(where + name + ": no data rows");
}

}  // namespace shardplan::calibrate
