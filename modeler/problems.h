// User-facing errors (bad input, infeasible plans) and internal invariant checks: the two error channels.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

namespace shardplan {

/// Why a plan cannot run. Search counts rejections by `code`; the message prints the actual values.
struct Problem {
  std::string code;     // stable, short reason key, e.g. "tp_divides_heads", "oom"
  std::string message;  // "tp (8) does not divide heads (12)"
};
using Problems = std::vector<Problem>;

/// Bad user input: a file, line and key path when the input came from a file. Exit code 2 in the CLI.
class ConfigError : public std::runtime_error {
 public:
  explicit ConfigError(const std::string& what) : std::runtime_error(what) {}
};

/// A well-formed request that cannot be met (no plan fits, constraints contradict). Exit code 2 in the CLI.
class Infeasible : public std::runtime_error {
 public:
  explicit Infeasible(const std::string& what) : std::runtime_error(what) {}
};

/// A number as problem messages print it: "%g" by default ("0.5", "1e+06"), or the given printf format.
std::string num(double v, const char* format = "%g");

/// Joins problems into one message, one per line, for exceptions and the CLI.
std::string join_problems(const Problems& problems);

/// Internal invariant: stays on in Release. Throws std::logic_error (exit 1: a bug, not bad input).
void check_invariant(bool ok, const char* what, const char* file, int line);
#define SHARDPLAN_CHECK(cond) ::shardplan::check_invariant(static_cast<bool>(cond), #cond, __FILE__, __LINE__)

}  // namespace shardplan
