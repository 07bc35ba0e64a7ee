#include "modeler/io/yaml_reader.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

namespace shardplan::io {

YAML::Node parse_yaml(std::string_view text, const std::string& filename) {
  try {
    return YAML::Load(std::string(text));
  } catch (const YAML::ParserException& e) {
    throw ConfigError(filename + ":" + std::to_string(e.mark.line + 1) + ":" + std::to_string(e.mark.column + 1) +
                      ": invalid YAML: " + e.msg);
  }
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ConfigError(path + ": cannot open file");
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) throw ConfigError(path + ": read error");
  return ss.str();
}

namespace {
size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j)
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::string scalar_text(const YAML::Node& n) {
  if (n.IsScalar()) return "\"" + n.Scalar() + "\"";
  if (n.IsSequence()) return "a list";
  if (n.IsMap()) return "a mapping";
  return "null";
}
}  // namespace

std::string closest_match(std::string_view key, const std::vector<std::string>& known) {
  std::string best;
  size_t best_d = 0;
  for (const std::string& k : known) {
    const size_t d = edit_distance(key, k);
    if (best.empty() || d < best_d) {
      best = k;
      best_d = d;
    }
  }
  // Suggest plausible typos: up to half the key's length in edits (so 'hbm_bandwith_gbps' still finds
  // 'hbm_bw_gbps', 6 edits), at least two; the closest known key wins.
  const size_t limit = std::max<size_t>(2, key.size() / 2);
  return best_d <= limit ? best : std::string();
}

std::string where(const YAML::Node& node, const std::string& file) {
  const YAML::Mark m = node.Mark();
  if (m.line < 0) return file + ": ";
  return file + ":" + std::to_string(m.line + 1) + ": ";
}

MapReader::MapReader(const YAML::Node& node, std::string file, std::string path)
    : node_(node), file_(std::move(file)), path_(std::move(path)) {
  if (!node_.IsMap()) fail_here("expected a mapping, got " + scalar_text(node_));
}

std::string MapReader::key_path(const std::string& key) const { return path_.empty() ? key : path_ + "." + key; }

void MapReader::fail(const std::string& key, const std::string& message) const {
  const YAML::Node v = node_[key];
  throw ConfigError(where(v.IsDefined() ? v : node_, file_) + key_path(key) + ": " + message);
}

void MapReader::fail_here(const std::string& message) const {
  throw ConfigError(where(node_, file_) + (path_.empty() ? "" : path_ + ": ") + message);
}

YAML::Node MapReader::lookup(const std::string& key) {
  if (std::find(known_.begin(), known_.end(), key) == known_.end()) known_.push_back(key);
  return node_[key];
}

bool MapReader::has(const std::string& key) const {
  const YAML::Node v = node_[key];
  return v.IsDefined() && !v.IsNull();
}

std::optional<double> MapReader::opt_number(const std::string& key) {
  const YAML::Node v = lookup(key);
  if (!v.IsDefined() || v.IsNull()) return std::nullopt;
  double d = 0;
  if (!v.IsScalar() || !YAML::convert<double>::decode(v, d) || !std::isfinite(d))
    fail(key, "expected a number, got " + scalar_text(v));
  return d;
}

double MapReader::number(const std::string& key) {
  const auto v = opt_number(key);
  if (!v) fail_here("missing required key '" + key_path(key) + "'");
  return *v;
}

std::optional<double> MapReader::opt_positive(const std::string& key) {
  const auto v = opt_number(key);
  if (v && *v <= 0) fail(key, "expected a positive number, got " + node_[key].Scalar());
  return v;
}

std::optional<double> MapReader::opt_number_in(const std::string& key, double lo, double hi) {
  const auto v = opt_number(key);
  if (v && !(*v >= lo && *v <= hi))
    fail(key, "expected a number in [" + num(lo) + ", " + num(hi) + "], got " + node_[key].Scalar());
  return v;
}

double MapReader::positive(const std::string& key) {
  const auto v = opt_positive(key);
  if (!v) fail_here("missing required key '" + key_path(key) + "'");
  return *v;
}

std::optional<int> MapReader::opt_int(const std::string& key, int min, int max) {
  const YAML::Node v = lookup(key);
  if (!v.IsDefined() || v.IsNull()) return std::nullopt;
  long long i = 0;
  if (!v.IsScalar() || !YAML::convert<long long>::decode(v, i)) fail(key, "expected an integer, got " + scalar_text(v));
  if (i < min || i > max)
    fail(key, "expected an integer in [" + std::to_string(min) + ", " + std::to_string(max) + "], got " +
                  std::to_string(i));
  return static_cast<int>(i);
}

std::optional<int> MapReader::opt_positive_int(const std::string& key) { return opt_int(key, 1, 1 << 30); }

int MapReader::positive_int(const std::string& key) {
  const auto v = opt_positive_int(key);
  if (!v) fail_here("missing required key '" + key_path(key) + "'");
  return *v;
}

std::optional<bool> MapReader::opt_boolean(const std::string& key) {
  const YAML::Node v = lookup(key);
  if (!v.IsDefined() || v.IsNull()) return std::nullopt;
  bool b = false;
  if (!v.IsScalar() || !YAML::convert<bool>::decode(v, b)) fail(key, "expected true or false, got " + scalar_text(v));
  return b;
}

bool MapReader::boolean(const std::string& key) {
  const auto v = opt_boolean(key);
  if (!v) fail_here("missing required key '" + key_path(key) + "'");
  return *v;
}

std::optional<std::string> MapReader::opt_string(const std::string& key) {
  const YAML::Node v = lookup(key);
  if (!v.IsDefined() || v.IsNull()) return std::nullopt;
  if (!v.IsScalar()) fail(key, "expected a string, got " + scalar_text(v));
  return v.Scalar();
}

std::string MapReader::string(const std::string& key) {
  const auto v = opt_string(key);
  if (!v) fail_here("missing required key '" + key_path(key) + "'");
  return *v;
}

std::optional<std::string> MapReader::opt_choice(const std::string& key, const std::vector<std::string>& choices) {
  const auto v = opt_string(key);
  if (!v) return v;
  if (std::find(choices.begin(), choices.end(), *v) != choices.end()) return v;
  std::string list;
  for (const auto& c : choices) list += (list.empty() ? "" : ", ") + c;
  const std::string near = closest_match(*v, choices);
  fail(key,
       "expected one of " + list + ", got \"" + *v + "\"" + (near.empty() ? "" : "; did you mean '" + near + "'?"));
}

std::string MapReader::choice(const std::string& key, const std::vector<std::string>& choices) {
  const auto v = opt_choice(key, choices);
  if (!v) fail_here("missing required key '" + key_path(key) + "'");
  return *v;
}

std::optional<MapReader> MapReader::opt_map(const std::string& key) {
  const YAML::Node v = lookup(key);
  if (!v.IsDefined() || v.IsNull()) return std::nullopt;
  if (!v.IsMap()) fail(key, "expected a mapping, got " + scalar_text(v));
  return MapReader(v, file_, key_path(key));
}

MapReader MapReader::map(const std::string& key) {
  auto m = opt_map(key);
  if (!m) fail_here("missing required key '" + key_path(key) + "'");
  return *m;
}

YAML::Node MapReader::sequence(const std::string& key) {
  const YAML::Node v = lookup(key);
  if (!v.IsDefined() || v.IsNull()) fail_here("missing required key '" + key_path(key) + "'");
  if (!v.IsSequence()) fail(key, "expected a list, got " + scalar_text(v));
  return v;
}

YAML::Node MapReader::opt_node(const std::string& key) { return lookup(key); }

Curve parse_curve(const YAML::Node& node, const std::string& file, const std::string& what) {
  MapReader r(node, file, what);
  Curve c;
  c.source = r.string("source");
  if (c.source.empty()) r.fail("source", "every efficiency table names its source");
  c.policy = r.opt_choice("policy", {"clamp", "error"}).value_or("clamp") == "error" ? OutOfRange::error
                                                                                     : OutOfRange::clamp;
  const YAML::Node pts = r.sequence("points");
  if (pts.size() == 0) r.fail("points", "expected at least one [x, y] point");
  for (size_t i = 0; i < pts.size(); ++i) {
    const YAML::Node p = pts[i];
    double x = 0, y = 0;
    if (!p.IsSequence() || p.size() != 2 || !YAML::convert<double>::decode(p[0], x) ||
        !YAML::convert<double>::decode(p[1], y))
      throw ConfigError(where(p, file) + what + ".points[" + std::to_string(i) + "]: expected [x, y] numbers");
    if (x <= 0 || (!c.x.empty() && x <= c.x.back()))
      throw ConfigError(where(p, file) + what + ".points[" + std::to_string(i) +
                        "]: x must be positive and increasing");
    if (!(y > 0))
      throw ConfigError(where(p, file) + what + ".points[" + std::to_string(i) + "]: y must be positive");
    c.x.push_back(x);
    c.y.push_back(y);
  }
  r.finish();
  return c;
}

std::optional<Curve> MapReader::opt_curve(const std::string& key) {
  const YAML::Node v = lookup(key);
  if (!v.IsDefined() || v.IsNull()) return std::nullopt;
  return parse_curve(v, file_, key_path(key));
}

Curve MapReader::curve(const std::string& key) {
  auto c = opt_curve(key);
  if (!c) fail_here("missing required key '" + key_path(key) + "'");
  return *c;
}

void MapReader::finish() const {
  for (auto it = node_.begin(); it != node_.end(); ++it) {
    // A key must be a plain scalar: `[a, b]: 1` or `{a: 1}: 2` is named, not converted (yaml-cpp would throw).
    if (!it->first.IsScalar())
      throw ConfigError(where(it->first, file_) + (path_.empty() ? "" : path_ + ": ") + "expected a plain key, got " +
                        scalar_text(it->first));
    const std::string k = it->first.Scalar();
    if (std::find(known_.begin(), known_.end(), k) != known_.end()) continue;
    const std::string near = closest_match(k, known_);
    throw ConfigError(where(it->first, file_) + "unknown key '" + key_path(k) + "'" +
                      (near.empty() ? "" : ", did you mean '" + near + "'?"));
  }
}

}  // namespace shardplan::io
