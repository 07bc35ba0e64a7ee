// kernels/resume.h: the resume rule shared by the benchmarks and `calibrate run`.
#include "kernels/resume.h"

#include <doctest/doctest.h>

#include <sstream>

using namespace shardplan::bench;

TEST_SUITE("calibrate.resume") {

TEST_CASE("rows already measured are found by benchmark and params, whatever the key order") {
  std::istringstream in(
      R"({"record":"context","benchmark":"gemm"})"
      "\n"
      R"({"record":"result","benchmark":"gemm","params":{"m":1,"n":2,"k":3,"dtype":"bf16"},"time_s":1,"wrong":0})"
      "\n"
      R"({"record":"result","benchmark":"memory","params":{"op":"copy","bytes":1024})"  // cut short: not done
      "\n");
  const auto done = done_keys(in);
  CHECK(done.size() == 1);
  const nlohmann::json same = {{"dtype", "bf16"}, {"k", 3}, {"m", 1}, {"n", 2}};
  CHECK(done.count(row_key("gemm", same)) == 1);
  CHECK(done.count(row_key("gemm", {{"dtype", "fp16"}, {"k", 3}, {"m", 1}, {"n", 2}})) == 0);
  CHECK(done.count(row_key("memory", {{"op", "copy"}, {"bytes", 1024}})) == 0);
}

}
