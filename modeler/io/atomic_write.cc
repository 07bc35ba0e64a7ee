#include "modeler/io/atomic_write.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "modeler/problems.h"

namespace shardplan::io {

namespace {

std::string exists_message(const std::string& path) { return path + ": file exists; pass --force to overwrite it"; }

bool write_all(int fd, const std::string& content) {
  const char* p = content.data();
  size_t left = content.size();
  while (left > 0) {
    const ssize_t n = ::write(fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    left -= static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

void write_file_atomic(const std::string& path, const std::string& content, bool force) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!force && fs::exists(path, ec)) throw ConfigError(exists_message(path));
  const fs::path target(path);
  const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  std::string tmp = (dir / ("." + target.filename().string() + ".tmpXXXXXX")).string();
  const int fd = ::mkstemp(tmp.data());
  if (fd < 0) throw ConfigError(path + ": write failed: " + std::strerror(errno));
  // mkstemp creates 0600; outputs are ordinary shared files.
  bool ok = write_all(fd, content) && ::fchmod(fd, 0644) == 0 && ::fsync(fd) == 0;
  ok = ::close(fd) == 0 && ok;
  int err = errno;
  if (ok) {
    // Without force, link() refuses an existing target, closing the window between the check above and here.
    if (force) {
      ok = std::rename(tmp.c_str(), path.c_str()) == 0;
    } else {
      ok = ::link(tmp.c_str(), path.c_str()) == 0;
      // File systems without hard links (EPERM, ENOTSUP): fall back to a checked rename.
      if (!ok && errno != EEXIST && !fs::exists(path, ec)) ok = std::rename(tmp.c_str(), path.c_str()) == 0;
    }
    err = errno;
    if (ok && !force) std::remove(tmp.c_str());  // the link's second name (no-op after the rename fallback)
  }
  if (!ok) {
    std::remove(tmp.c_str());
    if (!force && err == EEXIST) throw ConfigError(exists_message(path));
    throw ConfigError(path + ": write failed: " + std::strerror(err));
  }
}

}  // namespace shardplan::io
