// Flags of the memory-tier options: hybrid sharding (--dp-shard), DeepSpeed ZeRO++ (--zeropp), parameter offload
// (--param-offload), the offload device (--offload-device) and activation offload (--activation-offload-layers),
// for predict (one value each) and search (a list each). docs/hsdp.md, docs/offload.md.
#pragma once

#include <CLI/CLI.hpp>
#include <optional>
#include <string>

#include "modeler/plan.h"
#include "modeler/plan_space.h"

namespace shardplan::cli {

struct ShardingFlags {
  std::optional<int> dp_shard;
  std::optional<std::string> zeropp;
  bool param_offload = false;
  std::string offload_device = "cpu";
  std::optional<int> activation_offload_layers;
};

void add_sharding_flags(CLI::App* app, ShardingFlags* f);
/// Fills the plan's fields; ConfigError naming the flag for a malformed --zeropp.
void apply_sharding_flags(const ShardingFlags& f, Plan* p);
/// The flags reproducing the plan's settings (" --dp-shard 8 --zeropp qwz"), "" when none is set.
std::string sharding_arguments(const Plan& p);
/// The search table's label ("hsdp8 zpp:qwz+hpz8 poff nvme aoff4"), "" when none is set.
std::string sharding_label(const Plan& p);

struct SearchShardingFlags {
  std::string dp_shard;       // list: "0,8"
  std::string zeropp;         // list: "off,qwz,qwz+hpz8+qgz"
  std::string param_offload;  // list: "off,on"
  std::string offload_device = "cpu";
  std::string activation_offload_layers;  // list: "0,4"
};

void add_search_sharding_flags(CLI::App* app, SearchShardingFlags* f);
/// Fills the request's lists; ConfigError naming the flag and the bad item.
void apply_search_sharding_flags(const SearchShardingFlags& f, SpaceRequest* r);

}  // namespace shardplan::cli
