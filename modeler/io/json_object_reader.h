// A strict reader of one JSON object (nlohmann::json) for hand-editable input files: each get() marks its key as
// known, finish() rejects the rest with the nearest known key as a suggestion, and every error reads
// "file:line: path.key: message" (nlohmann keeps no positions, so the line is found by scanning the text).
// Used by plan_json.cc for plan files; the YAML counterpart is yaml_reader.h.
#pragma once

#include <initializer_list>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace shardplan::io {

/// 1-based line of the key at `path` (each element a key, outermost first), found by scanning for each key in
/// turn after the previous one; 0 when not found. Plan files are small objects whose keys appear once per level,
/// so the scan finds the key the path names.
int json_line_of(std::string_view text, const std::vector<std::string>& path);

/// A value as an error message shows it: null, true/false, the number, the quoted string, "an array", "an object".
std::string json_type_name(const nlohmann::json& v);

class ObjectReader {
 public:
  /// `aliases` (optional, kept by pointer, passed to child objects) maps a key users type by mistake to the key
  /// meant; finish() suggests the latter when it is a known key here.
  ObjectReader(const nlohmann::json& obj, std::string_view text, const std::string& file,
               std::vector<std::string> path, const std::map<std::string, std::string>* aliases = nullptr);

  bool has(const std::string& key) const { return obj_.contains(key) && !obj_.at(key).is_null(); }
  /// Marks `key` known; the value, or nullptr when absent or null.
  const nlohmann::json* get(const std::string& key);
  void allow(std::initializer_list<const char*> keys);

  std::optional<int> opt_int(const std::string& key, int min, int max = std::numeric_limits<int>::max());
  std::optional<double> opt_number(const std::string& key, double min, double max, bool min_open = false);
  std::optional<bool> opt_bool(const std::string& key);
  std::optional<std::string> opt_string(const std::string& key);
  std::optional<std::string> opt_choice(const std::string& key, const std::vector<std::string>& choices);
  /// The object under a required `key`.
  ObjectReader object(const std::string& key);

  /// Throws for the first key no get() or allow() named.
  void finish() const;

  std::string key_path(const std::string& key) const;
  [[noreturn]] void fail(const std::string& key, const std::string& message) const;
  [[noreturn]] void fail_here(const std::string& message) const;
  const nlohmann::json& value() const { return obj_; }
  const std::set<std::string>& known() const { return known_; }

 private:
  std::vector<std::string> child(const std::string& key) const;
  std::string at(const std::vector<std::string>& path) const;

  const nlohmann::json& obj_;
  std::string_view text_;
  std::string file_;  // a copy: a reader may outlive a temporary file name
  std::vector<std::string> path_;
  const std::map<std::string, std::string>* aliases_;
  std::set<std::string> known_;
};

}  // namespace shardplan::io
