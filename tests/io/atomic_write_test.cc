#include "modeler/io/atomic_write.h"

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <unistd.h>

#include "modeler/problems.h"

using namespace shardplan;
namespace fs = std::filesystem;

namespace {
std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}
}  // namespace

TEST_CASE("write_file_atomic: writes, refuses to overwrite without force, leaves no temp files") {
  const fs::path dir = fs::temp_directory_path() / ("shardplan_atomic_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string path = (dir / "plan.json").string();
  io::write_file_atomic(path, "one\n", false);
  CHECK(slurp(path) == "one\n");
  CHECK_THROWS_WITH_AS(io::write_file_atomic(path, "two\n", false),
                       (path + ": file exists; pass --force to overwrite it").c_str(), ConfigError);
  CHECK(slurp(path) == "one\n");
  io::write_file_atomic(path, "two\n", true);
  CHECK(slurp(path) == "two\n");
  CHECK((fs::status(path).permissions() & fs::perms::others_read) != fs::perms::none);
  int files = 0;
  for (const auto& e : fs::directory_iterator(dir)) files += e.is_regular_file() ? 1 : 0;
  CHECK(files == 1);
  CHECK_THROWS_AS(io::write_file_atomic((dir / "missing" / "x").string(), "x", false), ConfigError);
  fs::remove_all(dir);
}
