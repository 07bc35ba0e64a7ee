#include "calibrate/log_text.h"

#include <algorithm>
#include <charconv>
#include <cmath>

#include "modeler/problems.h"

namespace shardplan::calibrate::logtext {

namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_ident_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_ident(char c) { return is_ident_start(c) || is_digit(c) || c == '.' || c == '-' || c == '/'; }

std::string trim(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && (s[b] == ' ' || s[b] == '\t')) ++b;
  while (e > b && (s[e - 1] == ' ' || s[e - 1] == '\t')) --e;
  return std::string(s.substr(b, e - b));
}

/// Removes ANSI escape sequences (ESC '[' parameters final-letter), as torchtitan's coloured step line has.
std::string strip_ansi(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '\x1b') {
      out += s[i];
      continue;
    }
    if (i + 1 < s.size() && s[i + 1] == '[') {
      size_t j = i + 2;
      while (j < s.size() && (is_digit(s[j]) || s[j] == ';')) ++j;
      i = j < s.size() ? j : s.size();  // the final letter
    }
  }
  return out;
}

/// Length of one launcher prefix at the start of `s`, 0 if none: "[rank3]:", "[default0]:" (torchrun --tee /
/// --log-line-prefix-template), "[1,0]<stdout>:" (Open MPI --tag-output), "12: " (srun --label).
size_t launcher_prefix(std::string_view s) {
  if (!s.empty() && s[0] == '[') {
    const size_t close = s.find(']');
    if (close == std::string_view::npos || close < 2) return 0;
    std::string_view in = s.substr(1, close - 1);
    for (std::string_view word : {std::string_view("rank"), std::string_view("default")})
      if (in.substr(0, word.size()) == word) in.remove_prefix(word.size());
    if (in.empty() || !std::all_of(in.begin(), in.end(), [](char c) { return is_digit(c) || c == ','; })) return 0;
    size_t p = close + 1;
    for (std::string_view tag : {std::string_view("<stdout>"), std::string_view("<stderr>")})
      if (s.substr(p, tag.size()) == tag) p += tag.size();
    return p < s.size() && s[p] == ':' ? p + 1 : 0;
  }
  size_t p = 0;
  while (p < s.size() && s[p] == ' ') ++p;
  const size_t digits = p;
  while (p < s.size() && is_digit(s[p])) ++p;
  if (p > digits && p + 1 < s.size() && s[p] == ':' && s[p + 1] == ' ') return p + 2;
  return 0;
}

}  // namespace

std::string at(const std::string& file, int line) { return file + ":" + std::to_string(line) + ": "; }

std::vector<std::string> clean_lines(std::string_view text) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    // A lone carriage return (a progress bar redrawing itself, as tqdm does) ends a line too; CRLF is one end.
    const size_t cr = text.substr(start, end - start).find('\r');
    if (cr != std::string_view::npos && start + cr + 1 < end) end = start + cr;
    std::string_view raw = text.substr(start, end - start);
    if (!raw.empty() && raw.back() == '\r') raw.remove_suffix(1);
    std::string line = strip_ansi(raw);
    for (size_t cut; (cut = launcher_prefix(line)) > 0;) line.erase(0, cut);
    lines.push_back(std::move(line));
    if (end == text.size()) break;
    start = end + 1;
  }
  if (!lines.empty() && lines.back().empty()) lines.pop_back();
  return lines;
}

std::optional<double> number_after(std::string_view line, std::string_view key) {
  const size_t at_key = line.find(key);
  if (at_key == std::string_view::npos) return std::nullopt;
  size_t p = at_key + key.size();
  while (p < line.size() && (line[p] == ' ' || line[p] == '=')) ++p;
  std::string digits;
  for (; p < line.size(); ++p) {
    const char c = line[p];
    if (c == ',' && p + 1 < line.size() && is_digit(line[p + 1]) && !digits.empty()) continue;  // 10,050
    if (!(is_digit(c) || c == '.' || c == '-' || c == '+' || c == 'e' || c == 'E')) break;
    digits += c;
  }
  if (digits.empty() || !std::any_of(digits.begin(), digits.end(), is_digit)) return std::nullopt;
  double v = 0;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
  if (ec != std::errc() || !std::isfinite(v)) return std::nullopt;
  (void)end;
  return v;
}

int to_int(const std::string& v, const std::string& file, int line, const std::string& key) {
  const std::string t = unquote(trim(v));
  int out = 0;
  const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), out);
  if (ec != std::errc() || end != t.data() + t.size() || t.empty())
    throw ConfigError(at(file, line) + key + ": expected an integer, got '" + v + "'");
  return out;
}

bool to_bool(const std::string& v, const std::string& file, int line, const std::string& key) {
  const std::string t = unquote(trim(v));
  if (t == "True" || t == "true") return true;
  if (t == "False" || t == "false") return false;
  throw ConfigError(at(file, line) + key + ": expected True or False, got '" + v + "'");
}

double to_number(const std::string& v, const std::string& file, int line, const std::string& key) {
  const std::string t = unquote(trim(v));
  double out = 0;
  const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), out);
  if (ec != std::errc() || end != t.data() + t.size() || t.empty() || !std::isfinite(out))
    throw ConfigError(at(file, line) + key + ": expected a number, got '" + v + "'");
  return out;
}

int to_count(double v, const std::string& file, int line, const std::string& what) {
  if (!(v >= 0 && v < 2147483648.0 && v == std::floor(v)))
    throw ConfigError(at(file, line) + what + ": expected a whole number, got " + std::to_string(v));
  return static_cast<int>(v);
}

bool is_none(const std::string& v) {
  const std::string t = trim(v);
  return t.empty() || t == "None" || t == "null" || t == "~";
}

std::string unquote(const std::string& v) {
  if (v.size() >= 2 && (v.front() == '\'' || v.front() == '"') && v.back() == v.front())
    return v.substr(1, v.size() - 2);
  return v;
}

std::vector<KeyLine> key_lines(const std::vector<std::string>& lines) {
  std::vector<KeyLine> out;
  std::string header;                                   // a Bridge "[model]" header
  std::vector<std::pair<size_t, std::string>> parents;  // (indent, key) of the enclosing mappings
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string& l = lines[i];
    if (trim(l).empty()) continue;
    size_t indent = 0;
    while (indent < l.size() && l[indent] == ' ') ++indent;
    if (indent == 0 && l[0] == '[') {
      const size_t close = l.find(']');
      const std::string name = close == std::string::npos ? "" : l.substr(1, close - 1);
      if (!name.empty() && std::all_of(name.begin(), name.end(), is_ident)) {
        header = name;
        parents.clear();
        continue;
      }
    }
    if (l.compare(indent, 2, "- ") == 0 || (l.size() == indent + 1 && l[indent] == '-')) continue;  // list item
    size_t p = indent;
    if (p >= l.size() || !is_ident_start(l[p])) {
      header.clear();
      parents.clear();
      continue;
    }
    while (p < l.size() && is_ident(l[p])) ++p;
    if (p >= l.size() || l[p] != ':' || (p + 1 < l.size() && l[p + 1] != ' ')) {
      header.clear();
      parents.clear();
      continue;
    }
    const std::string key = l.substr(indent, p - indent);
    std::string value = trim(std::string_view(l).substr(p + 1));
    // Megatron-Bridge's summary appends the Megatron-Core default: "2  (Mcore default: 1)".
    if (const size_t d = value.find("  (Mcore default:"); d != std::string::npos) value = trim(value.substr(0, d));
    while (!parents.empty() && parents.back().first >= indent) parents.pop_back();
    std::string section = header;
    for (const auto& [ind, k] : parents) section += (section.empty() ? "" : ".") + k;
    if (value.empty())
      parents.emplace_back(indent, key);
    else
      out.push_back({section, key, value, static_cast<int>(i + 1)});
  }
  return out;
}

}  // namespace shardplan::calibrate::logtext
