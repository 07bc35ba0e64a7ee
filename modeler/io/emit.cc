#include "modeler/io/emit.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>

#include "modeler/framework_rules.h"
#include "modeler/precision_recipe.h"
#include "modeler/io/emit_common.h"
#include "modeler/io/report_json.h"
#include "modeler/io/yaml_reader.h"
#include "modeler/problems.h"

namespace shardplan::io {

namespace {

using nlohmann::json;

constexpr const char* kFormatNames[] = {"json", "megatron", "torchtitan", "deepspeed", "nemo", "torchtitan-toml"};
constexpr int kNumFormats = 6;
using detail::nodes_of;

/// One parallel group in Megatron's rank order (tp innermost, then cp, dp, pp) and the tier it spans.
json group_json(const System& s, int size, int stride) {
  const int tier = s.tier_for_group(size, stride);
  const int span = (size - 1) * stride + 1;  // consecutive ranks from the first member to the last
  const int per_node = s.gpus_per_node > 0 ? s.gpus_per_node : s.gpus;
  return json{{"size", size},
              {"stride", stride},
              {"within_node", size == 1 || span <= per_node},
              {"tier", tier >= 0 && tier < static_cast<int>(s.tiers.size()) ? s.tiers[static_cast<size_t>(tier)].name
                                                                            : std::string("?")}};
}

std::string emit_json(const EmitInput& in) {
  const Plan& p = in.estimate.plan;
  const System& s = in.system;
  json j;
  j["schema_version"] = 1;
  j["kind"] = "shardplan-plan";
  j["shardplan_version"] = SHARDPLAN_VERSION;
  j["model"] = in.model;
  j["framework"] = in.framework;
  j["system"] = {{"name", s.name},
                 {"gpu", s.gpu.name},
                 {"gpus", s.gpus},
                 {"gpus_per_node", s.gpus_per_node},
                 {"nodes", nodes_of(s)}};
  if (in.inputs) j["inputs"] = inputs_json(*in.inputs);  // what predict --plan reads to build the same system
  j["plan"] = plan_json(p);
  j["rank_order"] = p.tsp > 1 ? "tp-tsp-cp-dp-pp" : "tp-cp-dp-pp";
  j["groups"] = {{"tp", group_json(s, p.tp, 1)},
                 {"cp", group_json(s, p.cp, p.tp * p.tsp)},
                 {"dp", group_json(s, p.dp, p.inner())},
                 {"pp", group_json(s, p.pp, p.inner() * p.dp)}};
  if (p.tsp > 1) j["groups"]["tsp"] = group_json(s, p.tsp, p.tp);
  if (in.moe) {
    // Megatron-Core lays expert layers out as etp-ep-edp-pp: an EP group's members sit at stride etp.
    j["expert_rank_order"] = "etp-ep-edp-pp";
    j["groups"]["ep"] = group_json(s, p.ep, p.etp);
  }
  j["predicted"] = {{"step_s", in.estimate.time.step().v},
                    {"tokens_per_s_per_gpu", in.estimate.tokens_per_s_per_gpu},
                    {"mfu", in.estimate.mfu},
                    {"memory_bytes", in.estimate.memory.total().v}};
  return j.dump(2) + "\n";
}

}  // namespace

namespace detail {

int gpus_per_node_of(const System& s) { return s.gpus_per_node > 0 ? std::min(s.gpus_per_node, s.gpus) : s.gpus; }

int nodes_of(const System& s) {
  const int per_node = gpus_per_node_of(s);
  return (s.gpus + per_node - 1) / per_node;
}

std::string comment_text(const std::string& s) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (const char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '\n') out += "\\n";
    else if (c == '\r') out += "\\r";
    else if (c == '\t') out += "\\t";
    else if (u < 0x20 || u == 0x7f) out += std::string("\\x") + kHex[u >> 4] + kHex[u & 0xf];
    else out += c;
  }
  return out;
}

std::string header(const EmitInput& in, const std::string& comment, const std::string& target) {
  const Plan& p = in.estimate.plan;
  std::ostringstream o;
  // The model (a name or a path as given) and the GPU's name come from the user: escaped so that a newline in them
  // cannot end the comment and put its remainder into the script or config as code.
  o << comment << " shardplan " << SHARDPLAN_VERSION << " plan for " << comment_text(in.model) << " on "
    << in.system.gpus << " x " << comment_text(in.system.gpu.name) << " (framework profile "
    << comment_text(in.framework) << ")\n"
    << comment << " targets " << target << "\n"
    << comment << " tp " << p.tp << " cp " << p.cp << " pp " << p.pp << " vpp " << p.vpp << " dp " << p.dp
    << (in.moe ? " ep " + std::to_string(p.ep) + " etp " + std::to_string(p.etp) : "") << " zero " << p.zero
    << (p.sequence_parallel ? " sp" : "") << " mbs " << p.micro_batch << " gbs " << p.global_batch << " seq "
    << p.seq_len << " recompute " << to_string(p.recompute) << " precision " << precision_name(p) << "\n"
    << comment << " predicted " << static_cast<long>(in.estimate.tokens_per_s_per_gpu) << " tokens/s/GPU, step "
    << num(in.estimate.time.step().v, "%.3f") << " s, " << num(to_GiB(in.estimate.memory.total()), "%.1f")
    << " GiB per GPU\n";
  return o.str();
}

std::vector<int> stage_layers(const Plan& p, int layers) {
  const int stages = std::max(1, p.pp * p.vpp);
  std::vector<int> out(static_cast<size_t>(stages), layers / stages);
  int extra = layers % stages;
  // Middle stages take the extra layers first; the first and last (embedding, loss) take them last.
  for (int i = 1; i + 1 < stages && extra > 0; ++i, --extra) ++out[static_cast<size_t>(i)];
  if (extra > 0) ++out.back(), --extra;
  if (extra > 0) ++out.front(), --extra;
  return out;
}

const ModelDesc& desc_of(const EmitInput& in) {
  if (!in.desc) throw std::logic_error("emit_plan: the launch units need the model description");
  return *in.desc;
}

std::string what(EmitFormat f) { return std::string("--emit ") + to_string(f) + ": "; }

Fp8Recipe fp8_recipe_of(const Plan& p, const std::string& framework) {
  const Framework* fw = find_framework(framework);
  if (!fw) throw std::logic_error("emit: unknown framework profile " + framework);
  return effective_fp8_recipe(p, *fw);
}

}  // namespace detail

EmitFormat parse_emit_format(const std::string& name) {
  for (int i = 0; i < kNumFormats; ++i)
    if (name == kFormatNames[i]) return static_cast<EmitFormat>(i);
  const std::string near = closest_match(name, {std::begin(kFormatNames), std::end(kFormatNames)});
  throw ConfigError("--emit: unknown format '" + name + "' (json, megatron, torchtitan, torchtitan-toml, deepspeed, "
                    "nemo)" + (near.empty() ? "" : ", did you mean '" + near + "'?"));
}

const char* to_string(EmitFormat f) { return kFormatNames[static_cast<int>(f)]; }

const char* emit_profile(EmitFormat f) {
  switch (f) {
    case EmitFormat::json: return nullptr;
    case EmitFormat::megatron: return "megatron-lm";
    case EmitFormat::torchtitan:
    case EmitFormat::torchtitan_toml: return "torchtitan";
    case EmitFormat::deepspeed: return "megatron-deepspeed";
    case EmitFormat::nemo: return "nemo";
  }
  return nullptr;
}

EmitFormat default_emit_format(const Framework& f) {
  switch (f.launcher) {
    case Launcher::megatron: return EmitFormat::megatron;
    case Launcher::nemo: return EmitFormat::nemo;
    case Launcher::torchtitan: return EmitFormat::torchtitan;
    case Launcher::megatron_deepspeed: return EmitFormat::deepspeed;
    case Launcher::none: break;
  }
  return EmitFormat::json;
}

std::vector<CpKind> emit_cp_kinds(EmitFormat f) {
  switch (f) {
    case EmitFormat::json: return {CpKind::ring, CpKind::allgather};  // the plan JSON records either
    // --cp-comm-type p2p / all_gather (Megatron-Core) and Megatron-Bridge's cp_comm_type: both.
    case EmitFormat::megatron:
    case EmitFormat::nemo: return {CpKind::ring, CpKind::allgather};
    // torchtitan main has no context_parallel_rotate_method: K/V are all-gathered, PyTorch's default rotater.
    case EmitFormat::torchtitan: return {CpKind::allgather};
    // v0.2.x's context_parallel_rotate_method: "alltoall" (the ring) or "allgather".
    case EmitFormat::torchtitan_toml: return {CpKind::ring, CpKind::allgather};
    case EmitFormat::deepspeed: return {};  // the launch script writes no context parallelism
  }
  return {};
}

bool emit_writes_cp_kind(EmitFormat f, CpKind k) {
  const std::vector<CpKind> kinds = emit_cp_kinds(f);
  return std::find(kinds.begin(), kinds.end(), k) != kinds.end();
}

std::string emit_plan(EmitFormat format, const EmitInput& in) {
  const Plan& p = in.estimate.plan;
  const std::string what = detail::what(format);
  if (format != EmitFormat::json) {
    // A launch unit writes the plan of its own framework's profile: another profile's plan and numbers would
    // be a different prediction than the one the file states.
    if (in.framework != emit_profile(format))
      throw ConfigError(what + "writes plans of the " + emit_profile(format) + " profile, and this plan was predicted "
                        "with " + in.framework + "; search or predict with --framework " + emit_profile(format));
    // What no launcher format can express: a plan of it would launch something else than was predicted.
    if (p.tsp > 1)
      throw ConfigError(what + "the plan uses folded tensor + sequence parallelism (tsp " + std::to_string(p.tsp) +
                        "), which no supported framework implements; --emit json writes it");
    if (p.changes_training_semantics())
      throw ConfigError(what + "the plan uses subnetwork data parallelism (sdp keep " + num(p.sdp_keep) +
                        "), which no supported framework implements; --emit json writes it");
    Problems problems = in.estimate.problems;
    if (const Framework* fw = find_framework(in.framework))
      check_framework_rules(detail::desc_of(in), in.system, p, *fw, &problems);  // even for a hand-made estimate
    if (!problems.empty())
      throw ConfigError(what + "the plan is not one the framework runs:\n" + join_problems(problems));
  }
  switch (format) {
    case EmitFormat::json: return emit_json(in);
    case EmitFormat::megatron: return detail::emit_megatron(in);
    case EmitFormat::torchtitan: return detail::emit_torchtitan_python(in);
    case EmitFormat::torchtitan_toml: return detail::emit_torchtitan_toml(in);
    case EmitFormat::deepspeed: return detail::emit_deepspeed(in);
    case EmitFormat::nemo: return detail::emit_nemo(in);
  }
  throw std::logic_error("unknown emit format");
}

}  // namespace shardplan::io
