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
}  // namespace

json plan_json(const Plan& p) {
  return json{{"tp", p.tp},
              {"pp", p.pp},
              {"vpp", p.vpp},
              {"dp", p.dp},
              {"cp", p.cp},
              {"ep", p.ep},
              {"etp", p.etp},
              {"zero", p.zero},
              {"sequence_parallel", p.sequence_parallel},
              {"tp_comm_overlap", p.tp_comm_overlap},
              {"ep_comm_overlap", p.ep_comm_overlap},
              {"cp_kind", to_string(p.cp_kind)},
              {"micro_batch", p.micro_batch},
              {"global_batch", p.global_batch},
              {"microbatches_per_step", p.num_microbatches()},
              {"seq_len", p.seq_len},
              {"recompute", to_string(p.recompute)},
              {"recompute_layers", p.recompute_layers},
              {"recompute_modules",
               recompute_module_names(p.recompute == Recompute::selective ? p.recompute_modules : 0)},
              // The contract's spellings (bf16 fp16 fp8 mxfp8 nvfp4); fp8_recipe names the scaling (null:
              // the profile's default).
              {"precision", p.precision == Dtype::fp4 ? std::string("nvfp4")
                            : p.precision == Dtype::fp8 && p.fp8_recipe == Fp8Recipe::mxfp8 ? std::string("mxfp8")
                                                                                           : to_string(p.precision)},
              {"fp8_recipe", p.fp8_recipe ? json(to_string(*p.fp8_recipe)) : json(nullptr)},
              {"tsp", p.tsp},
              {"moe_imbalance", p.moe_imbalance},
              {"capacity_factor", p.capacity_factor},
              {"sdp_keep", p.sdp_keep},
              {"optimizer_offload", p.optimizer_offload},
              {"sdp_mask", to_string(p.sdp_mask)},
              {"sdp_granularity", to_string(p.sdp_granularity)},
              {"changes_training_semantics", p.changes_training_semantics()},
              {"uneven_pipeline", p.uneven_pipeline},
              {"dp_shard", p.dp_shard},
              {"zeropp", zeropp_string(p.zeropp)},
              {"param_offload", p.param_offload},
              {"offload_device", to_string(p.offload_device)},
              {"activation_offload_layers", p.activation_offload_layers},
              {"peft", to_string(p.finetune.peft)},
              {"lora_rank", p.finetune.lora_rank},
              {"lora_targets", lora_targets_string(p.finetune.lora_targets)},
              {"lora_dropout", p.finetune.lora_dropout},
              {"optimizer", to_string(p.finetune.optimizer)}};
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
                 {"fragmentation_bytes", m.fragmentation.v}, {"context_bytes", m.context.v},       {"capacity_bytes", m.capacity.v},
                 {"fits", m.fits()}};
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
