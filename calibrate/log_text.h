// Reading log text: the lines as the frameworks wrote them (without ANSI colours, launcher prefixes, carriage
// returns), numbers after a key, whole-value parses with file:line errors, and the key lines of YAML-style dumps.
// Shared by the log parsers of import-log (log_import.h). No std::regex (nccl_tests_log.h says why).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace shardplan::calibrate::logtext {

/// "FILE:LINE: ".
std::string at(const std::string& file, int line);
/// A value in messages.
inline std::string show(const std::string& v) { return "'" + v + "'"; }
inline std::string show(bool v) { return v ? "true" : "false"; }
inline std::string show(int v) { return std::to_string(v); }

/// The lines of `text` (CRLF accepted) with ANSI escapes and launcher prefixes removed.
std::vector<std::string> clean_lines(std::string_view text);
/// The number right after `key` in `line` (spaces skipped, thousands commas accepted); nullopt if absent.
std::optional<double> number_after(std::string_view line, std::string_view key);
/// A whole-value parse of an integer / boolean / number, or a ConfigError "FILE:LINE: KEY: expected ...".
int to_int(const std::string& v, const std::string& file, int line, const std::string& key);
bool to_bool(const std::string& v, const std::string& file, int line, const std::string& key);
double to_number(const std::string& v, const std::string& file, int line, const std::string& key);
/// A count read from a log line (an iteration number, a batch, a vocabulary): a whole number in [0, 2^31), else
/// a ConfigError "FILE:LINE: WHAT: expected a whole number, got V".
int to_count(double v, const std::string& file, int line, const std::string& what);
/// Python's and YAML's spellings of "no value": None, null, ~, "".
bool is_none(const std::string& v);
/// `v` without surrounding quotes ('x' or "x").
std::string unquote(const std::string& v);

/// One "key: value" line of an indented YAML-style dump (OmegaConf to_yaml in NeMo and llm-foundry, Megatron-Bridge's
/// configuration summary); `section` is the key path of the enclosing mappings ("model", "model.data") or the name
/// of the Bridge "[model]" header above it.
struct KeyLine {
  std::string section, key, value;
  int line = 0;
};
/// Every YAML-style key line of the log (others are skipped), with its section.
std::vector<KeyLine> key_lines(const std::vector<std::string>& lines);

}  // namespace shardplan::calibrate::logtext
