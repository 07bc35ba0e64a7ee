// Strict YAML reading: every error names file:line, the key path, what was expected and what was found; unknown
// keys are rejected with a "did you mean" suggestion (ninja's SpellcheckString idea). The only yaml-cpp user
// besides the per-file parsers in this folder.
#pragma once

#include <yaml-cpp/yaml.h>

#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "modeler/curve.h"
#include "modeler/problems.h"

namespace shardplan::io {

/// Parses YAML text; a syntax error becomes ConfigError "file:line:col: message".
YAML::Node parse_yaml(std::string_view text, const std::string& filename);
/// Reads a whole file; a missing or unreadable file is a ConfigError naming it.
std::string read_file(const std::string& path);

/// The closest of `known` to `key` by edit distance, or "" when none is close enough to suggest.
std::string closest_match(std::string_view key, const std::vector<std::string>& known);

/// Reads one YAML mapping strictly. Each get() marks the key as known; finish() rejects every key that no get()
/// asked for. Values are checked for type and range and errors point at the value's line.
class MapReader {
 public:
  MapReader(const YAML::Node& node, std::string file, std::string path);

  bool has(const std::string& key) const;  // present and not null
  double number(const std::string& key);                          // required
  std::optional<double> opt_number(const std::string& key);       // absent or null -> nullopt
  double positive(const std::string& key);                        // required, > 0
  /// Absent or null -> nullopt; otherwise a finite number in [lo, hi] (user numbers that feed divisions and casts).
  std::optional<double> opt_number_in(const std::string& key, double lo, double hi);
  std::optional<double> opt_positive(const std::string& key);
  int positive_int(const std::string& key);
  std::optional<int> opt_positive_int(const std::string& key);
  std::optional<int> opt_int(const std::string& key, int min, int max);
  bool boolean(const std::string& key);
  std::optional<bool> opt_boolean(const std::string& key);
  std::string string(const std::string& key);
  std::optional<std::string> opt_string(const std::string& key);
  /// A string that must be one of `choices`.
  std::string choice(const std::string& key, const std::vector<std::string>& choices);
  std::optional<std::string> opt_choice(const std::string& key, const std::vector<std::string>& choices);
  /// A nested mapping (required / optional), read by a child reader with the key path extended.
  MapReader map(const std::string& key);
  std::optional<MapReader> opt_map(const std::string& key);
  /// A sequence node (may be empty); the caller iterates it.
  YAML::Node sequence(const std::string& key);
  YAML::Node opt_node(const std::string& key);  // marks the key as known; null node when absent
  /// An efficiency curve: {points: [[x, y], ...], policy: clamp|error, source: "..."} or a bare number with
  /// a sibling "<key>_source" is not accepted: every table names its source.
  Curve curve(const std::string& key);
  std::optional<Curve> opt_curve(const std::string& key);

  /// Throws ConfigError for the first unknown key, with a suggestion.
  void finish() const;

  const std::string& file() const { return file_; }
  std::string key_path(const std::string& key) const;
  /// ConfigError at `key`'s line: "file:line: path.key: message".
  [[noreturn]] void fail(const std::string& key, const std::string& message) const;
  [[noreturn]] void fail_here(const std::string& message) const;

 private:
  YAML::Node lookup(const std::string& key);
  YAML::Node node_;
  std::string file_;
  std::string path_;
  std::vector<std::string> known_;
};

/// "file:line: " for a node (yaml-cpp marks are 0-based).
std::string where(const YAML::Node& node, const std::string& file);
/// Reads a curve from a node; `what` names it in errors.
Curve parse_curve(const YAML::Node& node, const std::string& file, const std::string& what);

}  // namespace shardplan::io
