// Small text helpers shared by the CLI's reporters and flag parsers.
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

namespace shardplan::cli {

/// printf-style formatting of one number ("%.1f").
std::string fmt(const char* format, double v);
/// "a,b,,c" -> {"a", "b", "c"}.
std::vector<std::string> split_commas(const std::string& s);
/// Today's date in UTC, YYYY-MM-DD: the day a calibrated profile records in its provenance.
std::string utc_date_today();

/// CLI11 check for flags that take a number > 0, with a short message ("must be a positive number, got '0'")
/// instead of CLI::PositiveNumber's range text.
CLI::Validator positive_number();
/// CLI11 check for a finite number >= 0 ("must be a finite number of 0 or more, got '-3'"); CLI11's own
/// NonNegativeNumber prints its range up to DBL_MAX in full, 300 digits.
CLI::Validator non_negative_number();
/// CLI11 check for a finite number in [lo, hi] ("must be a number in [0.1, 1e+06], got '1e-308'"): flags whose
/// values feed divisions and casts are bounded at the edge.
CLI::Validator number_in(double lo, double hi);

}  // namespace shardplan::cli
