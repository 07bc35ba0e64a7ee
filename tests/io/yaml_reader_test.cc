#include "modeler/io/yaml_reader.h"

#include <doctest/doctest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "modeler/problems.h"

using namespace shardplan;
using namespace shardplan::io;

namespace {

/// A reader over a top-level mapping given as text, in file "t.yaml".
MapReader reader(const std::string& text, const std::string& path = "") {
  return MapReader(parse_yaml(text, "t.yaml"), "t.yaml", path);
}

}  // namespace

TEST_SUITE("yaml_reader") {

TEST_CASE("parse_yaml: a syntax error names file, line and column") {
  CHECK(parse_yaml("a: 1\n", "t.yaml")["a"].as<int>() == 1);
  CHECK_THROWS_WITH_AS(parse_yaml("a: 1\nb: [1, 2\n", "t.yaml"),
                       "t.yaml:3:1: invalid YAML: end of sequence flow not found", ConfigError);
  CHECK_THROWS_WITH_AS(parse_yaml("a: b: c\n", "t.yaml"), "t.yaml:1:5: invalid YAML: illegal map value",
                       ConfigError);
}

TEST_CASE("read_file: returns the contents; a missing file is named") {
  const std::filesystem::path p = std::filesystem::temp_directory_path() /
                                     ("shardplan_yaml_reader_test_" + std::to_string(::getpid()) + ".yaml");
  {
    std::ofstream out(p, std::ios::binary);
    out << "a: 1\nb: 2\n";
  }
  CHECK(read_file(p.string()) == "a: 1\nb: 2\n");
  std::filesystem::remove(p);
  CHECK_THROWS_WITH_AS(read_file(p.string()), (p.string() + ": cannot open file").c_str(), ConfigError);
}

TEST_CASE("closest_match suggests near names only") {
  const std::vector<std::string> known = {"hbm_bw_gbps", "hbm_capacity_gib", "sm_count"};
  CHECK(closest_match("hbm_bw_gpbs", known) == "hbm_bw_gbps");       // 2 edits (swap)
  CHECK(closest_match("hbm_capacity_gb", known) == "hbm_capacity_gib");  // 1 edit
  CHECK(closest_match("sm_cnt", known) == "sm_count");                // 2 edits, the floor of the limit
  CHECK(closest_match("latency_us", known) == "");                    // nothing close
  CHECK(closest_match("tp", {"pp", "cp"}) == "pp");                   // ties: the first listed
  CHECK(closest_match("anything", {}) == "");
}

TEST_CASE("number / opt_number") {
  auto r = reader("a: 1.5\nb: fast\nc: [1]\nd: null\ne: .nan\n");
  CHECK(r.number("a") == 1.5);
  CHECK_FALSE(r.opt_number("d").has_value());
  CHECK_FALSE(r.opt_number("zz").has_value());
  CHECK_THROWS_WITH_AS(r.number("b"), "t.yaml:2: b: expected a number, got \"fast\"", ConfigError);
  CHECK_THROWS_WITH_AS(r.number("c"), "t.yaml:3: c: expected a number, got a list", ConfigError);
  CHECK_THROWS_WITH_AS(r.number("e"), "t.yaml:5: e: expected a number, got \".nan\"", ConfigError);
  CHECK_THROWS_WITH_AS(r.number("d"), "t.yaml:1: missing required key 'd'", ConfigError);
  CHECK_THROWS_WITH_AS(r.number("zz"), "t.yaml:1: missing required key 'zz'", ConfigError);
}

TEST_CASE("positive / opt_positive") {
  auto r = reader("a: 2\nzero: 0\nneg: -2.5\n");
  CHECK(r.positive("a") == 2);
  CHECK(r.opt_positive("a") == 2);
  CHECK_FALSE(r.opt_positive("zz").has_value());
  CHECK_THROWS_WITH_AS(r.positive("zero"), "t.yaml:2: zero: expected a positive number, got 0", ConfigError);
  CHECK_THROWS_WITH_AS(r.opt_positive("neg"), "t.yaml:3: neg: expected a positive number, got -2.5", ConfigError);
  CHECK_THROWS_WITH_AS(r.positive("zz"), "t.yaml:1: missing required key 'zz'", ConfigError);
}

TEST_CASE("positive_int / opt_int ranges") {
  auto r = reader("n: 8\nfrac: 2.5\nzero: 0\nword: many\nz: 3\nbig: 4\n");
  CHECK(r.positive_int("n") == 8);
  CHECK(r.opt_positive_int("n") == 8);
  CHECK_FALSE(r.opt_positive_int("zz").has_value());
  CHECK_THROWS_WITH_AS(r.positive_int("frac"), "t.yaml:2: frac: expected an integer, got \"2.5\"", ConfigError);
  CHECK_THROWS_WITH_AS(r.positive_int("zero"), "t.yaml:3: zero: expected an integer in [1, 1073741824], got 0",
                       ConfigError);
  CHECK_THROWS_WITH_AS(r.positive_int("word"), "t.yaml:4: word: expected an integer, got \"many\"", ConfigError);
  CHECK_THROWS_WITH_AS(r.positive_int("zz"), "t.yaml:1: missing required key 'zz'", ConfigError);
  CHECK(r.opt_int("z", 0, 3) == 3);
  CHECK(r.opt_int("zero", 0, 3) == 0);
  CHECK_FALSE(r.opt_int("zz", 0, 3).has_value());
  CHECK_THROWS_WITH_AS(r.opt_int("big", 0, 3), "t.yaml:6: big: expected an integer in [0, 3], got 4", ConfigError);
}

TEST_CASE("boolean / opt_boolean") {
  auto r = reader("on: true\noff: false\nbad: maybe\nlist: [true]\n");
  CHECK(r.boolean("on"));
  CHECK_FALSE(r.boolean("off"));
  CHECK_FALSE(r.opt_boolean("zz").has_value());
  CHECK_THROWS_WITH_AS(r.boolean("bad"), "t.yaml:3: bad: expected true or false, got \"maybe\"", ConfigError);
  CHECK_THROWS_WITH_AS(r.opt_boolean("list"), "t.yaml:4: list: expected true or false, got a list", ConfigError);
  CHECK_THROWS_WITH_AS(r.boolean("zz"), "t.yaml:1: missing required key 'zz'", ConfigError);
}

TEST_CASE("string / opt_string / has") {
  auto r = reader("s: hello\nn: 12\nm: {a: 1}\nnul: null\n");
  CHECK(r.string("s") == "hello");
  CHECK(r.string("n") == "12");  // a scalar is a string
  CHECK_FALSE(r.opt_string("nul").has_value());
  CHECK(r.has("s"));
  CHECK_FALSE(r.has("nul"));
  CHECK_FALSE(r.has("zz"));
  CHECK_THROWS_WITH_AS(r.string("m"), "t.yaml:3: m: expected a string, got a mapping", ConfigError);
  CHECK_THROWS_WITH_AS(r.string("zz"), "t.yaml:1: missing required key 'zz'", ConfigError);
}

TEST_CASE("choice: one of a list, with a suggestion for a near miss") {
  auto r = reader("policy: clamp\ntypo: clmp\nfar: xyzzyq\n");
  const std::vector<std::string> choices = {"clamp", "error"};
  CHECK(r.choice("policy", choices) == "clamp");
  CHECK_FALSE(r.opt_choice("zz", choices).has_value());
  CHECK_THROWS_WITH_AS(r.choice("typo", choices),
                       "t.yaml:2: typo: expected one of clamp, error, got \"clmp\"; did you mean 'clamp'?",
                       ConfigError);
  CHECK_THROWS_WITH_AS(r.opt_choice("far", choices), "t.yaml:3: far: expected one of clamp, error, got \"xyzzyq\"",
                       ConfigError);
  CHECK_THROWS_WITH_AS(r.choice("zz", choices), "t.yaml:1: missing required key 'zz'", ConfigError);
}

TEST_CASE("map: nested readers extend the key path; errors point at the nested line") {
  auto r = reader("name: x\ngpu:\n  hbm: fast\n  sm: 4\nflat: 3\n");
  MapReader g = r.map("gpu");
  CHECK(g.key_path("sm") == "gpu.sm");
  CHECK(g.positive_int("sm") == 4);
  CHECK_THROWS_WITH_AS(g.number("hbm"), "t.yaml:3: gpu.hbm: expected a number, got \"fast\"", ConfigError);
  CHECK_THROWS_WITH_AS(g.number("bw"), "t.yaml:3: gpu: missing required key 'gpu.bw'", ConfigError);
  CHECK_THROWS_WITH_AS(r.map("flat"), "t.yaml:5: flat: expected a mapping, got \"3\"", ConfigError);
  CHECK_THROWS_WITH_AS(r.map("zz"), "t.yaml:1: missing required key 'zz'", ConfigError);
  CHECK_FALSE(r.opt_map("zz").has_value());
  CHECK(r.opt_map("gpu").has_value());
  CHECK_THROWS_WITH_AS(MapReader(parse_yaml("- 1\n", "t.yaml"), "t.yaml", "runs"),
                       "t.yaml:1: runs: expected a mapping, got a list", ConfigError);
}

TEST_CASE("sequence: required list") {
  auto r = reader("l: [1, 2]\nempty: []\nscalar: 3\n");
  CHECK(r.sequence("l").size() == 2);
  CHECK(r.sequence("empty").size() == 0);
  CHECK_THROWS_WITH_AS(r.sequence("scalar"), "t.yaml:3: scalar: expected a list, got \"3\"", ConfigError);
  CHECK_THROWS_WITH_AS(r.sequence("zz"), "t.yaml:1: missing required key 'zz'", ConfigError);
}

TEST_CASE("finish rejects keys no getter asked for, with a suggestion when one is near") {
  {
    auto r = reader("hbm_bw_gbps: 1\nhbm_bw_gpbs: 2\n");
    r.number("hbm_bw_gbps");
    CHECK_THROWS_WITH_AS(r.finish(), "t.yaml:2: unknown key 'hbm_bw_gpbs', did you mean 'hbm_bw_gbps'?",
                         ConfigError);
  }
  {
    auto r = reader("a: 1\nzzz: 2\n");
    r.number("a");
    CHECK_THROWS_WITH_AS(r.finish(), "t.yaml:2: unknown key 'zzz'", ConfigError);
  }
  {
    auto r = reader("gpu:\n  sm: 4\n  smm: 5\n");
    MapReader g = r.map("gpu");
    g.positive_int("sm");
    CHECK_THROWS_WITH_AS(g.finish(), "t.yaml:3: unknown key 'gpu.smm', did you mean 'sm'?", ConfigError);
    CHECK_NOTHROW(r.finish());
  }
  {
    // A key asked for but absent, or read through opt_node, counts as known.
    auto r = reader("a: 1\nextra: {x: 1}\n");
    r.opt_number("a");
    r.opt_number("b");
    r.opt_node("extra");
    CHECK_NOTHROW(r.finish());
  }
}

// L12 / L4 quote this exact message as the target behaviour; the edit distance between the two keys is 6 and the
// suggestion limit is max(2, len/3) = 5, so no suggestion is made.
TEST_CASE("the style guide's example typo gets a suggestion") {
  auto r = reader("hbm_bandwith_gbps: 3350\n");
  r.opt_number("hbm_bw_gbps");
  CHECK_THROWS_WITH_AS(r.finish(), "t.yaml:1: unknown key 'hbm_bandwith_gbps', did you mean 'hbm_bw_gbps'?",
                       ConfigError);
}

TEST_CASE("curve: points, policy and source") {
  auto r = reader(
      "eff:\n"
      "  source: test table\n"
      "  policy: error\n"
      "  points: [[1, 0.5], [10, 0.9]]\n"
      "dflt: {source: s, points: [[2, 1]]}\n");
  const Curve c = r.curve("eff");
  CHECK(c.x == std::vector<double>{1, 10});
  CHECK(c.y == std::vector<double>{0.5, 0.9});
  CHECK(c.policy == OutOfRange::error);
  CHECK(c.source == "test table");
  const auto d = r.opt_curve("dflt");
  REQUIRE(d.has_value());
  CHECK(d->policy == OutOfRange::clamp);
  CHECK_FALSE(r.opt_curve("zz").has_value());
  CHECK_THROWS_WITH_AS(r.curve("zz"), "t.yaml:1: missing required key 'zz'", ConfigError);
}

TEST_CASE("parse_curve: errors name the point") {
  auto bad = [](const std::string& body) {
    const YAML::Node n = parse_yaml("eff:\n" + body, "t.yaml");
    return parse_curve(n["eff"], "t.yaml", "gpu.eff");
  };
  const std::string src = "  source: s\n";
  CHECK_THROWS_WITH_AS(bad(src + "  points:\n    - [10, 0.5]\n    - [1, 0.9]\n"),
                       "t.yaml:5: gpu.eff.points[1]: x must be positive and increasing", ConfigError);
  CHECK_THROWS_WITH_AS(bad(src + "  points:\n    - [1, 0.5]\n    - [1, 0.9]\n"),
                       "t.yaml:5: gpu.eff.points[1]: x must be positive and increasing", ConfigError);
  CHECK_THROWS_WITH_AS(bad(src + "  points:\n    - [0, 0.5]\n"),
                       "t.yaml:4: gpu.eff.points[0]: x must be positive and increasing", ConfigError);
  CHECK_THROWS_WITH_AS(bad(src + "  points:\n    - [1, 0]\n"), "t.yaml:4: gpu.eff.points[0]: y must be positive",
                       ConfigError);
  CHECK_THROWS_WITH_AS(bad(src + "  points:\n    - [1, .nan]\n"),
                       "t.yaml:4: gpu.eff.points[0]: y must be positive", ConfigError);
  CHECK_THROWS_WITH_AS(bad(src + "  points:\n    - [1]\n"), "t.yaml:4: gpu.eff.points[0]: expected [x, y] numbers",
                       ConfigError);
  CHECK_THROWS_WITH_AS(bad(src + "  points:\n    - [a, 1]\n"),
                       "t.yaml:4: gpu.eff.points[0]: expected [x, y] numbers", ConfigError);
  CHECK_THROWS_WITH_AS(bad(src + "  points: []\n"), "t.yaml:3: gpu.eff.points: expected at least one [x, y] point",
                       ConfigError);
  CHECK_THROWS_WITH_AS(bad("  points: [[1, 1]]\n"), "t.yaml:2: gpu.eff: missing required key 'gpu.eff.source'",
                       ConfigError);
  CHECK_THROWS_WITH_AS(bad("  source: \"\"\n  points: [[1, 1]]\n"),
                       "t.yaml:2: gpu.eff.source: every efficiency table names its source", ConfigError);
  CHECK_THROWS_WITH_AS(bad(src + "  policy: clip\n  points: [[1, 1]]\n"),
                       "t.yaml:3: gpu.eff.policy: expected one of clamp, error, got \"clip\"; did you mean 'clamp'?",
                       ConfigError);
  CHECK_THROWS_WITH_AS(bad(src + "  points: [[1, 1]]\n  pionts: [[2, 1]]\n"),
                       "t.yaml:4: unknown key 'gpu.eff.pionts', did you mean 'points'?", ConfigError);
  CHECK_THROWS_WITH_AS(parse_curve(YAML::Load("0.5"), "t.yaml", "gpu.eff"),
                       "t.yaml:1: gpu.eff: expected a mapping, got \"0.5\"", ConfigError);
}

TEST_CASE("where: file:line for a node") {
  const YAML::Node n = parse_yaml("a: 1\nb:\n  c: 2\n", "t.yaml");
  CHECK(where(n["b"]["c"], "t.yaml") == "t.yaml:3: ");
  CHECK(where(YAML::Node(), "t.yaml") == "t.yaml: ");
}

}
