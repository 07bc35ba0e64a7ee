// Where shipped data lives: hwprofiles/ and models/ under the data root. The root is $SHARDPLAN_HOME when set,
// else the source tree the binary was built from.
#pragma once

#include <string>
#include <vector>

namespace shardplan::io {

std::string data_root();
/// Resolves `name_or_path`: an existing file path is returned as is; otherwise `<root>/<dir>/<name><ext>` for
/// each extension tried in order. Throws ConfigError listing the available names (with a suggestion) if none.
std::string resolve_data_file(const std::string& name_or_path, const std::string& dir,
                              const std::vector<std::string>& extensions, const std::string& what);
/// Names (file stems) of the files in `<root>/<dir>` with one of the extensions, sorted.
std::vector<std::string> list_data_files(const std::string& dir, const std::vector<std::string>& extensions);

}  // namespace shardplan::io
