#include "apps/text.h"

#include <doctest/doctest.h>

#include <chrono>
#include <cstdio>
#include <string>

using namespace shardplan::cli;

TEST_CASE("fmt formats one number") {
  CHECK(fmt("%.1f", 12.345) == "12.3");
  CHECK(fmt("%+.1f", 2.0) == "+2.0");
}

TEST_CASE("split_commas drops empty items") {
  CHECK(split_commas("a,b,,c") == std::vector<std::string>{"a", "b", "c"});
  CHECK(split_commas("") == std::vector<std::string>{});
  CHECK(split_commas("8") == std::vector<std::string>{"8"});
}

TEST_CASE("positive_number accepts numbers above zero and names the bad value") {
  const CLI::Validator v = positive_number();
  std::string ok = "8", half = "0.5", zero = "0", word = "x", neg = "-1";
  CHECK(v(ok).empty());
  CHECK(v(half).empty());
  CHECK(v(zero) == "must be a positive number, got '0'");
  CHECK(v(word) == "must be a positive number, got 'x'");
  CHECK(v(neg) == "must be a positive number, got '-1'");
  std::string inf = "inf";
  CHECK(v(inf) == "must be a positive number, got 'inf'");
}

TEST_CASE("non_negative_number accepts 0 and above, names the bad value, and refuses inf and nan") {
  const CLI::Validator v = non_negative_number();
  std::string zero = "0", price = "2.5", neg = "-3", inf = "inf", nan = "nan", word = "two";
  CHECK(v(zero).empty());
  CHECK(v(price).empty());
  CHECK(v(neg) == "must be a finite number of 0 or more, got '-3'");
  CHECK(v(inf) == "must be a finite number of 0 or more, got 'inf'");
  CHECK(v(nan) == "must be a finite number of 0 or more, got 'nan'");
  CHECK(v(word) == "must be a finite number of 0 or more, got 'two'");
}

TEST_CASE("utc_date_today is the UTC calendar day as YYYY-MM-DD") {
  // The day by another route (the C++20 calendar over system_clock), before and after, so a call that straddles
  // midnight still matches one of them.
  const auto day = [] {
    const std::chrono::year_month_day d{std::chrono::floor<std::chrono::days>(std::chrono::system_clock::now())};
    char buf[16];
    std::snprintf(buf, sizeof buf, "%04d-%02u-%02u", static_cast<int>(d.year()), static_cast<unsigned>(d.month()),
                  static_cast<unsigned>(d.day()));
    return std::string(buf);
  };
  const std::string before = day();
  const std::string today = utc_date_today();
  const std::string after = day();
  CHECK(today.size() == 10);
  CHECK((today == before || today == after));
}
