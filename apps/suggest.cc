#include "apps/suggest.h"

#include "modeler/io/yaml_reader.h"

namespace shardplan::cli {

namespace {

std::vector<std::string> long_names(const CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::Option* opt : app.get_options()) {
    for (const std::string& n : opt->get_lnames()) names.push_back("--" + n);
    for (const std::string& n : opt->get_fnames())
      if (n.rfind("--", 0) == 0) names.push_back(n);
  }
  return names;
}

std::string with_suggestion(const std::string& message, const std::string& near) {
  return message + (near.empty() ? "" : ", did you mean '" + near + "'?");
}

}  // namespace

std::string unknown_argument_hint(const CLI::App& app, const std::vector<std::string>& args) {
  const CLI::App* here = &app;
  std::string path;  // "predict", "calibrate run": where the argument stands
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--") break;
    if (a.rfind("--", 0) == 0) {
      const std::string name = a.substr(0, a.find('='));
      const CLI::Option* opt = here->get_option_no_throw(name);
      if (!opt)
        return with_suggestion((path.empty() ? "" : path + ": ") + "unknown flag '" + name + "'",
                               io::closest_match(name, long_names(*here)));
      if (a.find('=') == std::string::npos && opt->get_items_expected_min() > 0) ++i;  // its value
      continue;
    }
    if (a.size() > 1 && a[0] == '-') continue;  // short flags (-h) and negative numbers
    std::vector<std::string> subs;
    const CLI::App* next = nullptr;
    for (const CLI::App* sub : here->get_subcommands([](const CLI::App*) { return true; })) {
      subs.push_back(sub->get_name());
      if (sub->get_name() == a) next = sub;
    }
    if (next) {
      here = next;
      path += (path.empty() ? "" : " ") + a;
      continue;
    }
    // A word where only subcommands can stand (no positional arguments here) names an unknown command.
    bool positionals = false;
    for (const CLI::Option* opt : here->get_options()) positionals = positionals || opt->get_positional();
    if (!subs.empty() && !positionals)
      return with_suggestion((path.empty() ? "" : path + ": ") + "unknown command '" + a + "'",
                             io::closest_match(a, subs));
  }
  return "";
}

}  // namespace shardplan::cli
