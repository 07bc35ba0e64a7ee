#include "modeler/io/output.h"

#include <doctest/doctest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "modeler/problems.h"

using namespace shardplan;
namespace fs = std::filesystem;

TEST_SUITE("io.output") {

TEST_CASE("omitted or '-' is standard output; a path is a file checked before work") {
  CHECK(io::Output("", false).to_stdout());
  CHECK(io::Output("-", false).to_stdout());
  CHECK(io::Output("-", false).where() == "standard output");
  CHECK_NOTHROW(io::Output("-", false).check());
  const fs::path dir = fs::temp_directory_path() / ("shardplan_output_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string path = (dir / "plan.sh").string();
  const io::Output out(path, false);
  CHECK(!out.to_stdout());
  CHECK_NOTHROW(out.check());
  out.write("echo hi\n");
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  CHECK(ss.str() == "echo hi\n");
  CHECK_THROWS_WITH_AS(out.check(), (path + ": file exists; pass --force to overwrite it").c_str(), ConfigError);
  CHECK_NOTHROW(io::Output(path, true).check());
  fs::remove_all(dir);
}

TEST_CASE("ReportToStderr sends std::cout to stderr's buffer while alive, and restores it") {
  std::streambuf* const original = std::cout.rdbuf();
  {
    const io::ReportToStderr off(false);
    CHECK(std::cout.rdbuf() == original);
  }
  {
    const io::ReportToStderr on(true);
    CHECK(std::cout.rdbuf() == std::cerr.rdbuf());
  }
  CHECK(std::cout.rdbuf() == original);
}

}
