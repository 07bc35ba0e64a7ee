#include "calibrate/measurements.h"

#include <doctest/doctest.h>

#include "modeler/problems.h"

using namespace shardplan;
using namespace shardplan::calibrate;

TEST_SUITE("calibrate.measurements") {

TEST_CASE("context and result rows parse into typed measurements") {
  const std::string text =
      R"({"record":"context","benchmark":"gemm","backend":"cublasLt","gpu":"NVIDIA H200","cuda":"13.0","hosts":["a",)"
      R"("a"]})"
      "\n"
      R"({"record":"result","benchmark":"gemm","backend":"cublasLt","params":{"dtype":"bf16","m":1024,"n":2048,)"
      R"("k":512},"time_s":1e-4,"wrong":0})"
      "\n"
      R"({"record":"result","benchmark":"collective","backend":"mpi","params":{"collective":"all_gather","nranks":4,)"
      R"("stride":2,"bytes":4096},"time_s":2e-5,"wrong":0})"
      "\n";
  const RawFile f = parse_jsonl(text, "raw.jsonl");
  REQUIRE(f.rows.size() == 2);
  CHECK(f.contexts == std::vector<std::string>{"gemm (cublasLt), gpu NVIDIA H200, cuda 13.0, hosts a"});
  CHECK(f.rows[0].bench == Bench::gemm);
  CHECK(f.rows[0].flops == 2.0 * 1024 * 2048 * 512);
  CHECK(f.rows[0].where == "raw.jsonl:2");
  CHECK(f.rows[1].collective == Collective::all_gather);
  CHECK(f.rows[1].nranks == 4);
  CHECK(f.rows[1].stride == 2);
  CHECK(f.rows[1].bytes == 4096);
}

TEST_CASE("a row with wrong results is refused") {
  const std::string text =
      R"({"record":"result","benchmark":"collective","backend":"nccl","params":{"bytes":1024,)"
      R"("collective":"all_reduce","nranks":2},"time_s":1e-5,"wrong":3})"
      "\n";
  CHECK_THROWS_WITH_AS(parse_jsonl(text, "raw.jsonl"),
                       "raw.jsonl:1: collective {\"bytes\":1024,\"collective\":\"all_reduce\",\"nranks\":2} produced 3 "
                       "wrong results; refusing to fit incorrect measurements (fix the cause and re-run this row)",
                       ConfigError);
}

TEST_CASE("impossible shapes and sizes are input errors naming the key") {
  auto row = [](const std::string& bench, const std::string& params) {
    return R"({"record":"result","benchmark":")" + bench + R"(","backend":"x","params":)" + params +
           R"(,"time_s":1e-3,"wrong":0})" + "\n";
  };
  CHECK_THROWS_WITH_AS(parse_jsonl(row("gemm", R"({"dtype":"bf16","m":0,"n":8,"k":8})"), "r.jsonl"),
                       "r.jsonl:1: params.m: a GEMM dimension must be at least 1, got 0", ConfigError);
  CHECK_THROWS_WITH_AS(parse_jsonl(row("gemm", R"({"dtype":"bf16","m":8,"n":8,"k":-1})"), "r.jsonl"),
                       "r.jsonl:1: params.k: a GEMM dimension must be at least 1, got -1", ConfigError);
  CHECK_THROWS_WITH_AS(
      parse_jsonl(row("collective", R"({"collective":"all_reduce","nranks":1e12,"bytes":8})"), "r.jsonl"),
      "r.jsonl:1: params.nranks: a collective needs a whole number of ranks from 2 to 16777216, got 1e+12",
      ConfigError);
  CHECK_THROWS_WITH_AS(
      parse_jsonl(row("collective", R"({"collective":"all_reduce","nranks":2.5,"bytes":8})"), "r.jsonl"),
      "r.jsonl:1: params.nranks: a collective needs a whole number of ranks from 2 to 16777216, got 2.5", ConfigError);
  CHECK_THROWS_WITH_AS(
      parse_jsonl(row("collective", R"({"collective":"all_reduce","nranks":8,"bytes":0})"), "r.jsonl"),
      "r.jsonl:1: params.bytes: a collective row needs positive bytes, got 0", ConfigError);
  CHECK_THROWS_WITH_AS(
      parse_jsonl(row("collective", R"({"collective":"all_reduce","nranks":8,"stride":0,"bytes":8})"), "r.jsonl"),
      "r.jsonl:1: params.stride: expected a whole number from 1 to 16777216, got 0", ConfigError);
}

TEST_CASE("malformed lines name the file and line; a truncated last line is skipped") {
  CHECK_THROWS_WITH_AS(parse_jsonl("{\"record\":\"result\"\n{}\n", "r.jsonl"), "r.jsonl:1: not a JSON object",
                       ConfigError);
  CHECK_THROWS_WITH_AS(
      parse_jsonl(R"({"record":"result","benchmark":"gemmm","backend":"x","params":{},"time_s":1,"wrong":0})",
                  "r.jsonl"),
      "r.jsonl:1: unknown benchmark 'gemmm' (expected gemm, attention, memory or collective)", ConfigError);
  const RawFile f = parse_jsonl(
      R"({"record":"result","benchmark":"memory","backend":"cuda","params":{"op":"copy"},"bytes":8,"time_s":1,)"
      R"("wrong":0})"
      "\n{\"record\":\"res",
      "r.jsonl");
  CHECK(f.rows.size() == 1);
}

TEST_CASE("wrongly typed fields name the line and key, never escape as a JSON type error (issue 12)") {
  CHECK_THROWS_WITH_AS(parse_jsonl("{\"record\": 5}\n", "r.jsonl"), "r.jsonl:1: record: expected a string, got 5",
                       ConfigError);
  const std::string stride_text =
      R"({"record":"result","benchmark":"collective","backend":"mpi","params":{"collective":"all_reduce",)"
      R"("nranks":2,"stride":"2","bytes":8},"time_s":1e-5,"wrong":0})"
      "\n";
  CHECK_THROWS_WITH_AS(parse_jsonl(stride_text, "r.jsonl"), "r.jsonl:1: stride: expected a number, got \"2\"",
                       ConfigError);
  const std::string flops_text =
      R"({"record":"result","benchmark":"attention","backend":"x","kernel":"flash2","params":{"dir":"fwd"},)"
      R"("flops":[1],"time_s":1e-5,"wrong":0})"
      "\n";
  CHECK_THROWS_WITH_AS(parse_jsonl(flops_text, "r.jsonl"), "r.jsonl:1: flops: expected a number, got [1]",
                       ConfigError);
  CHECK_THROWS_WITH_AS(parse_jsonl("{\"record\":\"context\",\"benchmark\":7}\n", "r.jsonl"),
                       "r.jsonl:1: benchmark: expected a string, got 7", ConfigError);
}

TEST_CASE("a huge wrong count is printed as a number, not cast to a negative integer (issue 12)") {
  const std::string text =
      R"({"record":"result","benchmark":"collective","backend":"nccl","params":{"bytes":1024,)"
      R"("collective":"all_reduce","nranks":2},"time_s":1e-5,"wrong":1e300})"
      "\n";
  CHECK_THROWS_WITH_AS(parse_jsonl(text, "r.jsonl"),
                       "r.jsonl:1: collective {\"bytes\":1024,\"collective\":\"all_reduce\",\"nranks\":2} produced "
                       "1e+300 wrong results; refusing to fit incorrect measurements (fix the cause and re-run this "
                       "row)",
                       ConfigError);
  const std::string negative =
      R"({"record":"result","benchmark":"memory","backend":"x","params":{"op":"copy"},"bytes":8,"time_s":1e-5,)"
      R"("wrong":-1})"
      "\n";
  CHECK_THROWS_WITH_AS(parse_jsonl(negative, "r.jsonl"), "r.jsonl:1: wrong: expected a count of at least 0, got -1",
                       ConfigError);
}
}
