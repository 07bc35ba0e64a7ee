#include "modeler/io/serving_json.h"

namespace shardplan::io {

namespace {
nlohmann::json worker_json(const serving::WorkerPlan& w) {
  nlohmann::json j{{"workers", w.workers}, {"tp", w.tp}, {"pp", w.pp}, {"attention_dp", w.attention_dp},
                   {"moe_tp", w.moe_tp}, {"moe_ep", w.moe_ep}};
  j["batch"] = w.batch ? nlohmann::json(*w.batch) : nlohmann::json(nullptr);
  return j;
}
nlohmann::json memory_json(const serving::MemoryReport& r) {
  return {{"capacity_bytes", r.capacity.v}, {"weights_bytes", r.weights.v}, {"activations_bytes", r.activations.v},
          {"kv_cache_bytes", r.kv_cache.v}, {"other_bytes", r.other.v},     {"total_bytes", r.total.v},
          {"fraction", r.fraction},         {"fits", r.fits},               {"rule", r.rule}};
}
}  // namespace

nlohmann::json kv_transfer_json(const serving::KvTransfer& t) {
  return {{"transport", serving::kv_transport_name(t.transport)},
          {"same_node", t.same_node},
          {"link", t.link},
          {"placement", t.placement},
          {"bytes_per_request", t.shards.moved.v},
          {"unique_bytes_per_request", t.shards.unique.v},
          {"send_bytes_per_gpu", t.shards.send_per_gpu.v},
          {"recv_bytes_per_gpu", t.shards.recv_per_gpu.v},
          {"senders", t.shards.senders},
          {"receivers", t.shards.receivers},
          {"bandwidth_bytes_per_s", t.bandwidth.v},
          {"time_s", t.time.v},
          {"exposed_s", t.exposed.v}};
}

namespace {
nlohmann::json step_json(const serving::StepTime& s) {
  return {{"total_s", s.total.v}, {"linear_s", s.linear.v}, {"attention_s", s.attention.v},
          {"moe_s", s.moe.v},     {"comm_s", s.comm.v},     {"other_s", s.other.v},
          {"host_s", s.host.v}};
}
}  // namespace

nlohmann::json serve_predict_json(const ServeJsonContext& ctx, const serving::ServeInputs& in,
                                  const serving::ServePrediction& p) {
  nlohmann::json j;
  j["schema_version"] = 1;
  j["context"] = {{"version", SHARDPLAN_VERSION}, {"command", "serve predict"}, {"model", ctx.model},
                  {"system", ctx.system}, {"engine", ctx.engine}, {"weights", ctx.weights}, {"kv", ctx.kv},
                  {"gpus", p.gpus}};
  auto spec = [](const std::string& s) { return s.empty() ? nlohmann::json(nullptr) : nlohmann::json(s); };
  j["context"]["sparsity"] = spec(ctx.sparsity);
  j["context"]["low_rank"] = spec(ctx.low_rank);
  j["context"]["weights_note"] = spec(ctx.weights_note);
  nlohmann::json plan{{"mode", in.plan.mode == serving::Mode::aggregated ? "aggregated" : "disaggregated"}};
  if (in.plan.mode == serving::Mode::aggregated) {
    plan["aggregated"] = worker_json(in.plan.agg);
  } else {
    plan["prefill"] = worker_json(in.plan.prefill);
    plan["decode"] = worker_json(in.plan.decode);
  }
  j["plan"] = plan;
  j["workload"] = {{"input_len", in.workload.input_len}, {"output_len", in.workload.output_len},
                   {"concurrency", in.workload.concurrency}, {"static_batch", in.static_batch},
                   {"prefix_hit", in.workload.prefix_hit}, {"context_depth", in.workload.context_depth}};
  j["latency"] = {{"ttft_s", p.ttft.v}, {"tpot_s", p.tpot.v}, {"tpot_includes_first_token", p.tpot_includes_first}};
  j["throughput"] = {{"request_tokens_per_s", p.request_tokens_per_s},
                     {"output_tokens_per_s", p.output_tokens_per_s},
                     {"output_tokens_per_s_per_gpu", p.output_tokens_per_s_per_gpu},
                     {"total_tokens_per_s_per_gpu", p.total_tokens_per_s_per_gpu},
                     {"prefill_tokens_per_s", p.prefill_tokens_per_s},
                     {"decode_tokens_per_s", p.decode_tokens_per_s}};
  j["batch"] = {{"steady_state", p.batch}, {"capped_by", p.batch_cap}, {"kv_tokens_per_gpu", p.kv_tokens},
                {"kv_max_sequences", p.kv_max_batch}};
  j["memory"] = memory_json(p.memory);
  if (in.plan.mode == serving::Mode::disaggregated) j["prefill_memory"] = memory_json(p.prefill_memory);
  if (p.kv_transfer) j["kv_transfer"] = kv_transfer_json(*p.kv_transfer);
  j["steps"] = {{"prefill", step_json(p.prefill_step)}, {"decode", step_json(p.decode_step)}};
  if (in.spec.enabled()) {
    // The speculative setting as given and what follows from it (speculative.h).
    j["speculative"] = {{"method", serving::spec_method_name(in.spec.method)},
                        {"tokens", in.spec.tokens},
                        {"accept", in.spec.accept},
                        {"accept_length", in.spec.accept_length > 0 ? nlohmann::json(in.spec.accept_length)
                                                                    : nlohmann::json(nullptr)},
                        {"expected_tokens_per_step", p.tokens_per_step},
                        {"kv_slots_per_sequence", p.kv_slots_per_seq}};
  }
  return j;
}

}  // namespace shardplan::io
