#include "modeler/io/atomic_write.h"

#include <doctest/doctest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

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

void spit(const fs::path& p, const std::string& s) { std::ofstream(p) << s; }

/// A fresh directory per test case, removed at the end.
struct TempDir {
  fs::path dir;
  explicit TempDir(const std::string& name)
      : dir(fs::temp_directory_path() / ("shardplan_atomic_" + name + "_" + std::to_string(::getpid()))) {
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  ~TempDir() { fs::remove_all(dir); }
  std::string operator/(const std::string& f) const { return (dir / f).string(); }
  int entries() const {
    int n = 0;
    for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir)) ++n;
    return n;
  }
};

}  // namespace

TEST_SUITE("io.atomic_write") {

TEST_CASE("writes, refuses to overwrite without force, leaves no temp files") {
  TempDir t("basic");
  const std::string path = t / "plan.json";
  io::write_file_atomic(path, "one\n", false);
  CHECK(slurp(path) == "one\n");
  CHECK_THROWS_WITH_AS(io::write_file_atomic(path, "two\n", false),
                       (path + ": file exists; pass --force to overwrite it").c_str(), ConfigError);
  CHECK_THROWS_WITH_AS(io::check_destination(path, false),
                       (path + ": file exists; pass --force to overwrite it").c_str(), ConfigError);
  CHECK_NOTHROW(io::check_destination(path, true));
  CHECK(slurp(path) == "one\n");
  io::write_file_atomic(path, "two\n", true);
  CHECK(slurp(path) == "two\n");
  CHECK((fs::status(path).permissions() & fs::perms::owner_read) != fs::perms::none);
  CHECK(t.entries() == 1);
  const std::string missing = t / "missing/x";
  CHECK_THROWS_WITH_AS(io::check_destination(missing, false),
                       (missing + ": directory " + (t / "missing") + " does not exist").c_str(), ConfigError);
  CHECK_THROWS_AS(io::write_file_atomic(missing, "x", false), ConfigError);
}

TEST_CASE("a file created between the check and the write is not replaced without --force") {
  TempDir t("race");
  const std::string path = t / "p.yaml";
  // Stands for another process creating the file in the window between the check and the write.
  io::testing::before_place = [](const std::string& target) { spit(target, "theirs\n"); };
  CHECK_THROWS_WITH_AS(io::write_file_atomic(path, "ours\n", false),
                       (path + ": file exists; pass --force to overwrite it").c_str(), ConfigError);
  CHECK(slurp(path) == "theirs\n");
  CHECK(t.entries() == 1);  // our temp file is gone
  fs::remove(path);
  io::write_file_atomic(path, "ours\n", true);  // --force: replacing is what the user asked for
  CHECK(slurp(path) == "ours\n");
  io::testing::before_place = nullptr;
}

TEST_CASE("replacing keeps the replaced file's permissions") {
  TempDir t("mode");
  const std::string path = t / "run.sh";
  spit(path, "old\n");
  fs::permissions(path, fs::perms::owner_all | fs::perms::group_read);
  io::write_file_atomic(path, "new\n", true);
  CHECK(fs::status(path).permissions() == (fs::perms::owner_all | fs::perms::group_read));
}

TEST_CASE("a symbolic link is written through to its target; the link stays; a dangling link is refused") {
  TempDir t("link");
  const std::string target = t / "real.json", link = t / "link.json";
  spit(target, "old\n");
  fs::create_symlink("real.json", link);
  CHECK_THROWS_WITH_AS(io::write_file_atomic(link, "new\n", false),
                       (link + ": file exists (a symbolic link to " + fs::canonical(target).string() +
                        ", written through); pass --force to overwrite it")
                           .c_str(),
                       ConfigError);
  io::write_file_atomic(link, "new\n", true);
  CHECK(fs::is_symlink(link));
  CHECK(fs::read_symlink(link) == "real.json");
  CHECK(slurp(target) == "new\n");
  CHECK(t.entries() == 2);

  const std::string dangling = t / "dangling.json";
  fs::create_symlink("nowhere.json", dangling);
  for (const bool force : {false, true}) {
    CAPTURE(force);
    CHECK_THROWS_WITH_AS(io::write_file_atomic(dangling, "x\n", force),
                         (dangling + ": is a symbolic link to 'nowhere.json', which does not exist; shardplan writes "
                                     "through a link only to an existing file (name the file itself to create it)")
                             .c_str(),
                         ConfigError);
  }
  CHECK(!fs::exists(t / "nowhere.json"));
  CHECK(fs::is_symlink(dangling));
}

TEST_CASE("a directory, or a link to one, is refused even with --force") {
  TempDir t("dir");
  fs::create_directories(t / "sub");
  fs::create_symlink("sub", t / "to_sub");
  CHECK_THROWS_WITH_AS(io::write_file_atomic(t / "sub", "x", true),
                       ((t / "sub") + ": is a directory; shardplan writes regular files (or into a FIFO or character "
                                      "device) and never replaces anything else, even with --force")
                           .c_str(),
                       ConfigError);
  CHECK_THROWS_AS(io::check_destination(t / "to_sub", true), ConfigError);
  CHECK(fs::is_directory(t / "sub"));
  CHECK(fs::is_symlink(t / "to_sub"));
}

TEST_CASE("a character device is written into, never replaced (/dev/null)") {
  io::write_file_atomic("/dev/null", "discarded\n", false);
  io::write_file_atomic("/dev/null", "discarded\n", true);
  CHECK(fs::is_character_file("/dev/null"));
}

TEST_CASE("a FIFO is written into, not replaced") {
  TempDir t("fifo");
  const std::string fifo = t / "pipe";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  std::string got;
  std::thread reader([&] { got = slurp(fifo); });
  io::write_file_atomic(fifo, "through the pipe\n", false);
  reader.join();
  CHECK(got == "through the pipe\n");
  CHECK(fs::is_fifo(fifo));
}

TEST_CASE("/dev/fd/N is the open descriptor: written at its offset, the file behind it not replaced") {
  TempDir t("fd");
  const std::string file = t / "redirected.txt";
  const int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  REQUIRE(fd >= 0);
  REQUIRE(::write(fd, "before\n", 7) == 7);
  struct stat before {};
  ::fstat(fd, &before);
  io::write_file_atomic("/dev/fd/" + std::to_string(fd), "after\n", true);
  ::close(fd);
  CHECK(slurp(file) == "before\nafter\n");  // appended at the descriptor's offset, as a shell redirection expects
  struct stat now {};
  ::stat(file.c_str(), &now);
  CHECK(now.st_ino == before.st_ino);  // the same file, not a replacement
  CHECK_THROWS_WITH_AS(io::write_file_atomic("/dev/fd/987654", "x", false),
                       "/dev/fd/987654: descriptor 987654 is not open", ConfigError);
}

}
