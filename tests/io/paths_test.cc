#include "shardplan_source_dir.h"
#include "modeler/io/paths.h"

#include <doctest/doctest.h>

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

#include "modeler/problems.h"

using namespace shardplan;
using namespace shardplan::io;

namespace fs = std::filesystem;

namespace {

/// Sets (or unsets, with nullopt) $SHARDPLAN_HOME for its lifetime and restores the previous value after.
class HomeGuard {
 public:
  explicit HomeGuard(const std::optional<std::string>& value) {
    if (const char* old = std::getenv("SHARDPLAN_HOME")) old_ = old;
    if (value) ::setenv("SHARDPLAN_HOME", value->c_str(), 1);
    else ::unsetenv("SHARDPLAN_HOME");
  }
  ~HomeGuard() {
    if (old_) ::setenv("SHARDPLAN_HOME", old_->c_str(), 1);
    else ::unsetenv("SHARDPLAN_HOME");
  }
  HomeGuard(const HomeGuard&) = delete;
  HomeGuard& operator=(const HomeGuard&) = delete;

 private:
  std::optional<std::string> old_;
};

/// A scratch data root: models/{alpha.yaml, alpha.json, beta.yaml, notes.txt} and a directory models/dir.yaml/.
struct ScratchRoot {
  fs::path root = fs::temp_directory_path() / ("shardplan_paths_test_" + std::to_string(::getpid()));
  ScratchRoot() {
    fs::remove_all(root);
    fs::create_directories(root / "models" / "dir.yaml");
    for (const char* f : {"beta.yaml", "alpha.yaml", "alpha.json", "notes.txt"})
      std::ofstream(root / "models" / f) << "x\n";
  }
  ~ScratchRoot() { fs::remove_all(root); }
};

const std::vector<std::string> kExt = {".yaml", ".json"};

}  // namespace

TEST_SUITE("paths") {

TEST_CASE("data_root: $SHARDPLAN_HOME when set and non-empty, else the source tree") {
  {
    HomeGuard g(std::string("/some/where"));
    CHECK(data_root() == "/some/where");
  }
  {
    HomeGuard g(std::string(""));
    CHECK(data_root() == SHARDPLAN_SOURCE_DIR);
  }
  {
    HomeGuard g(std::nullopt);
    CHECK(data_root() == SHARDPLAN_SOURCE_DIR);
  }
}

TEST_CASE("resolve_data_file finds a shipped model by name in the source tree") {
  HomeGuard g(std::nullopt);
  const std::string p = resolve_data_file("llama-3-8b", "models", kExt, "model");
  CHECK(p == (fs::path(SHARDPLAN_SOURCE_DIR) / "models" / "llama-3-8b.yaml").string());
  CHECK(fs::is_regular_file(p));
  // An existing path is returned as is.
  CHECK(resolve_data_file(p, "models", kExt, "model") == p);
}

TEST_CASE("resolve_data_file: names, paths and errors") {
  ScratchRoot s;
  HomeGuard g(s.root.string());
  // Extensions are tried in order: .yaml before .json.
  CHECK(resolve_data_file("alpha", "models", kExt, "model") == (s.root / "models" / "alpha.yaml").string());
  CHECK(resolve_data_file("alpha", "models", {".json"}, "model") == (s.root / "models" / "alpha.json").string());
  // A directory named like a data file is not one.
  CHECK_THROWS_WITH_AS(resolve_data_file("dir", "models", kExt, "model"),
                       "unknown model 'dir' (known: alpha, beta)", ConfigError);
  // A path-like name that does not exist is not looked up by name.
  CHECK_THROWS_WITH_AS(resolve_data_file("no/such/file.yaml", "models", kExt, "model"),
                       "no/such/file.yaml: cannot open model file", ConfigError);
  CHECK_THROWS_WITH_AS(resolve_data_file("alpha.yaml", "models", kExt, "model"),
                       "alpha.yaml: cannot open model file", ConfigError);
  CHECK_THROWS_WITH_AS(resolve_data_file("x.json", "models", kExt, "model"), "x.json: cannot open model file",
                       ConfigError);
  // Unknown names list what is there, with a suggestion for a near miss.
  CHECK_THROWS_WITH_AS(resolve_data_file("alpah", "models", kExt, "model"),
                       "unknown model 'alpah', did you mean 'alpha'? (known: alpha, beta)", ConfigError);
  CHECK_THROWS_WITH_AS(resolve_data_file("gamma-delta", "models", kExt, "model"),
                       "unknown model 'gamma-delta' (known: alpha, beta)", ConfigError);
  CHECK_THROWS_WITH_AS(resolve_data_file("x", "hwprofiles/gpus", kExt, "GPU"), "unknown GPU 'x' (known: )",
                       ConfigError);
}

TEST_CASE("list_data_files: stems sorted and deduplicated, regular files with the extensions only") {
  ScratchRoot s;
  HomeGuard g(s.root.string());
  CHECK(list_data_files("models", kExt) == std::vector<std::string>{"alpha", "beta"});
  CHECK(list_data_files("models", {".json"}) == std::vector<std::string>{"alpha"});
  CHECK(list_data_files("models", {".txt"}) == std::vector<std::string>{"notes"});
  CHECK(list_data_files("missing-dir", kExt).empty());
}

TEST_CASE("list_data_files lists the shipped models") {
  HomeGuard g(std::nullopt);
  const auto names = list_data_files("models", {".yaml"});
  CHECK(std::is_sorted(names.begin(), names.end()));
  CHECK(std::find(names.begin(), names.end(), "llama-3-8b") != names.end());
  CHECK(std::find(names.begin(), names.end(), "README") == names.end());  // README.md has another extension
}

}
