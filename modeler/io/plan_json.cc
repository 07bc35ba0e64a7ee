#include "modeler/io/plan_json.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <map>
#include <set>

#include "modeler/finetune.h"
#include "modeler/io/json_object_reader.h"
#include "modeler/io/json_text.h"
#include "modeler/io/report_json.h"
#include "modeler/io/yaml_reader.h"
#include "modeler/pipeline_layout.h"
#include "modeler/problems.h"
#include "modeler/zeropp.h"

namespace shardplan::io {

namespace {

using nlohmann::json;

// predict's flag spellings, which hand-written plan objects use by mistake: the reader suggests the plan key.
const std::map<std::string, std::string> kFlagNames = {
    {"mbs", "micro_batch"},       {"gbs", "global_batch"},        {"seq", "seq_len"},
    {"sp", "sequence_parallel"},  {"tp_overlap", "tp_comm_overlap"}, {"ep_overlap", "ep_comm_overlap"},
    {"uneven_pp", "uneven_pipeline"}, {"cp-kind", "cp_kind"},     {"recompute-layers", "recompute_layers"}};

// Every key plan_json() writes (report_json.cc); the derived ones are checked against the fields they derive from.
PlanFields read_plan(ObjectReader r) {
  PlanFields f;
  f.tp = r.opt_int("tp", 1);
  f.pp = r.opt_int("pp", 1);
  f.vpp = r.opt_int("vpp", 1);
  f.dp = r.opt_int("dp", 1);
  f.cp = r.opt_int("cp", 1);
  f.ep = r.opt_int("ep", 1);
  f.etp = r.opt_int("etp", 1);
  f.tsp = r.opt_int("tsp", 1);
  f.zero = r.opt_int("zero", 0, 3);
  f.sequence_parallel = r.opt_bool("sequence_parallel");
  f.tp_comm_overlap = r.opt_bool("tp_comm_overlap");
  f.ep_comm_overlap = r.opt_bool("ep_comm_overlap");
  f.uneven_pipeline = r.opt_bool("uneven_pipeline");
  if (const auto layout = r.opt_string("pipeline_layout"); layout && !layout->empty()) {
    std::string error;
    if (!parse_pipeline_layout(*layout, &error)) r.fail("pipeline_layout", "'" + *layout + "': " + error);
    f.pipeline_layout = *layout;
  }
  f.mtp_layers = r.opt_int("mtp_layers", 0);
  if (const auto k = r.opt_choice("cp_kind", {"ring", "allgather"}))
    f.cp_kind = *k == "ring" ? CpKind::ring : CpKind::allgather;
  f.micro_batch = r.opt_int("micro_batch", 1);
  f.global_batch = r.opt_int("global_batch", 1);
  f.seq_len = r.opt_int("seq_len", 1);
  if (const auto s = r.opt_choice("recompute", {"none", "selective", "full"}))
    f.recompute = *s == "none" ? Recompute::none : *s == "selective" ? Recompute::selective : Recompute::full;
  f.recompute_layers = r.opt_int("recompute_layers", 0);
  if (const json* mods = r.get("recompute_modules")) {
    // A list of Megatron-Core module names (what plan_json writes) or one string joined by '+'.
    std::string text;
    if (mods->is_string()) {
      text = mods->get<std::string>();
    } else if (mods->is_array()) {
      for (const json& m : *mods) {
        if (!m.is_string()) r.fail("recompute_modules", "expected module names, got " + json_type_name(m));
        text += (text.empty() ? "" : "+") + m.get<std::string>();
      }
    } else {
      r.fail("recompute_modules", "expected a list of module names, got " + json_type_name(*mods));
    }
    if (!text.empty()) {
      std::string unknown;
      const std::optional<unsigned> bits = parse_recompute_modules(text, &unknown);
      if (!bits) {
        std::vector<std::string> names;
        for (const RecomputeModuleName& m : kRecomputeModuleNames) names.push_back(m.name);
        const std::string near = closest_match(unknown, names);
        r.fail("recompute_modules", "unknown module '" + unknown + "'" +
                                        (near.empty() ? "" : ", did you mean '" + near + "'?"));
      }
      if (f.recompute != Recompute::selective)
        r.fail("recompute_modules", "modules apply to selective recompute, not recompute \"" +
                                        std::string(to_string(f.recompute.value_or(Recompute::none))) + "\"");
      f.recompute_modules = *bits;
    }
  }
  // plan_json writes the contract's names (nvfp4 for fp4 GEMMs; fp4, as older files wrote it, means nvfp4);
  // predict's other --precision names are accepted too.
  if (auto prec = r.opt_choice("precision", {"bf16", "fp16", "fp8", "fp8-delayed", "fp8-tensorwise", "fp8-blockwise",
                                             "mxfp8", "nvfp4", "fp4"}))
    f.precision = *prec == "fp4" ? "nvfp4" : *prec;
  // fp8_recipe (null: the framework's) names the scaling of quantized GEMMs; predict spells it in --precision.
  if (const json* rec = r.get("fp8_recipe")) {
    const std::optional<Fp8Recipe> recipe = rec->is_string() ? parse_fp8_recipe(rec->get<std::string>()) : std::nullopt;
    if (!recipe) r.fail("fp8_recipe", "expected delayed, tensorwise, blockwise, mxfp8 or nvfp4, got " + rec->dump());
    const std::string prec = f.precision.value_or("bf16");
    const std::string named = *recipe == Fp8Recipe::mxfp8   ? "mxfp8"
                              : *recipe == Fp8Recipe::nvfp4 ? "nvfp4"
                                                            : "fp8-" + std::string(to_string(*recipe));
    if (prec == "fp8") {
      if (*recipe == Fp8Recipe::nvfp4)
        r.fail("fp8_recipe", "nvfp4 scales fp4 GEMMs, and precision is fp8 (give precision \"nvfp4\")");
      f.precision = named;
    } else if (prec != named) {
      r.fail("fp8_recipe", "\"" + std::string(to_string(*recipe)) + "\" contradicts precision \"" + prec + "\"" +
                               (prec == "bf16" || prec == "fp16" ? " (a recipe scales fp8 and fp4 GEMMs)" : ""));
    }
  }
  // ZeRO/FSDP parameter all-gather in the recipe's dtype (null: the framework's).
  f.fp8_param_gather = r.opt_bool("fp8_param_gather");
  f.optimizer_offload = r.opt_number("optimizer_offload", 0.0, 1.0);
  f.dp_shard = r.opt_int("dp_shard", 0);
  f.activation_offload_layers = r.opt_int("activation_offload_layers", 0);
  if (const auto z = r.opt_string("zeropp")) {
    std::string error;
    if (!parse_zeropp(*z, &error)) r.fail("zeropp", error);
    f.zeropp = *z;
  }
  f.offload_device = r.opt_choice("offload_device", {"cpu", "nvme"});
  f.param_offload = r.opt_bool("param_offload");
  f.moe_imbalance = r.opt_number("moe_imbalance", 1.0, 1e9);
  f.capacity_factor = r.opt_number("capacity_factor", 0.0, 1e9);
  std::vector<std::string> dispatchers;
  for (int d = 0; d < kNumMoeDispatchers; ++d) dispatchers.push_back(to_string(static_cast<MoeDispatcher>(d)));
  f.moe_dispatcher = r.opt_choice("moe_dispatcher", dispatchers);  // null: the framework's
  f.moe_max_nodes = r.opt_int("moe_max_nodes", 0);
  f.moe_fp8_dispatch = r.opt_bool("moe_fp8_dispatch");
  f.sdp_keep = r.opt_number("sdp_keep", 0.0, 1.0, /*min_open=*/true);
  if (const auto m = r.opt_choice("sdp_mask", {"forward", "backward"}))
    f.sdp_mask = *m == "forward" ? SdpMask::forward : SdpMask::backward;
  if (const auto g = r.opt_choice("sdp_granularity", {"block", "neuron"}))
    f.sdp_granularity = *g == "block" ? SdpGranularity::block : SdpGranularity::neuron;

  // Fine-tuning: what is trained and the optimizer (finetune.h); adapters' keys only with a method.
  f.peft = r.opt_choice("peft", {"none", "lora", "dora", "qlora"});
  f.optimizer = r.opt_choice("optimizer", {"adamw", "adamw8bit", "adafactor", "sgd", "sgd-momentum", "muon", "lion"});
  const auto rank = r.opt_int("lora_rank", 0);
  const auto targets = r.opt_string("lora_targets");
  const auto dropout = r.opt_number("lora_dropout", 0.0, 0.999);
  if (f.peft && *f.peft != "none") {
    f.lora_rank = rank;
    f.lora_dropout = dropout;
    if (targets) {
      std::string unknown;
      if (!parse_lora_targets(*targets, &unknown))
        r.fail("lora_targets", "unknown module '" + unknown + "' (q, k, v, o, gate, up, down, all)");
      f.lora_targets = targets;
    }
  } else if ((rank && *rank > 0) || (targets && !targets->empty()) || (dropout && *dropout > 0)) {
    r.fail(rank && *rank > 0                 ? "lora_rank"
           : targets && !targets->empty() ? "lora_targets"
                                          : "lora_dropout",
           "adapters need \"peft\": \"lora\", \"dora\" or \"qlora\"");
  }

  if (const auto m = r.opt_int("microbatches_per_step", 0); m && f.global_batch && f.micro_batch && f.dp) {
    const long long want = *f.global_batch / (1LL * *f.micro_batch * *f.dp);  // 64-bit: 2^31 x 2^31 fits
    if (*m != want)
      r.fail("microbatches_per_step", std::to_string(*m) + " contradicts global_batch / (micro_batch x dp) = " +
                                          std::to_string(*f.global_batch) + " / (" + std::to_string(*f.micro_batch) +
                                          " x " + std::to_string(*f.dp) + ") = " + std::to_string(want));
  }
  if (const auto c = r.opt_bool("changes_training_semantics"); c && *c != (f.sdp_keep.value_or(1.0) < 1.0))
    r.fail("changes_training_semantics", std::string(*c ? "true" : "false") + " contradicts sdp_keep " +
                                             num(f.sdp_keep.value_or(1.0)) + " (only sdp_keep < 1 changes training)");
  // The reader and the writer share one key list (report_json.h plan_keys): each key written is read here.
  std::set<std::string> written;
  for (const PlanKey& k : plan_keys()) written.insert(k.name);
  SHARDPLAN_CHECK(r.known() == written);
  r.finish();
  return f;
}

PlanInputs read_inputs(ObjectReader r) {
  PlanInputs in;
  const auto model = r.opt_string("model");
  if (!model || model->empty()) r.fail_here("missing required key '" + r.key_path("model") + "'");
  in.model = *model;
  in.framework = r.opt_string("framework").value_or("");
  in.system = r.opt_string("system").value_or("");
  in.gpu = r.opt_string("gpu").value_or("");
  if (in.system.empty() == in.gpu.empty())
    r.fail_here("give one of '" + r.key_path("system") + "' (a cluster) and '" + r.key_path("gpu") + "' (a GPU)");
  const auto gpus = r.opt_int("gpus", 1);
  if (!gpus) r.fail_here("missing required key '" + r.key_path("gpus") + "'");
  in.gpus = *gpus;
  in.gpus_per_node = r.opt_int("gpus_per_node", 1).value_or(0);
  in.nvlink_domain = r.opt_int("nvlink_domain", 1).value_or(0);
  in.nic_gbps = r.opt_number("nic_gbps", 0, 1e9, true).value_or(0);
  in.power_limit_w = r.opt_number("power_limit_w", 0, 1e9, true).value_or(0);
  if (!in.system.empty() && (in.gpus_per_node || in.nvlink_domain || in.nic_gbps > 0))
    r.fail_here("gpus_per_node, nvlink_domain and nic_gbps go with 'gpu', not 'system'");
  r.finish();
  return in;
}

/// A number in a reported section, when present: output keys are read leniently (consumers ignore unknown keys).
std::optional<double> reported(const json& doc, const char* section, const char* key) {
  if (!doc.contains(section) || !doc.at(section).is_object()) return std::nullopt;
  const json& s = doc.at(section);
  if (!s.contains(key) || !s.at(key).is_number()) return std::nullopt;
  return s.at(key).get<double>();
}

void check_schema(ObjectReader& r) {
  const auto v = r.opt_int("schema_version", 0);
  if (!v) r.fail_here("missing required key 'schema_version'");
  if (*v != 1)
    r.fail("schema_version", "this shardplan reads schema 1, got " + std::to_string(*v) +
                                 (*v > 1 ? " (written by a newer shardplan)" : ""));
}

}  // namespace

json inputs_json(const PlanInputs& in) {
  auto str = [](const std::string& s) { return s.empty() ? json(nullptr) : json(s); };
  auto pos = [](double v) { return v > 0 ? json(v) : json(nullptr); };
  auto posi = [](int v) { return v > 0 ? json(v) : json(nullptr); };
  return json{{"model", in.model},        {"framework", in.framework},       {"system", str(in.system)},
              {"gpu", str(in.gpu)},       {"gpus", in.gpus},                 {"gpus_per_node", posi(in.gpus_per_node)},
              {"nvlink_domain", posi(in.nvlink_domain)}, {"nic_gbps", pos(in.nic_gbps)},
              {"power_limit_w", pos(in.power_limit_w)}};
}

json plan_file_json(const PlanFile& f, const std::vector<std::string>& overridden) {
  json predicted = nullptr;
  if (f.predicted) {
    auto opt = [](const std::optional<double>& v) { return v ? json(*v) : json(nullptr); };
    predicted = {{"step_s", f.predicted->step_s},
                 {"tokens_per_s_per_gpu", f.predicted->tokens_per_s_per_gpu},
                 {"mfu", opt(f.predicted->mfu)},
                 {"memory_bytes", opt(f.predicted->memory_bytes)}};
  }
  return json{{"file", f.file},
              {"kind", f.kind},
              {"shardplan_version", f.shardplan_version.empty() ? json(nullptr) : json(f.shardplan_version)},
              {"overridden", overridden},
              {"predicted", predicted}};
}

json compare_json(const PlanFile& f, const Estimate& e, uint64_t rank, uint64_t fitting,
                  const std::vector<std::string>& notes) {
  json j = estimate_json(e);
  j["file"] = f.file;
  j["rank"] = rank > 0 ? json(rank) : json(nullptr);
  j["fitting"] = fitting;
  j["notes"] = notes;
  return j;
}

PlanFile parse_plan_json(std::string_view text, const std::string& filename) {
  json doc;
  try {
    doc = json::parse(text);
  } catch (const json::parse_error& e) {
    const size_t byte = std::min(e.byte, text.size());
    const int line = 1 + static_cast<int>(std::count(text.begin(), text.begin() + static_cast<long>(byte), '\n'));
    std::string what = e.what();
    if (const size_t at = what.find("] "); at != std::string::npos) what = what.substr(at + 2);
    throw ConfigError(filename + ":" + std::to_string(line) + ": not valid JSON: " + what);
  } catch (const json::out_of_range& e) {
    throw_json_number_out_of_range(e, text, filename);
  }
  PlanFile out;
  out.file = filename;
  ObjectReader top(doc, text, filename, {}, &kFlagNames);
  if (doc.is_object() && doc.contains("kind")) {
    const auto kind = top.opt_choice("kind", {"shardplan-plan"});
    out.kind = *kind;
    check_schema(top);
    out.shardplan_version = top.opt_string("shardplan_version").value_or("");
    out.model = top.opt_string("model");
    out.framework = top.opt_string("framework");
    if (top.has("inputs")) out.inputs = read_inputs(top.object("inputs"));
    out.plan = read_plan(top.object("plan"));
    // Descriptions of where the plan lands, derived from the plan and the system: output, not input.
    top.allow({"system", "rank_order", "groups", "expert_rank_order", "predicted"});
    if (doc.contains("predicted") && doc.at("predicted").is_object()) {
      PredictedNumbers p;
      p.step_s = reported(doc, "predicted", "step_s").value_or(0);
      p.tokens_per_s_per_gpu = reported(doc, "predicted", "tokens_per_s_per_gpu").value_or(0);
      p.mfu = reported(doc, "predicted", "mfu");
      p.memory_bytes = reported(doc, "predicted", "memory_bytes");
      if (p.step_s > 0) out.predicted = p;
    }
    if (!out.inputs && doc.contains("system") && doc.at("system").is_object() && out.model) {
      // Files emitted before "inputs" existed: a cluster's name is its file name; a standard system needs flags.
      const json& s = doc.at("system");
      if (s.contains("name") && s.at("name").is_string() && s.contains("gpus") && s.at("gpus").is_number_integer() &&
          s.at("name").get<std::string>().find(" (standard node)") == std::string::npos) {
        PlanInputs in;
        in.model = *out.model;
        in.framework = out.framework.value_or("");
        in.system = s.at("name").get<std::string>();
        in.gpus = s.at("gpus").get<int>();
        out.inputs = in;
      }
    }
  } else if (doc.is_object() && doc.contains("context")) {
    check_schema(top);
    const json* ctx = top.get("context");
    if (!ctx->is_object()) top.fail("context", "expected an object, got " + json_type_name(*ctx));
    const std::string command = ctx->contains("command") && ctx->at("command").is_string()
                                    ? ctx->at("command").get<std::string>()
                                    : std::string();
    if (command != "predict")
      top.fail("context", "a " + (command.empty() ? std::string("report") : command + " report") +
                              " is not one plan: give a predict --json report, a search --emit json plan or a plan "
                              "object (docs/plan-json.md)");
    out.kind = "predict report";
    if (ctx->contains("model") && ctx->at("model").is_string()) out.model = ctx->at("model").get<std::string>();
    if (ctx->contains("framework") && ctx->at("framework").is_string())
      out.framework = ctx->at("framework").get<std::string>();
    if (ctx->contains("version") && ctx->at("version").is_string())
      out.shardplan_version = ctx->at("version").get<std::string>();
    if (top.has("inputs")) out.inputs = read_inputs(top.object("inputs"));
    out.plan = read_plan(top.object("plan"));
    top.allow({"model", "memory", "time", "throughput", "feasible", "problems", "plan_file", "validation_record",
               "offload", "uncertainty"});
    if (const auto step = reported(doc, "time", "step_s")) {
      PredictedNumbers p;
      p.step_s = *step;
      p.tokens_per_s_per_gpu = reported(doc, "throughput", "tokens_per_s_per_gpu").value_or(0);
      p.mfu = reported(doc, "throughput", "mfu");
      p.memory_bytes = reported(doc, "memory", "total_bytes");
      out.predicted = p;
    }
  } else if (doc.is_object()) {
    // A bare plan object: every key must be a plan key; an object with none is no plan at all.
    bool any = false;
    for (const auto& [key, value] : doc.items())
      for (const PlanKey& k : plan_keys()) any = any || key == k.name;
    if (!any && !doc.empty())
      throw ConfigError(filename + ": not a shardplan plan: expected \"kind\": \"shardplan-plan\" (search --emit "
                                   "json), a predict --json report, or a plan object such as {\"tp\": 8, \"pp\": 2} "
                                   "(docs/plan-json.md)");
    out.kind = "plan";
    out.plan = read_plan(top);
    return out;
  } else {
    top.fail_here("expected a JSON object");  // throws
  }
  top.finish();
  return out;
}

PlanFile load_plan_file(const std::string& path) { return parse_plan_json(read_file(path), path); }

}  // namespace shardplan::io
