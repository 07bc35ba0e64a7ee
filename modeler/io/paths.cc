#include "modeler/io/paths.h"
#include "shardplan_source_dir.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include "modeler/io/yaml_reader.h"
#include "modeler/problems.h"

namespace fs = std::filesystem;

namespace shardplan::io {

std::string data_root() {
  if (const char* env = std::getenv("SHARDPLAN_HOME"); env && *env) return env;
  return SHARDPLAN_SOURCE_DIR;
}

std::vector<std::string> list_data_files(const std::string& dir, const std::vector<std::string>& extensions) {
  std::vector<std::string> names;
  const fs::path root = fs::path(data_root()) / dir;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(root, ec)) {
    if (!entry.is_regular_file()) continue;
    const std::string file = entry.path().filename().string();
    for (const std::string& ext : extensions)
      if (file.size() > ext.size() && file.compare(file.size() - ext.size(), ext.size(), ext) == 0)
        names.push_back(file.substr(0, file.size() - ext.size()));
  }
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  return names;
}

std::string resolve_data_file(const std::string& name_or_path, const std::string& dir,
                              const std::vector<std::string>& extensions, const std::string& what) {
  std::error_code ec;
  if (fs::is_regular_file(name_or_path, ec)) return name_or_path;
  const bool looks_like_path = name_or_path.find('/') != std::string::npos ||
                               name_or_path.find(".yaml") != std::string::npos ||
                               name_or_path.find(".json") != std::string::npos;
  if (looks_like_path) throw ConfigError(name_or_path + ": cannot open " + what + " file");
  for (const std::string& ext : extensions) {
    const fs::path p = fs::path(data_root()) / dir / (name_or_path + ext);
    if (fs::is_regular_file(p, ec)) return p.string();
  }
  const std::vector<std::string> known = list_data_files(dir, extensions);
  std::string list;
  for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
  const std::string near = closest_match(name_or_path, known);
  throw ConfigError("unknown " + what + " '" + name_or_path + "'" +
                    (near.empty() ? "" : ", did you mean '" + near + "'?") + " (known: " + list + ")");
}

}  // namespace shardplan::io
