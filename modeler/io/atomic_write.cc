#include "modeler/io/atomic_write.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>

#include "modeler/problems.h"

namespace shardplan::io {

namespace testing {
void (*before_place)(const std::string& target) = nullptr;
}  // namespace testing

namespace {

enum class Kind { create, replace, stream, descriptor };

/// Where a write goes after following links: `target` is the path actually written.
struct Dest {
  Kind kind = Kind::create;
  std::string target;
  int fd = -1;         // Kind::descriptor
  mode_t mode = 0644;  // Kind::replace keeps the replaced file's permissions
};

std::string why() { return std::strerror(errno); }

std::string dir_of(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

/// The process's own descriptors under their usual names (Linux /proc, /dev/fd), or -1. These are written as the
/// open descriptor: following /proc/self/fd/1 to the file the shell redirected to and renaming over it would
/// replace the shell's file and lose what was written to it before.
int descriptor_name(const std::string& p) {
  if (p == "/dev/stdout") return 1;
  if (p == "/dev/stderr") return 2;
  for (const std::string prefix : {"/dev/fd/", "/proc/self/fd/"}) {
    if (p.rfind(prefix, 0) != 0) continue;
    const std::string n = p.substr(prefix.size());
    if (n.empty() || n.size() > 9 || n.find_first_not_of("0123456789") != std::string::npos) return -1;
    return std::atoi(n.c_str());
  }
  return -1;
}

void check_directory(const std::string& path, const std::string& dir) {
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) {
    if (errno == ENOENT) throw ConfigError(path + ": directory " + dir + " does not exist");
    throw ConfigError(path + ": cannot inspect directory " + dir + ": " + why());
  }
  if (!S_ISDIR(st.st_mode)) throw ConfigError(path + ": " + dir + " is not a directory");
  if (::access(dir.c_str(), W_OK | X_OK) != 0) throw ConfigError(path + ": directory " + dir + " is not writable");
}

std::string exists_message(const std::string& path, const std::string& target) {
  const std::string link = target == path ? "" : " (a symbolic link to " + target + ", written through)";
  return path + ": file exists" + link + "; pass --force to overwrite it";
}

Dest classify(const std::string& path, bool force) {
  if (path.empty()) throw ConfigError("an output path is empty");
  if (const int fd = descriptor_name(path); fd >= 0) {
    if (::fcntl(fd, F_GETFD) < 0) throw ConfigError(path + ": descriptor " + std::to_string(fd) + " is not open");
    return {Kind::descriptor, path, fd};
  }
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno != ENOENT) throw ConfigError(path + ": cannot inspect: " + why());
    check_directory(path, dir_of(path));
    return {Kind::create, path};
  }
  std::string target = path;
  if (S_ISLNK(st.st_mode)) {
    char* real = ::realpath(path.c_str(), nullptr);
    if (!real) {
      if (errno != ENOENT) throw ConfigError(path + ": cannot follow the symbolic link: " + why());
      char buf[4096];
      const ssize_t n = ::readlink(path.c_str(), buf, sizeof buf - 1);
      const std::string to = n > 0 ? std::string(buf, static_cast<size_t>(n)) : "?";
      throw ConfigError(path + ": is a symbolic link to '" + to +
                        "', which does not exist; shardplan writes through a link only to an existing file (name the "
                        "file itself to create it)");
    }
    target = real;
    std::free(real);
    if (::stat(target.c_str(), &st) != 0) throw ConfigError(path + ": cannot inspect " + target + ": " + why());
  }
  const std::string via = target == path ? "" : " (the target of the symbolic link " + path + ")";
  if (S_ISREG(st.st_mode)) {
    if (!force) throw ConfigError(exists_message(path, target));
    check_directory(path, dir_of(target));
    return {Kind::replace, target, -1, static_cast<mode_t>(st.st_mode & 07777)};
  }
  if (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode)) return {Kind::stream, target};
  const char* what = S_ISDIR(st.st_mode)    ? "a directory"
                     : S_ISBLK(st.st_mode)  ? "a block device"
                     : S_ISSOCK(st.st_mode) ? "a socket"
                                            : "not a regular file";
  throw ConfigError((via.empty() ? path : target) + via + ": is " + what +
                    "; shardplan writes regular files (or into a FIFO or character device) and never replaces "
                    "anything else, even with --force");
}

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

mode_t new_file_mode() {
  const mode_t mask = ::umask(0);  // read the umask (the CLI is single-threaded here)
  ::umask(mask);
  return 0666 & ~mask;
}

void sync_directory(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;  // durability only; the rename is already visible
  ::fsync(fd);
  ::close(fd);
}

/// Puts the temp file at `d.target`: rename with force; else link(2), which fails on an existing name, or, where
/// the file system has no hard links, renameat2(RENAME_NOREPLACE) with the same guarantee.
void place(const std::string& path, const std::string& tmp, const Dest& d, bool force) {
  if (force) {
    if (std::rename(tmp.c_str(), d.target.c_str()) == 0) return;
    const std::string reason = why();
    ::unlink(tmp.c_str());
    throw ConfigError(path + ": write failed: " + reason);
  }
  int rc = ::link(tmp.c_str(), d.target.c_str());
  if (rc == 0) {
    ::unlink(tmp.c_str());
    return;
  }
  if (errno != EEXIST) {
    rc = ::renameat2(AT_FDCWD, tmp.c_str(), AT_FDCWD, d.target.c_str(), RENAME_NOREPLACE);
    if (rc == 0) return;
    if (errno == EINVAL || errno == ENOSYS) {
      ::unlink(tmp.c_str());
      throw ConfigError(path +
                        ": the file system supports neither hard links nor no-replace renames, so the file "
                        "cannot be created without a race; pass --force to write it anyway");
    }
  }
  const int err = errno;
  ::unlink(tmp.c_str());
  if (err == EEXIST) throw ConfigError(exists_message(path, d.target));
  throw ConfigError(path + ": write failed: " + std::strerror(err));
}

}  // namespace

void check_destination(const std::string& path, bool force) { classify(path, force); }

void write_file_atomic(const std::string& path, const std::string& content, bool force) {
  const Dest d = classify(path, force);
  if (d.kind == Kind::descriptor) {
    if (d.fd == 1) std::cout.flush();  // keep the order of anything the command printed before
    if (d.fd == 2) std::cerr.flush();
    if (!write_all(d.fd, content)) throw ConfigError(path + ": write failed: " + why());
    return;
  }
  if (d.kind == Kind::stream) {
    // No O_CREAT, no O_TRUNC: the device or FIFO is written into, never replaced.
    const int fd = ::open(d.target.c_str(), O_WRONLY | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) throw ConfigError(path + ": cannot open for writing: " + why());
    const bool ok = write_all(fd, content);
    const std::string reason = why();
    ::close(fd);
    if (!ok) throw ConfigError(path + ": write failed: " + reason);
    return;
  }
  const std::string dir = dir_of(d.target);
  const size_t slash = d.target.rfind('/');
  const std::string base = slash == std::string::npos ? d.target : d.target.substr(slash + 1);
  std::string tmp = dir + "/." + base + ".tmpXXXXXX";
  const int fd = ::mkstemp(tmp.data());  // O_CREAT | O_EXCL: never an existing file
  if (fd < 0) throw ConfigError(path + ": write failed: cannot create a temp file in " + dir + ": " + why());
  const mode_t mode = d.kind == Kind::replace ? d.mode : new_file_mode();
  bool ok = write_all(fd, content) && ::fchmod(fd, mode) == 0 && ::fsync(fd) == 0;
  std::string reason = why();
  if (::close(fd) != 0 && ok) {
    ok = false;
    reason = why();
  }
  if (!ok) {
    ::unlink(tmp.c_str());
    throw ConfigError(path + ": write failed: " + reason);
  }
  if (testing::before_place) testing::before_place(d.target);
  place(path, tmp, d, force);
  sync_directory(dir);
}

}  // namespace shardplan::io
