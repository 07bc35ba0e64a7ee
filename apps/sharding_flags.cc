#include "apps/sharding_flags.h"

#include <cstdlib>

#include "apps/text.h"
#include "modeler/problems.h"
#include "modeler/zeropp.h"

namespace shardplan::cli {

namespace {

ZeroPP zeropp_flag(const std::string& flag, const std::string& text) {
  std::string error;
  const auto z = parse_zeropp(text, &error);
  if (!z) throw ConfigError(flag + ": " + error);
  return *z;
}

int int_item(const std::string& flag, const std::string& s, int min_value) {
  char* end = nullptr;
  const long v = std::strtol(s.c_str(), &end, 10);
  if (s.empty() || *end != '\0' || v < min_value || v > (1L << 24))
    throw ConfigError(flag + ": '" + s + "' is not an integer in [" + std::to_string(min_value) + ", 2^24]");
  return static_cast<int>(v);
}

OffloadDevice device_flag(const std::string& s) { return s == "nvme" ? OffloadDevice::nvme : OffloadDevice::cpu; }

}  // namespace

void add_sharding_flags(CLI::App* app, ShardingFlags* f) {
  app->add_option("--dp-shard", f->dp_shard,
                  "hybrid sharding (HSDP): data-parallel ranks per shard group, states sharded inside it and "
                  "replicated over dp / N groups (docs/hsdp.md; default: shard over all of dp)")
      ->check(positive_number());
  app->add_option("--zeropp", f->zeropp,
                  "DeepSpeed ZeRO++ with --zero 3: qwz (int8 weight all-gather), hpzN (secondary weight shard over N "
                  "ranks), qgz (int4 gradient all-to-all), joined by +, or off (default off)");
  app->add_flag("--param-offload,!--no-param-offload", f->param_offload,
                "parameters on the host too: DeepSpeed offload_param (with --zero 3 --optimizer-offload 1), FSDP "
                "CPU offload (torchtitan enable_cpu_offload, with --zero 2 or 3) (default off)");
  app->add_option("--offload-device", f->offload_device,
                  "where offloaded states live: cpu or nvme (DeepSpeed ZeRO-Infinity; default cpu)")
      ->check(CLI::IsMember({"cpu", "nvme"}));
  app->add_option("--activation-offload-layers", f->activation_offload_layers,
                  "activations of N layers offloaded to the host (Megatron-Core --cpu-offloading-num-layers; pp 1, no "
                  "recompute; default 0)")
      ->check(positive_number());
}

void apply_sharding_flags(const ShardingFlags& f, Plan* p) {
  p->dp_shard = f.dp_shard.value_or(0);
  if (f.zeropp) p->zeropp = zeropp_flag("--zeropp", *f.zeropp);
  p->param_offload = f.param_offload;
  p->offload_device = device_flag(f.offload_device);
  p->activation_offload_layers = f.activation_offload_layers.value_or(0);
}

std::string sharding_arguments(const Plan& p) {
  std::string s;
  if (p.dp_shard > 0) s += " --dp-shard " + std::to_string(p.dp_shard);
  if (p.zeropp.any()) s += " --zeropp " + zeropp_string(p.zeropp);
  if (p.param_offload) s += " --param-offload";
  if (p.offload_device == OffloadDevice::nvme) s += " --offload-device nvme";
  if (p.activation_offload_layers > 0)
    s += " --activation-offload-layers " + std::to_string(p.activation_offload_layers);
  return s;
}

std::string sharding_label(const Plan& p) {
  std::string s;
  if (p.dp_shard > 0) s += " hsdp" + std::to_string(p.dp_shard);
  if (p.zeropp.any()) s += " zpp:" + zeropp_string(p.zeropp);
  if (p.param_offload) s += " poff";
  if (p.offload_device == OffloadDevice::nvme) s += " nvme";
  if (p.activation_offload_layers > 0) s += " aoff" + std::to_string(p.activation_offload_layers);
  return s;
}

void add_search_sharding_flags(CLI::App* app, SearchShardingFlags* f) {
  app->add_option("--dp-shard", f->dp_shard,
                  "HSDP shard-group sizes to try, a list; 0 = shard over all of dp (default 0; docs/hsdp.md)");
  app->add_option("--zeropp", f->zeropp,
                  "DeepSpeed ZeRO++ settings to try, a list of off or qwz/hpzN/qgz joined by + (default off)");
  app->add_option("--param-offload", f->param_offload,
                  "parameter offload settings to try, a list of off, on (default off)");
  app->add_option("--offload-device", f->offload_device, "cpu or nvme for every offloading plan (default cpu)")
      ->check(CLI::IsMember({"cpu", "nvme"}));
  app->add_option("--activation-offload-layers", f->activation_offload_layers,
                  "activation-offload layer counts to try, a list; 0 = none (default 0)");
}

void apply_search_sharding_flags(const SearchShardingFlags& f, SpaceRequest* r) {
  for (const std::string& s : split_commas(f.dp_shard)) r->dp_shard.push_back(int_item("--dp-shard", s, 0));
  for (const std::string& s : split_commas(f.zeropp)) r->zeropp.push_back(zeropp_flag("--zeropp", s));
  for (const std::string& s : split_commas(f.param_offload)) {
    if (s != "on" && s != "off") throw ConfigError("--param-offload: '" + s + "' is neither on nor off");
    r->param_offload.push_back(s == "on");
  }
  r->offload_device = device_flag(f.offload_device);
  for (const std::string& s : split_commas(f.activation_offload_layers))
    r->activation_offload_layers.push_back(int_item("--activation-offload-layers", s, 0));
}

}  // namespace shardplan::cli
