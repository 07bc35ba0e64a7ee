#include "modeler/io/sweep_report.h"

#include <doctest/doctest.h>

#include <sstream>
#include <string>
#include <vector>

#include "tests/modeler/test_fixtures.h"

using namespace shardplan;
using namespace shardplan::io;
using nlohmann::json;

namespace {

Estimate best(int tp, int pp, int dp, double tokens_per_s_per_gpu, double mfu) {
  Estimate e;
  e.plan = test::plan_of(tp, pp, dp, 1, 1, 8 * dp, 128);
  e.time.compute = Seconds(0.5);
  e.memory.weights = GiB(2);
  e.memory.capacity = GiB(80);
  e.tokens_per_s_per_gpu = tokens_per_s_per_gpu;
  e.mfu = mfu;
  return e;
}

/// Three points: 8 and 16 GPUs share a layout (tp2 pp1), 32 has nothing that fits, 64 changes to tp4 pp2.
std::vector<SweepPoint> points() {
  return {{"8", 8, best(2, 1, 4, 1000, 0.5), 10, 3},
          {"16", 16, best(2, 1, 8, 900, 0.45), 10, 2},
          {"32", 32, std::nullopt, 10, 0},
          {"64", 64, best(4, 2, 8, 800, 0.4), 12, 1}};
}

std::vector<std::string> lines(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

size_t count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t i = s.find(what); i != std::string::npos; i = s.find(what, i + 1)) ++n;
  return n;
}

size_t fields(const std::string& line) { return count(line, ",") + 1; }

}  // namespace

TEST_SUITE("sweep_report") {

TEST_CASE("layout_label: the plan without dp") {
  Plan p = test::plan_of(8, 2, 4);
  CHECK(layout_label(p) == "tp8 cp1 pp2 z0");
  p.vpp = 4;
  p.zero = 1;
  p.cp = 2;
  CHECK(layout_label(p) == "tp8 cp2 pp2 vpp4 z1");
}

TEST_CASE("sweep_csv: header, one row per point, every row as wide as the header") {
  const auto ls = lines(sweep_csv("seq", points()));
  REQUIRE(ls.size() == 5);
  CHECK(ls[0] ==
        "varied_seq,gpus,fits,tp,cp,pp,vpp,dp,ep,etp,tsp,zero,sequence_parallel,tp_comm_overlap,ep_comm_overlap,"
        "micro_batch,recompute,recompute_layers,recompute_modules,precision,sdp_keep,step_s,memory_gib,tokens_per_s_"
        "per_gpu,mfu,"
        "evaluated,feasible");
  for (const std::string& l : ls) CHECK(fields(l) == fields(ls[0]));
  CHECK(ls[1] == "8,8,1,2,1,1,1,4,1,1,1,0,0,0,0,1,none,0,,bf16,1,0.5,2.000,1000.00,0.5000,10,3");
  CHECK(ls[3] == "32,32,0,,,,,,,,,,,,,,,,,,,,,,,10,0");
}

// `shardplan sweep --vary gpus` writes the varied value and the GPU count as two columns; their names must differ
// (CSV readers rename or drop duplicates).
TEST_CASE("sweep_csv: column names are unique when the GPU count is varied") {
  const std::string header = lines(sweep_csv("gpus", points())).at(0);
  CHECK(header.rfind("varied_gpus,gpus,", 0) == 0);
}

TEST_CASE("sweep_json: a row per point, with the estimate when one fits") {
  ReportContext ctx;
  ctx.command = "sweep";
  const json j = json::parse(sweep_json(ctx, "gpus", points()).dump());
  CHECK(j["schema_version"] == 1);
  CHECK(j["context"]["command"] == "sweep");
  CHECK(j["vary"] == "gpus");
  REQUIRE(j["results"].size() == 4);
  CHECK(j["results"][0]["value"] == "8");
  CHECK(j["results"][0]["fits"] == true);
  CHECK(j["results"][0]["plan"]["tp"] == 2);
  CHECK(j["results"][0]["throughput"]["tokens_per_s_per_gpu"] == doctest::Approx(1000));
  CHECK(j["results"][2]["fits"] == false);
  CHECK_FALSE(j["results"][2].contains("plan"));
  CHECK(j["results"][2]["evaluated"] == 10);
  CHECK(j["results"][3]["gpus"] == 64);
}

TEST_CASE("sweep_svg: well-formed, both series, plan changes annotated, text escaped") {
  const std::string svg = sweep_svg("gpus", "llama <8B> & friends", points());
  CHECK(svg.rfind("<svg xmlns=\"http://www.w3.org/2000/svg\"", 0) == 0);
  CHECK(svg.find("</svg>\n") == svg.size() - 7);
  // XML-ish: every element opened is closed or self-closed.
  CHECK(count(svg, "<text") == count(svg, "</text>"));
  CHECK(count(svg, "<circle") == count(svg, "</circle>"));
  CHECK(count(svg, "<title>") == count(svg, "</title>"));
  CHECK(count(svg, "<") == count(svg, ">"));
  CHECK(svg.find("llama &lt;8B&gt; &amp; friends") != std::string::npos);
  CHECK(svg.find("<8B>") == std::string::npos);
  // Two series (tokens/s/GPU and MFU), one circle per fitting point in each.
  CHECK(count(svg, "<path d=\"M") == 2);
  CHECK(count(svg, "<circle") == 6);
  CHECK(svg.find("1000 tokens/s/GPU") != std::string::npos);
  CHECK(svg.find("MFU 40.0%") != std::string::npos);
  CHECK(count(svg, ">no fit</text>") == 1);
  // The first point and the change to tp4 pp2 are annotated; 16 GPUs keeps 8's layout.
  CHECK(count(svg, "<line class=\"plan-change\"") == 2);
  CHECK(svg.find(">tp2 cp1 pp1 z0</text>") != std::string::npos);
  CHECK(svg.find(">tp4 cp1 pp2 z0</text>") != std::string::npos);
}

TEST_CASE("sweep_svg: no point fits") {
  const std::string svg = sweep_svg("gpus", "t", {{"8", 8, std::nullopt, 1, 0}});
  CHECK(count(svg, "<path") == 0);
  CHECK(count(svg, ">no fit</text>") == 1);
  CHECK(svg.find("</svg>") != std::string::npos);
}

}
