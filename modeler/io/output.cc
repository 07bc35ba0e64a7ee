#include "modeler/io/output.h"

#include "modeler/io/atomic_write.h"

namespace shardplan::io {

void Output::check() const {
  if (!to_stdout()) check_destination(path_, force_);
}

void Output::write(const std::string& content) const {
  // /dev/stdout is written as descriptor 1, which ReportToStderr does not redirect.
  write_file_atomic(to_stdout() ? "/dev/stdout" : path_, content, force_);
}

}  // namespace shardplan::io
