#include "modeler/io/report_json.h"

#include "modeler/zeropp.h"

#include <ctime>

#include "modeler/finetune.h"

namespace shardplan::io {

using nlohmann::json;

json context_json(const ReportContext& c) {
  char date[32];
  const std::time_t now = std::time(nullptr);
  std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  return json{{"version", SHARDPLAN_VERSION}, {"command", c.command}, {"model", c.model},
              {"system", c.system},           {"gpu", c.gpu},         {"gpus", c.gpus},
              {"framework", c.framework},     {"system_provenance", c.provenance}, {"date", date}};
}

namespace {
/// Megatron's selective-recompute modules as their names, in Megatron's spelling (none without selective recompute).
json recompute_module_names(unsigned modules) {
  json names = json::array();
  for (const RecomputeModuleName& m : kRecomputeModuleNames)
    if (modules & m.bit) names.push_back(m.name);
  return names;
}

/// The precision key's spelling: the contract's names (bf16 fp16 fp8 mxfp8 nvfp4), fp8 with the mxfp8 recipe as
/// mxfp8; fp8_recipe names the other fp8 scalings.
std::string precision_key(const Plan& p) {
  if (p.precision == Dtype::fp4) return "nvfp4";
  if (p.precision == Dtype::fp8 && p.fp8_recipe == Fp8Recipe::mxfp8) return "mxfp8";
  return to_string(p.precision);
}
template <class T, class F>
json or_null(const std::optional<T>& v, F&& f) {
  return v ? json(f(*v)) : json(nullptr);
}
}  // namespace

const std::vector<PlanKey>& plan_keys() {
  // Every Plan field has a key here (tests/apps/plan_file_test.cc fails to compile when Plan gains a field and
  // checks that each one comes back through a plan file); the last two are derived and only checked on reading.
  static const std::vector<PlanKey> keys = {
      {"tp", [](const Plan& p) { return json(p.tp); }},
      {"pp", [](const Plan& p) { return json(p.pp); }},
      {"vpp", [](const Plan& p) { return json(p.vpp); }},
      {"dp", [](const Plan& p) { return json(p.dp); }},
      {"cp", [](const Plan& p) { return json(p.cp); }},
      {"ep", [](const Plan& p) { return json(p.ep); }},
      {"etp", [](const Plan& p) { return json(p.etp); }},
      {"tsp", [](const Plan& p) { return json(p.tsp); }},
      {"zero", [](const Plan& p) { return json(p.zero); }},
      {"sequence_parallel", [](const Plan& p) { return json(p.sequence_parallel); }},
      {"tp_comm_overlap", [](const Plan& p) { return json(p.tp_comm_overlap); }},
      {"ep_comm_overlap", [](const Plan& p) { return json(p.ep_comm_overlap); }},
      {"cp_kind", [](const Plan& p) { return json(to_string(p.cp_kind)); }},
      {"uneven_pipeline", [](const Plan& p) { return json(p.uneven_pipeline); }},
      {"pipeline_layout", [](const Plan& p) { return json(p.pipeline_layout); }},  // "": the even split
      {"mtp_layers", [](const Plan& p) { return json(p.mtp_layers); }},
      {"moe_imbalance", [](const Plan& p) { return json(p.moe_imbalance); }},
      {"capacity_factor", [](const Plan& p) { return json(p.capacity_factor); }},
      // null: the framework's dispatcher (Framework::moe_dispatchers).
      {"moe_dispatcher",
       [](const Plan& p) { return or_null(p.moe_dispatcher, [](MoeDispatcher d) { return to_string(d); }); }},
      {"moe_max_nodes", [](const Plan& p) { return json(p.moe_max_nodes); }},
      {"moe_fp8_dispatch", [](const Plan& p) { return json(p.moe_fp8_dispatch); }},
      {"sdp_keep", [](const Plan& p) { return json(p.sdp_keep); }},
      {"sdp_mask", [](const Plan& p) { return json(to_string(p.sdp_mask)); }},
      {"sdp_granularity", [](const Plan& p) { return json(to_string(p.sdp_granularity)); }},
      {"micro_batch", [](const Plan& p) { return json(p.micro_batch); }},
      {"global_batch", [](const Plan& p) { return json(p.global_batch); }},
      {"seq_len", [](const Plan& p) { return json(p.seq_len); }},
      {"recompute", [](const Plan& p) { return json(to_string(p.recompute)); }},
      {"recompute_layers", [](const Plan& p) { return json(p.recompute_layers); }},
      {"recompute_modules",  // only under selective recompute, where they apply
       [](const Plan& p) {
         return recompute_module_names(p.recompute == Recompute::selective ? p.recompute_modules : 0);
       }},
      {"precision", [](const Plan& p) { return json(precision_key(p)); }},
      {"optimizer_offload", [](const Plan& p) { return json(p.optimizer_offload); }},
      // null: the framework's recipe (Framework::fp8_recipe; nvfp4 for fp4 GEMMs).
      {"fp8_recipe", [](const Plan& p) { return or_null(p.fp8_recipe, [](Fp8Recipe r) { return to_string(r); }); }},
      // null: the framework's (Framework::fp8_param_gather).
      {"fp8_param_gather", [](const Plan& p) { return or_null(p.fp8_param_gather, [](bool b) { return b; }); }},
      {"dp_shard", [](const Plan& p) { return json(p.dp_shard); }},
      {"zeropp", [](const Plan& p) { return json(zeropp_string(p.zeropp)); }},
      {"param_offload", [](const Plan& p) { return json(p.param_offload); }},
      {"offload_device", [](const Plan& p) { return json(to_string(p.offload_device)); }},
      {"activation_offload_layers", [](const Plan& p) { return json(p.activation_offload_layers); }},
      {"peft", [](const Plan& p) { return json(to_string(p.finetune.peft)); }},
      {"lora_rank", [](const Plan& p) { return json(p.finetune.lora_rank); }},
      {"lora_targets", [](const Plan& p) { return json(lora_targets_string(p.finetune.lora_targets)); }},
      {"lora_dropout", [](const Plan& p) { return json(p.finetune.lora_dropout); }},
      {"optimizer", [](const Plan& p) { return json(to_string(p.finetune.optimizer)); }},
      {"microbatches_per_step", [](const Plan& p) { return json(p.num_microbatches()); }, /*derived=*/true},
      {"changes_training_semantics", [](const Plan& p) { return json(p.changes_training_semantics()); }, true},
  };
  return keys;
}

json plan_json(const Plan& p) {
  json j = json::object();
  for (const PlanKey& k : plan_keys()) j[k.name] = k.write(p);
  return j;
}

json model_json(const ModelDesc& m) {
  return json{{"name", m.name},
              {"layers", m.layers},
              {"hidden", m.hidden},
              {"total_params", total_params(m)},
              {"active_params", activated_params(m)},
              {"non_embedding_params", non_embedding_params(m)},
              {"moe", m.moe.has_value()}};
}

json estimate_json(const Estimate& e) {
  json j;
  j["plan"] = plan_json(e.plan);
  json problems = json::array();
  for (const Problem& p : e.problems) problems.push_back({{"code", p.code}, {"message", p.message}});
  j["feasible"] = e.feasible();
  j["problems"] = problems;
  if (e.time.compute.v <= 0) return j;  // invalid plan: no breakdown
  const MemoryBreakdown& m = e.memory;
  j["memory"] = {{"total_bytes", m.total().v},         {"weights_bytes", m.weights.v},
                 {"gradients_bytes", m.gradients.v},   {"optimizer_bytes", m.optimizer.v},
                 {"activations_bytes", m.activations.v}, {"other_bytes", m.other().v},
                 {"logits_bytes", m.logits.v},         {"buffers_bytes", m.buffers.v},
                 {"fragmentation_bytes", m.fragmentation.v}, {"context_bytes", m.context.v},
                 {"capacity_bytes", m.capacity.v},     {"fits", m.fits()}};
  const TimeBreakdown& t = e.time;
  json exposed;
  for (int k = 0; k < kNumCommKinds; ++k) exposed[kCommKindNames[k]] = t.exposed_comm[k].v;
  j["time"] = {{"step_s", t.step().v},
               {"compute_s", t.compute.v},
               {"recompute_s", t.recompute.v},
               {"moe_s", t.moe.v},
               {"exposed_comm_s", t.exposed_comm_total().v},
               {"exposed_comm_by_kind_s", exposed},
               {"bubble_s", t.bubble.v},
               {"optimizer_s", t.optimizer.v}};
  j["time"]["host_transfer_s"] = t.host_transfer.v;
  // Only where a fitted profile states a host time per layer pass: uncalibrated reports stay as they were.
  if (t.host_layer.v != 0) j["time"]["host_layer_s"] = t.host_layer.v;
  if (e.plan.optimizer_offload > 0 || e.offload.any()) {
    const OffloadEstimate& o = e.offload;
    j["offload"] = {{"host_bytes", o.host.v},         {"device_to_host_bytes", o.device_to_host.v},
                    {"host_to_device_bytes", o.host_to_device.v}, {"cpu_step_s", o.cpu_step.v},
                    {"transfer_s", o.transfer.v},    {"exposed_s", o.exposed.v},
                    {"host_link_gbps_used", o.link_gbps}, {"nvme_bytes", o.nvme.v},
                    {"layer_transfer_bytes", o.layer_transfer.v}, {"layer_exposed_s", o.layer_exposed.v},
                    {"nvme_traffic_bytes", o.nvme_traffic.v}, {"nvme_gbps_used", o.nvme_gbps}};
  }
  j["throughput"] = {{"tokens_per_s", e.tokens_per_s},
                     {"tokens_per_s_per_gpu", e.tokens_per_s_per_gpu},
                     {"mfu", e.mfu},
                     {"hfu", e.hfu},
                     {"model_flops_per_token", e.model_flops_per_token}};
  return j;
}

json list_json(const std::string& kind, const std::vector<ListEntry>& rows) {
  json items = json::array();
  for (const ListEntry& r : rows) {
    json item{{"name", r.name}, {"description", r.description}};
    for (const auto& [k, v] : r.numbers) item[k] = v;
    for (const auto& [k, v] : r.strings) item[k] = v;
    items.push_back(std::move(item));
  }
  return json{{"schema_version", 1}, {"kind", kind}, {"items", items}};
}

json predict_json(const ReportContext& ctx, const Estimate& e) {
  json j = estimate_json(e);
  j["schema_version"] = 1;
  j["context"] = context_json(ctx);
  return j;
}

}  // namespace shardplan::io
