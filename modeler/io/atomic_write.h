// The one writer for every file shardplan writes (plans, launcher files, traces, sweep CSV/JSON/SVG, calibrated
// profiles). Rules (docs/output.md):
//  * A regular file is written atomically: the content goes to a temp file (O_EXCL) in the target's directory,
//    which is then linked onto a new name (link(2) fails if the name appeared meanwhile: no check-then-rename race)
//    or, with --force, renamed over an existing file. A reader or an interrupted run never sees half a file.
//  * Nothing is replaced without --force.
//  * A symbolic link is written THROUGH: its final target is the file written (atomically, with --force when it
//    exists); the link itself is never replaced. A dangling link is refused (no file is created through it).
//  * A character device or FIFO (/dev/null, a named pipe) is written into, never replaced; /dev/stdout,
//    /dev/stderr, /dev/fd/N and /proc/self/fd/N are the process's open descriptors and are written as such (so
//    `--out /dev/stdout > file` appends to the shell's file instead of replacing it).
//  * A directory, block device, socket or anything else is refused, whatever --force says.
#pragma once

#include <string>

namespace shardplan::io {

/// Checks that `path` can be written under the rules above, without writing: call it before any long work, so a
/// refusal comes first. Throws ConfigError naming the path: "PATH: file exists; pass --force to overwrite it",
/// "PATH: directory DIR does not exist", "PATH: is a directory; ...", "PATH: is a symbolic link to ..., which does
/// not exist; ...".
void check_destination(const std::string& path, bool force);

/// Writes `content` to `path` under the rules above. Throws ConfigError as check_destination does, and
/// "PATH: write failed: REASON" when the write itself fails.
void write_file_atomic(const std::string& path, const std::string& content, bool force);

namespace testing {
/// Called after the temp file is complete and before it is put in place, with the path it will take. Exists only
/// so tests can create a file in that window and check that it is not replaced without --force.
extern void (*before_place)(const std::string& target);
}  // namespace testing

}  // namespace shardplan::io
