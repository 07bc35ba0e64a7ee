#include "modeler/io/json_object_reader.h"

#include <algorithm>
#include <cctype>
#include <cmath>

#include "modeler/io/yaml_reader.h"
#include "modeler/problems.h"

namespace shardplan::io {

using nlohmann::json;

int json_line_of(std::string_view text, const std::vector<std::string>& path) {
  size_t pos = 0;
  for (const std::string& key : path) {
    const std::string quoted = "\"" + key + "\"";
    for (;;) {
      pos = text.find(quoted, pos);
      if (pos == std::string_view::npos) return 0;
      size_t after = pos + quoted.size();
      while (after < text.size() && std::isspace(static_cast<unsigned char>(text[after]))) ++after;
      pos += quoted.size();
      if (after < text.size() && text[after] == ':') break;  // a key, not a string value
    }
  }
  return 1 + static_cast<int>(std::count(text.begin(), text.begin() + static_cast<long>(pos), '\n'));
}

std::string json_type_name(const json& v) {
  if (v.is_null()) return "null";
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  if (v.is_number()) return v.dump();
  if (v.is_string()) return "\"" + v.get<std::string>() + "\"";
  return v.is_array() ? "an array" : "an object";
}

ObjectReader::ObjectReader(const json& obj, std::string_view text, const std::string& file,
                           std::vector<std::string> path, const std::map<std::string, std::string>* aliases)
    : obj_(obj), text_(text), file_(file), path_(std::move(path)), aliases_(aliases) {
  if (!obj_.is_object()) fail_here("expected an object, got " + json_type_name(obj_));
}

const json* ObjectReader::get(const std::string& key) {
  known_.insert(key);
  return has(key) ? &obj_.at(key) : nullptr;
}

void ObjectReader::allow(std::initializer_list<const char*> keys) {
  for (const char* k : keys) known_.insert(k);
}

std::optional<int> ObjectReader::opt_int(const std::string& key, int min, int max) {
  const json* v = get(key);
  if (!v) return std::nullopt;
  if (!v->is_number_integer() && !(v->is_number_float() && std::floor(v->get<double>()) == v->get<double>()))
    fail(key, "expected an integer, got " + json_type_name(*v));
  const double d = v->get<double>();
  if (d < min || d > max)
    fail(key, "expected " +
                  (max == std::numeric_limits<int>::max() ? "at least " + std::to_string(min)
                                                          : std::to_string(min) + " to " + std::to_string(max)) +
                  ", got " + v->dump());
  return static_cast<int>(d);
}

std::optional<double> ObjectReader::opt_number(const std::string& key, double min, double max, bool min_open) {
  const json* v = get(key);
  if (!v) return std::nullopt;
  if (!v->is_number()) fail(key, "expected a number, got " + json_type_name(*v));
  const double d = v->get<double>();
  if (d < min || d > max || (min_open && d <= min))
    fail(key, "expected a number in " + std::string(min_open ? "(" : "[") + num(min) + ", " + num(max) + "], got " +
                  v->dump());
  return d;
}

std::optional<bool> ObjectReader::opt_bool(const std::string& key) {
  const json* v = get(key);
  if (!v) return std::nullopt;
  if (!v->is_boolean()) fail(key, "expected true or false, got " + json_type_name(*v));
  return v->get<bool>();
}

std::optional<std::string> ObjectReader::opt_string(const std::string& key) {
  const json* v = get(key);
  if (!v) return std::nullopt;
  if (!v->is_string()) fail(key, "expected a string, got " + json_type_name(*v));
  return v->get<std::string>();
}

std::optional<std::string> ObjectReader::opt_choice(const std::string& key, const std::vector<std::string>& choices) {
  const std::optional<std::string> s = opt_string(key);
  if (!s || std::find(choices.begin(), choices.end(), *s) != choices.end()) return s;
  std::string list;
  for (const std::string& c : choices) list += (list.empty() ? "" : ", ") + c;
  const std::string near = closest_match(*s, choices);
  fail(key,
       "expected one of " + list + ", got \"" + *s + "\"" + (near.empty() ? "" : "; did you mean '" + near + "'?"));
}

ObjectReader ObjectReader::object(const std::string& key) {
  const json* v = get(key);
  if (!v) fail_here("missing required key '" + key_path(key) + "'");
  return ObjectReader(*v, text_, file_, child(key), aliases_);
}

void ObjectReader::finish() const {
  std::vector<std::string> known(known_.begin(), known_.end());
  for (const auto& [key, value] : obj_.items()) {
    if (known_.count(key)) continue;
    std::string near;
    if (aliases_) {
      const auto alias = aliases_->find(key);
      if (alias != aliases_->end() && known_.count(alias->second)) near = alias->second;
    }
    if (near.empty()) near = closest_match(key, known);
    fail(key, "unknown key" + (near.empty() ? "" : ", did you mean '" + near + "'?"));
  }
}

std::string ObjectReader::key_path(const std::string& key) const {
  std::string s;
  for (const std::string& p : path_) s += p + ".";
  return s + key;
}

void ObjectReader::fail(const std::string& key, const std::string& message) const {
  throw ConfigError(at(child(key)) + key_path(key) + ": " + message);
}

void ObjectReader::fail_here(const std::string& message) const {
  std::string p;
  for (const std::string& s : path_) p += (p.empty() ? "" : ".") + s;
  throw ConfigError(at(path_) + (p.empty() ? "" : p + ": ") + message);
}

std::vector<std::string> ObjectReader::child(const std::string& key) const {
  std::vector<std::string> c = path_;
  c.push_back(key);
  return c;
}

std::string ObjectReader::at(const std::vector<std::string>& path) const {
  const int line = path.empty() ? 0 : json_line_of(text_, path);
  return file_ + (line > 0 ? ":" + std::to_string(line) : "") + ": ";
}

}  // namespace shardplan::io
