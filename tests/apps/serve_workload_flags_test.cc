#include "apps/serve_workload_flags.h"

#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "modeler/problems.h"

using namespace shardplan;
using namespace shardplan::cli;

namespace {
std::vector<serving::LengthPair> lengths_of(const std::string& text) {
  std::istringstream is(text);
  return parse_lengths(is, "l.txt");
}

std::string error_of(const std::string& text) {
  try {
    lengths_of(text);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST_CASE("--request-rate: a positive number or inf, anything else names the flag") {
  CHECK(parse_request_rate("4") == 4.0);
  CHECK(parse_request_rate("0.5") == 0.5);
  CHECK(std::isinf(parse_request_rate("inf")));
  CHECK(std::isinf(parse_request_rate("INF")));
  for (const char* bad : {"0", "-1", "abc", "4x", "", "nan"}) {
    INFO(bad);
    CHECK_THROWS_WITH_AS(parse_request_rate(bad), doctest::Contains("--request-rate"), ConfigError);
  }
}

TEST_CASE("--lengths file: pairs a line, blank or comma separated, comments skipped; bad lines named") {
  const auto l = lengths_of("# input output\n100 20\n\n  7,3\n2048\t512\n");
  REQUIRE(l.size() == 3);
  CHECK(l[0].input_len == 100);
  CHECK(l[0].output_len == 20);
  CHECK(l[1].input_len == 7);
  CHECK(l[2].output_len == 512);
  CHECK(error_of("100 20\n100\n").find("l.txt:2: expected two integers") != std::string::npos);
  CHECK(error_of("100 20 5\n").find("l.txt:1:") != std::string::npos);
  CHECK(error_of("0 20\n").find("at least 1 token") != std::string::npos);
  CHECK(error_of("a b\n").find("l.txt:1:") != std::string::npos);
  CHECK(error_of("# nothing\n").find("no requests") != std::string::npos);
}

TEST_CASE("open-loop workload: fixed lengths x 1000 by default, the file's rows, flags that need a rate") {
  WorkloadFlags f;
  CHECK(make_open_loop_workload(f, 10, 5).lengths.empty());  // closed loop: nothing to build
  f.seed = 3;
  CHECK_THROWS_WITH_AS(make_open_loop_workload(f, 10, 5), doctest::Contains("need --request-rate"), ConfigError);
  f.request_rate = "4";
  const serving::OpenLoopWorkload fixed = make_open_loop_workload(f, 10, 5);
  CHECK(fixed.lengths.size() == 1000);
  CHECK(fixed.lengths[999].input_len == 10);
  CHECK(fixed.rate == 4.0);
  CHECK(fixed.seed == 3);
  const std::string path = "serve_workload_flags_test_lengths.txt";
  {
    std::ofstream os(path);
    os << "1 2\n3 4\n5 6\n";
  }
  f.lengths = path;
  CHECK(make_open_loop_workload(f, 10, 5).lengths.size() == 3);
  f.num_prompts = 2;
  const auto two = make_open_loop_workload(f, 10, 5).lengths;
  REQUIRE(two.size() == 2);
  CHECK(two[1].input_len == 3);
  f.num_prompts = 4;
  CHECK_THROWS_WITH_AS(make_open_loop_workload(f, 10, 5), doctest::Contains("has 3 requests"), ConfigError);
  std::remove(path.c_str());
  f.num_prompts = 0;
  f.lengths = "no-such-lengths-file.txt";
  CHECK_THROWS_WITH_AS(make_open_loop_workload(f, 10, 5), doctest::Contains("cannot read"), ConfigError);
}

TEST_CASE("--request-rate and --concurrency exclude each other; --lengths and --input-len too") {
  auto parses = [](std::vector<std::string> args) {
    CLI::App app;
    WorkloadFlags f;
    int c = 1, in = 1, out = 1;
    CLI::Option* co = app.add_option("--concurrency", c);
    CLI::Option* io = app.add_option("--input-len", in);
    CLI::Option* oo = app.add_option("--output-len", out);
    add_workload_flags(&app, &f, co, io, oo);
    std::vector<std::string> reversed(args.rbegin(), args.rend());
    try {
      app.parse(reversed);
    } catch (const CLI::ParseError&) {
      return false;
    }
    return true;
  };
  CHECK(parses({"--request-rate", "4", "--seed", "2"}));
  CHECK_FALSE(parses({"--request-rate", "4", "--concurrency", "8"}));
  CHECK_FALSE(parses({"--lengths", "f.txt", "--input-len", "8"}));
  CHECK_FALSE(parses({"--num-prompts", "0"}));
}
