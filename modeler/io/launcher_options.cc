#include "modeler/io/launcher_options.h"

namespace shardplan::io {

const std::vector<LauncherOption>& launcher_options() {
  static const std::vector<LauncherOption> options = [] {
    std::vector<LauncherOption> v;
    detail::append_megatron_options(&v);
    detail::append_deepspeed_options(&v);
    detail::append_torchtitan_options(&v);
    detail::append_nemo_options(&v);
    return v;
  }();
  return options;
}

bool is_launcher_option(const std::string& format, const std::string& name) {
  for (const LauncherOption& o : launcher_options())
    if (format == o.format && name == o.name) return true;
  return false;
}

}  // namespace shardplan::io
