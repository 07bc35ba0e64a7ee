#include "calibrate/runner.h"

#include <doctest/doctest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "kernels/resume.h"
#include "modeler/problems.h"

using namespace shardplan;
using namespace shardplan::calibrate;

TEST_SUITE("calibrate.runner") {

TEST_CASE("commands: the launcher prefixes only the collectives; every benchmark resumes from --out") {
  RunOptions o;
  o.launcher = "mpirun -np 16 -H a:8,b:8";
  o.collective_backend = "nccl";
  o.bench_dir = "/opt/sp";
  o.out = "raw.jsonl";
  o.extra_args = {"--max-bytes", "1G"};
  CHECK(benchmark_command("collectives", o) ==
        "mpirun -np 16 -H a:8,b:8 '/opt/sp/shardplan_bench_nccl' --skip-done 'raw.jsonl' '--max-bytes' '1G'");
  CHECK(benchmark_command("gemm", o) == "'/opt/sp/shardplan_bench_gemm' --skip-done 'raw.jsonl' '--max-bytes' '1G'");
  CHECK_THROWS_WITH_AS(benchmark_command("gemmm", o),
                       "--benchmarks: unknown benchmark 'gemmm' (expected gemm, attention, memory or collectives)",
                       ConfigError);
  CHECK(shell_quote("it's") == "'it'\\''s'");
}

TEST_CASE("run_appending keeps JSON lines, and a re-run skips the rows already there") {
  const auto dir = std::filesystem::temp_directory_path() / "shardplan_runner_test";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string out = (dir / "raw.jsonl").string();
  // A stand-in benchmark: prints two rows, skipping those whose key is in --skip-done (like the harness does).
  const std::string row1 = R"({"record":"result","benchmark":"memory","params":{"op":"copy"},"time_s":1,"wrong":0})";
  const std::string row2 = R"({"record":"result","benchmark":"memory","params":{"op":"triad"},"time_s":1,"wrong":0})";
  std::string error;
  CHECK(run_appending("echo '" + row1 + "'; echo 'banner line'", out, &error) == 0);
  {
    std::ifstream in(out);
    const auto done = shardplan::bench::done_keys(in);
    CHECK(done.size() == 1);
    // The second run measures only what is missing.
    std::string cmd;
    for (const auto& row : {row1, row2}) {
      const auto j = nlohmann::json::parse(row);
      if (!done.count(shardplan::bench::row_key("memory", j["params"]))) cmd += "echo '" + row + "';";
    }
    CHECK(cmd == "echo '" + row2 + "';");
    CHECK(run_appending(cmd + " exit 3", out, &error) == 3);
  }
  std::ifstream in(out);
  std::stringstream ss;
  ss << in.rdbuf();
  CHECK(ss.str() == row1 + "\n" + row2 + "\n");
  std::filesystem::remove_all(dir);
}

}

TEST_SUITE("calibrate.runner") {

TEST_CASE("resume: a last line cut mid-record is trimmed before appending; whole lines are kept") {
  const auto dir = std::filesystem::temp_directory_path() / "shardplan_runner_trim_test";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string out = (dir / "raw.jsonl").string();
  const std::string whole = R"({"record":"context","benchmark":"memory"})";
  std::ofstream(out) << whole << "\n" << R"({"record":"result","benchmark":"mem)";
  CHECK(trim_partial_last_line(out) == 35);
  const auto read = [&] {
    std::ifstream in(out);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  };
  CHECK(read() == whole + "\n");
  CHECK(trim_partial_last_line(out) == 0);  // ends in a newline: nothing to do
  // A file of one partial line (no newline at all) is emptied; a missing file is fine.
  std::ofstream(out) << std::string(10000, 'x');
  CHECK(trim_partial_last_line(out) == 10000);
  CHECK(read().empty());
  CHECK(trim_partial_last_line((dir / "absent.jsonl").string()) == 0);
  // The appended record then starts on its own line.
  std::ofstream(out) << whole << "\n{\"record\":";
  trim_partial_last_line(out);
  std::string error;
  CHECK(run_appending("echo '" + whole + "'", out, &error) == 0);
  CHECK(read() == whole + "\n" + whole + "\n");
  std::filesystem::remove_all(dir);
}

TEST_CASE("JSON lines tagged by the launcher (mpirun --tag-output, srun --label) are kept without the tag") {
  const auto dir = std::filesystem::temp_directory_path() / "shardplan_runner_tag_test";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string out = (dir / "raw.jsonl").string();
  const std::string row = R"({"record":"result","benchmark":"memory"})";
  std::string error;
  CHECK(run_appending("echo '[1,0]<stdout>:" + row + "'; echo '0: " + row + "'; echo '[1,1]<stderr>:warning'", out,
                      &error) == 0);
  std::ifstream in(out);
  std::stringstream ss;
  ss << in.rdbuf();
  CHECK(ss.str() == row + "\n" + row + "\n");
  std::filesystem::remove_all(dir);
}

TEST_CASE("the append target is checked before anything runs") {
  CHECK_THROWS_WITH_AS(check_append_target("-"),
                       "--out: calibrate run appends to a file (and resumes from it); name one", ConfigError);
  CHECK_THROWS_WITH_AS(check_append_target("/nonexistent-dir/raw.jsonl"),
                       "/nonexistent-dir/raw.jsonl: directory /nonexistent-dir does not exist", ConfigError);
  CHECK_THROWS_WITH_AS(check_append_target("/dev/null"),
                       "/dev/null: not a regular file; calibrate run appends its measurements to a regular file",
                       ConfigError);
  CHECK_NOTHROW(check_append_target(std::filesystem::temp_directory_path().string() + "/shardplan_new.jsonl"));
}

}
