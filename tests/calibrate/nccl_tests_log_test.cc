#include "shardplan_source_dir.h"
#include "calibrate/nccl_tests_log.h"

#include <doctest/doctest.h>

#include <cctype>
#include <map>
#include <sstream>

#include "modeler/io/yaml_reader.h"
#include "modeler/problems.h"

using namespace shardplan;
using namespace shardplan::calibrate;

namespace {

/// The blocks of tests/data/nccl_tests_samples.txt (a copy of shared/data), by sample number. Sample 4 quotes
/// its log lines as indented Python comments ("    # 1073741824 ..."); the indent, and the "# " before a data
/// row, are removed to get the log back.
std::map<int, std::string> samples() {
  const std::string text = io::read_file(SHARDPLAN_SOURCE_DIR "/tests/data/nccl_tests_samples.txt");
  std::map<int, std::string> out;
  std::istringstream in(text);
  int current = 0;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("=== BEGIN SAMPLE ", 0) == 0) {
      current = std::stoi(line.substr(17));
      continue;
    }
    if (line.rfind("=== END SAMPLE", 0) == 0) {
      current = 0;
      continue;
    }
    if (current == 4 && line.rfind("    #", 0) == 0) {
      line = line.substr(4);
      if (line.size() > 2 && line[1] == ' ' && std::isdigit(static_cast<unsigned char>(line[2]))) line = line.substr(2);
    }
    if (current) out[current] += line + "\n";
  }
  return out;
}

}  // namespace

TEST_SUITE("calibrate.nccl_tests_log") {

TEST_CASE("every sample parses: runs, collectives, ranks and row counts") {
  const auto s = samples();
  REQUIRE(s.size() == 5);

  const auto r1 = parse_nccl_tests(s.at(1));  // current format, 2 nodes x 8 H100, all_reduce 8 B .. 8 GiB
  REQUIRE(r1.size() == 1);
  CHECK(r1[0].binary == "all_reduce_perf");
  CHECK(r1[0].collective == Collective::all_reduce);
  CHECK(r1[0].nranks == 16);
  CHECK(r1[0].rows.size() == 31);
  CHECK(r1[0].failure.empty());
  CHECK(r1[0].rows.back().bytes == 8589934592.0);
  CHECK(r1[0].rows.back().time_us == 47535);
  CHECK(r1[0].rows.back().busbw_gbps == 338.82);
  CHECK_NOTHROW(check_usable(r1[0], "s1.log"));

  const auto r2 = parse_nccl_tests(s.at(2));  // old format: all_gather without redop (failed), all_reduce
  REQUIRE(r2.size() == 2);
  CHECK(r2[0].binary == "all_gather_perf");
  CHECK(r2[0].error_column);
  CHECK(r2[0].nranks == 12);
  CHECK(r2[0].rows.size() == 31);
  CHECK(r2[1].binary == "all_reduce_perf");
  CHECK(r2[1].rows.size() == 31);
  CHECK(r2[1].rows[0].wrong == 0);  // a max error of 2e-07 is rounding, not a wrong result
  CHECK_NOTHROW(check_usable(r2[1], "s2.log"));

  const auto r3 = parse_nccl_tests(s.at(3));  // sendrecv, in-place #wrong printed as N/A, no device list
  REQUIRE(r3.size() == 1);
  CHECK(r3[0].collective == Collective::send_recv);
  CHECK(r3[0].nranks == 0);
  CHECK(r3[0].rows.size() == 4);
  CHECK(r3[0].rows[3].busbw_gbps == 195.10);
  CHECK_NOTHROW(check_usable(r3[0], "s3.log", 8));

  const auto r4 = parse_nccl_tests(s.at(4));  // two header generations, one row each, binary not named
  REQUIRE(r4.size() == 2);
  CHECK(r4[0].error_column);
  CHECK(!r4[1].error_column);
  CHECK(r4[0].rows.size() == 1);
  CHECK(r4[1].rows.size() == 1);
  CHECK(r4[1].rows[0].time_us == 44023);
  CHECK(!r4[0].collective);

  const auto r5 = parse_nccl_tests(s.at(5));  // current header reconstructed from printf formats, no rows
  REQUIRE(r5.size() == 1);
  CHECK(r5[0].collective == Collective::all_reduce);
  CHECK(r5[0].nranks == 1);
  CHECK(r5[0].rows.empty());
}

TEST_CASE("the failed run is refused with a message naming the file, the run and the failure") {
  const auto runs = parse_nccl_tests(samples().at(2));
  CHECK_THROWS_WITH_AS(check_usable(runs[0], "dgx2.log"),
                       "dgx2.log:6: all_gather_perf run failed its correctness check (line 56: \"# Out of bounds "
                       "values : 4 FAILED\"); its timings cannot be used: fix the run and measure again",
                       ConfigError);
}

TEST_CASE("a row with inf, nan, an overflowing or a negative number refuses its run (was: fuzz finding)") {
  const std::string head =
      "# all_reduce_perf\n# nThread 1 nGpus 1\n#  Using devices\n"
      "#  Rank  0 Group  0 Pid 1 on h device  0 [0000:04:00] NVIDIA H100\n"
      "#  Rank  1 Group  0 Pid 1 on h device  1 [0000:05:00] NVIDIA H100\n"
      "#  size count type redop root time algbw busbw #wrong time algbw busbw #wrong\n";
  const std::string good = "8 2 float sum -1 10.0 0.00 0.00 0 10.0 0.00 0.00 0\n";
  CHECK_NOTHROW(check_usable(parse_nccl_tests(head + good)[0], "ok.log"));
  for (const char* bad : {"1e999", "inf", "nan", "-3.5"}) {
    CAPTURE(bad);
    const auto runs = parse_nccl_tests(head + good + "16 4 float sum -1 " + bad + " 0.00 0.00 0 9.0 0.00 0.00 0\n");
    REQUIRE(runs.size() == 1);
    CHECK(runs[0].rows.size() == 1);  // the bad row is not kept: every row a reader sees is finite
    const std::string want = "x.log:2: all_reduce_perf run: line 8 has \"" + std::string(bad) +
                             "\" where a finite, non-negative number belongs";
    CHECK_THROWS_WITH_AS(check_usable(runs[0], "x.log"), doctest::Contains(want.c_str()), ConfigError);
  }
}

TEST_CASE("unusable runs: unknown collective, no device list") {
  const auto s = samples();
  CHECK_THROWS_WITH_AS(check_usable(parse_nccl_tests(s.at(4))[0], "p.log"),
                       "p.log:8: the run: cannot tell which collective this is (no '<name>_perf' line before it)",
                       ConfigError);
  CHECK_THROWS_WITH_AS(check_usable(parse_nccl_tests(s.at(3))[0], "s.log"),
                       "s.log:7: sendrecv_perf run: the log lists no devices; pass --ranks N", ConfigError);
}

}

TEST_SUITE("calibrate.nccl_tests_log") {

namespace {
std::string captured(const std::string& name) {
  return io::read_file(SHARDPLAN_SOURCE_DIR "/tests/data/nccl_tests_captured/" + name);
}
}  // namespace

TEST_CASE("mpirun --tag-output prefixes, interleaved NCCL INFO lines of other ranks, CRLF line ends") {
  const auto runs = parse_nccl_tests(captured("tagged_crlf.log"));
  REQUIRE(runs.size() == 1);
  const NcclTestsRun& r = runs[0];
  CHECK(r.binary == "all_reduce_perf");
  CHECK(r.stream == "1,0");
  CHECK(r.nranks == 2);
  REQUIRE(r.ranks.size() == 2);
  CHECK(r.ranks[1].host == "node-b");
  CHECK(r.ranks[1].device == "NVIDIA H100 80GB HBM3");  // no '\r' left
  CHECK(run_hosts(r) == std::vector<std::string>{"node-a", "node-b"});
  CHECK(r.rows.size() == 11);
  CHECK(r.rows.front().bytes == 1024);
  CHECK(r.rows.back().bytes == 1073741824.0);
  CHECK(r.failure.empty());
  CHECK_NOTHROW(check_usable(r, "tagged_crlf.log"));
}

TEST_CASE("srun --label prefixes, two runs in one file") {
  const auto runs = parse_nccl_tests(captured("srun_label.log"));
  REQUIRE(runs.size() == 2);
  CHECK(runs[0].collective == Collective::all_reduce);
  CHECK(runs[1].collective == Collective::all_gather);
  for (const auto& r : runs) {
    CHECK(r.stream == "task 0");
    CHECK(r.nranks == 2);
    CHECK(r.rows.size() == 11);
  }
}

TEST_CASE("several processes' runs interleaved line by line are read one process at a time") {
  const auto runs = parse_nccl_tests(captured("independent_ranks.log"));
  REQUIRE(runs.size() == 2);
  CHECK(runs[0].stream == "1,0");
  CHECK(runs[1].stream == "1,1");
  for (const auto& r : runs) {
    CHECK(r.nranks == 1);
    CHECK(r.rows.size() == 6);
  }
  CHECK_THROWS_WITH_AS(check_usable(runs[1], "ind.log"),
                       "ind.log:6: all_reduce_perf run: ran on a single rank, and a collective needs two or more "
                       "(nccl-tests built without MPI=1 and started by mpirun runs one independent 1-GPU test per "
                       "process; rebuild it with MPI=1)",
                       ConfigError);
}

TEST_CASE("prefix forms: PRRTE's [job,rank]: and [job,rank][host:pid], MPICH's [rank], srun's padded task ids") {
  const std::string body =
      "# nThread 1 nGpus 1 minBytes 8 maxBytes 16 step: 2(factor) warmup iters: 5 iters: 20\n"
      "# Using devices\n"
      "#  Rank  0 Group  0 Pid   1 on a device  0 [0000:04:00] NVIDIA H100 80GB HBM3\n"
      "#  Rank  1 Group  0 Pid   2 on b device  0 [0000:04:00] NVIDIA H100 80GB HBM3\n"
      "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw "
      "#wrong\n"
      "           8             2     float     sum      -1    13.50    0.00    0.00      0"
      "    13.40    0.00    0.00      0\n";
  for (const std::string prefix : {"[1,0]:", "[1,0][nodea:1234]<stdout>: ", "[0] ", " 0: ", "12: "}) {
    CAPTURE(prefix);
    std::string text = "all_reduce_perf\n";
    std::istringstream in(body);
    for (std::string line; std::getline(in, line);) text += prefix + line + "\n";
    const auto runs = parse_nccl_tests(text);
    REQUIRE(runs.size() == 1);
    CHECK(runs[0].nranks == 2);
    CHECK(runs[0].rows.size() == 1);
    CHECK(runs[0].ranks[0].host == "a");
  }
}

TEST_CASE("long words and odd lines do not crash the reader (was: std::regex stack overflow)") {
  const std::string word(30000, 'a');
  CHECK(parse_nccl_tests(word + "\n").empty());
  CHECK(parse_nccl_tests(word + "_perf\n").empty());  // a 30,000-letter "binary name" is not one
  std::string perfs;
  for (int i = 0; i < 6000; ++i) perfs += "a_perf";
  CHECK(parse_nccl_tests(perfs + "\n# nThread 1\n").size() == 1);
  CHECK(parse_nccl_tests(std::string(100000, '[') + "\n" + std::string(100000, ' ') + "1:\n").empty());
}

}
