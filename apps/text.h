// Small text helpers shared by the CLI's reporters and flag parsers.
#pragma once

#include <string>
#include <vector>

namespace shardplan::cli {

/// printf-style formatting of one number ("%.1f").
std::string fmt(const char* format, double v);
/// "a,b,,c" -> {"a", "b", "c"}.
std::vector<std::string> split_commas(const std::string& s);

}  // namespace shardplan::cli
