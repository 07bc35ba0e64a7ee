// Writing output files atomically: the content goes to a temp file in the target's directory, which is then
// linked (no --force: fails if the target appeared meanwhile) or renamed (--force) onto the target. A reader or
// an interrupted run (Ctrl-C) never leaves half a file under the target's name.
// calibrate/profile_writer.cc has an equivalent helper; this one is the shared home (same messages).
#pragma once

#include <string>

namespace shardplan::io {

/// Writes `content` to `path`. Throws ConfigError "PATH: file exists; pass --force to overwrite it" when `path`
/// exists and `force` is false, and "PATH: write failed: REASON" when the directory is not writable.
void write_file_atomic(const std::string& path, const std::string& content, bool force);

}  // namespace shardplan::io
