// `shardplan list models|gpus|clusters|frameworks [--json]`: what this build ships, one line each, read from the
// same files predict and search load (so a listed name is one they accept).
#include <algorithm>
#include <cstdio>
#include <iostream>

#include "apps/command.h"
#include "apps/report_table.h"
#include "apps/text.h"
#include "modeler/framework.h"
#include "modeler/io/model_io.h"
#include "modeler/io/paths.h"
#include "modeler/io/report_json.h"
#include "modeler/io/system_io.h"
#include "modeler/io/yaml_reader.h"

namespace shardplan::cli {
namespace {

io::ListEntry model_entry(const std::string& name) {
  const ModelDesc m = io::load_model(name, /*allow_moe=*/true);
  io::ListEntry e{name, "", {}, {}};
  e.description = format_params(total_params(m)) + " params";
  if (m.moe)
    e.description += " (" + format_params(activated_params(m)) + " active, " + std::to_string(m.moe->top_k) + " of " +
                     std::to_string(m.moe->experts) + " experts)";
  e.description += ", " + std::to_string(m.layers) + " layers, hidden " + std::to_string(m.hidden) + ", " +
                   std::to_string(m.heads) + " heads (" + std::to_string(m.kv_heads) + " kv)";
  e.numbers = {{"total_params", total_params(m)}, {"active_params", activated_params(m)},
               {"layers", m.layers},             {"hidden", m.hidden}};
  return e;
}

io::ListEntry gpu_entry(const std::string& name) {
  const io::GpuProfile g = io::load_gpu_profile(name);
  const double bf16 = g.gpu.peak_for(Dtype::bf16).v, fp8 = g.gpu.peak_for(Dtype::fp8).v;
  io::ListEntry e{name, "", {}, {}};
  e.description = fmt("%.0f", bf16 / 1e12) + " bf16 TFLOP/s dense" +
                  (fp8 > 0 ? ", " + fmt("%.0f", fp8 / 1e12) + " fp8" : std::string()) + ", " +
                  fmt("%.0f", to_GiB(g.gpu.hbm_capacity)) + " GiB at " + fmt("%.2f", g.gpu.hbm_bw.v / 1e12) +
                  " TB/s; standard node of " + std::to_string(g.node.gpus_per_node);
  e.numbers = {{"peak_bf16_flops", bf16},
               {"peak_fp8_flops", fp8},
               {"hbm_bytes", g.gpu.hbm_capacity.v},
               {"hbm_bytes_per_s", g.gpu.hbm_bw.v},
               {"gpus_per_node", g.node.gpus_per_node}};
  return e;
}

io::ListEntry cluster_entry(const std::string& name) {
  const System s = io::load_system(name, 0);
  const int per_node = s.gpus_per_node > 0 ? s.gpus_per_node : s.gpus;
  const int nodes = (s.gpus + per_node - 1) / per_node;
  std::string tiers;
  for (const Tier& t : s.tiers)
    tiers +=
        (tiers.empty() ? "" : " + ") + t.name + (t.domain_gpus > 0 ? " (" + std::to_string(t.domain_gpus) + ")" : "");
  io::ListEntry e{name, "", {}, {}};
  e.description = std::to_string(s.gpus) + " x " + s.gpu.name + " by default (" + std::to_string(nodes) +
                  (nodes == 1 ? " node" : " nodes") + " of " + std::to_string(per_node) + " GPUs), tiers " + tiers;
  e.numbers = {{"default_gpus", s.gpus}, {"gpus_per_node", per_node}, {"nodes", nodes}};
  e.strings = {{"gpu", s.gpu.name}};
  return e;
}

class ListCommand final : public Command {
 public:
  CLI::App* setup(CLI::App& app) override {
    CLI::App* sub = app.add_subcommand("list", "list the shipped models, GPUs, clusters or framework profiles");
    sub->add_option("what", what_, "models, gpus, clusters or frameworks")
        ->required()
        ->check(CLI::Validator(
            [](std::string& v) -> std::string {
              const std::vector<std::string> kinds = {"models", "gpus", "clusters", "frameworks"};
              if (std::find(kinds.begin(), kinds.end(), v) != kinds.end()) return "";
              const std::string near = io::closest_match(v, kinds);
              return "unknown list '" + v + "' (models, gpus, clusters or frameworks)" +
                     (near.empty() ? "" : ", did you mean '" + near + "'?");
            },
            "models|gpus|clusters|frameworks"));
    sub->add_flag("--json", json_, "print the list as JSON (schema_version 1)");
    return sub;
  }

  int run() override {
    std::vector<io::ListEntry> rows;
    if (what_ == "models") {
      for (const std::string& n : io::list_data_files("models", {".yaml", ".json"})) rows.push_back(model_entry(n));
    } else if (what_ == "gpus") {
      for (const std::string& n : io::list_data_files("hwprofiles/gpus", {".yaml"})) rows.push_back(gpu_entry(n));
    } else if (what_ == "clusters") {
      for (const std::string& n : io::list_data_files("hwprofiles/clusters", {".yaml"}))
        rows.push_back(cluster_entry(n));
    } else {
      for (const std::string& n : framework_names()) rows.push_back({n, find_framework(n)->description, {}, {}});
    }
    if (json_) {
      std::cout << io::list_json(what_, rows).dump(2) << "\n";
      return 0;
    }
    size_t width = 0;
    for (const io::ListEntry& r : rows) width = std::max(width, r.name.size());
    for (const io::ListEntry& r : rows)
      std::printf("%-*s  %s\n", static_cast<int>(width), r.name.c_str(), r.description.c_str());
    return 0;
  }

 private:
  std::string what_;
  bool json_ = false;
};

}  // namespace

std::unique_ptr<Command> make_list_command() { return std::make_unique<ListCommand>(); }

}  // namespace shardplan::cli
