#include "apps/search_flags.h"

#include "apps/text.h"

#include <algorithm>
#include <cstdlib>

#include "modeler/io/yaml_reader.h"
#include "modeler/problems.h"
#include "modeler/strategies/strategy.h"

namespace shardplan::cli {

void add_search_flags(CLI::App* app, SearchFlags* f, bool gpus_required) {
  app->add_option("--model", f->model, "model name from models/, a model YAML or a Hugging Face config.json")
      ->required();
  add_system_flags(app, &f->system, false);
  app->remove_option(app->get_option("--gpus"));  // replaced by a list/range-valued --gpus
  auto* g = app->add_option("--gpus", f->gpus, "GPU count: N, a list a,b,c, or a:b (powers of two from a to b)");
  if (gpus_required) g->required();
  app->add_option("--gbs", f->gbs, "global batch size in sequences (required)")->check(positive_number());
  app->add_option("--seq", f->seq, "sequence length in tokens (required)")->check(positive_number());
  const char* axis = ": a value, a list a,b,c, a range a:b (default candidates within), or a:b:step";
  app->add_option("--tp", f->tp,
                  std::string("tensor-parallel degrees") + axis + " (default: powers of two up to --max-tp)");
  app->add_option("--cp", f->cp,
                  std::string("context-parallel degrees") + axis + " (default: powers of two up to --max-cp)");
  app->add_option("--pp", f->pp,
                  std::string("pipeline stages") + axis + " (default: divisors of the GPU count up to --max-pp)");
  app->add_option("--vpp", f->vpp, std::string("virtual stages per pipeline rank") + axis +
                                      " (default: divisors of a stage's layers)");
  app->add_option("--zero", f->zero, std::string("ZeRO stages") + axis + " (default: the stages the framework offers)");
  app->add_option("--mbs", f->mbs,
                  std::string("micro-batch sizes") + axis + " (default: divisors of the per-replica batch)");
  app->add_option("--ep", f->ep, std::string("expert-parallel degrees, MoE models only") + axis +
                                    " (default: powers of two up to the experts)");
  app->add_option("--max-tp", f->max_tp, "largest tp (default: GPUs per NVLink domain)")->check(positive_number());
  app->add_option("--max-pp", f->max_pp, "largest pp (default: layers)")->check(positive_number());
  app->add_option("--max-cp", f->max_cp, "largest cp (default 32)")->check(positive_number());
  f->sp_option =
      app->add_flag("--sp,!--no-sp", f->sp, "only plans with (or without) sequence parallelism (default: both)");
  f->tp_overlap_option =
      app->add_flag("--tp-overlap,!--no-tp-overlap", f->tp_overlap,
                    "only plans with (or without) TP overlap (default: both, where the framework offers it)");
  f->ep_overlap_option = app->add_flag(
      "--ep-overlap,!--no-ep-overlap", f->ep_overlap,
      "only MoE plans with (or without) all-to-all overlap, Megatron-Core combined 1F1B (default: both, where the "
      "framework offers it)");
  app->add_option(
      "--moe-dispatcher", f->moe_dispatcher,
      "MoE token dispatchers to try, a list of alltoall, allgather, deepep, hybridep, each one the framework "
      "offers (`shardplan frameworks` lists them; default: the framework's default)");
  app->add_option("--moe-max-nodes", f->moe_max_nodes,
                  "node limits of node-limited MoE routing to try, a list (0: no limit; default 0: a limit changes "
                  "what the router may pick; Megatron-Core only)");
  app->add_option("--recompute", f->recompute, "recompute options, a list of none, selective, full (default all)");
  app->add_option("--recompute-layers", f->recompute_layers,
                  "besides full recompute of every layer, of only N layers per pipeline chunk (block method), a list "
                  "(default: none)");
  app->add_option("--recompute-modules", f->recompute_modules,
                  "Megatron-Core module sets selective recompute tries (default core_attn): a list of sets, each "
                  "joined by + (core_attn, layernorm, mlp, moe, moe_act, shared_experts, mla_up_proj)");
  app->add_option("--precision", f->precision,
                  "GEMM precisions, a list of bf16, fp16, fp8 (the framework's recipe), fp8-delayed, fp8-tensorwise, "
                  "fp8-blockwise, mxfp8, nvfp4 (default bf16; one fp8 recipe per search)");
  app->add_option("--framework", f->framework, "training software profile (default megatron-lm)")
      ->check(CLI::IsMember(framework_names()));
  app->add_option("--headroom", f->headroom_gib, "GiB of memory every plan must leave free (default 0)")
      ->check(non_negative_number());
  app->add_option("--allow", f->allow,
                  "strategies outside the default search, a list of: tsp (folded tensor + sequence parallelism, "
                  "docs/techniques.md 1: no mainstream framework runs it), sdp (subnetwork data parallelism, "
                  "docs/techniques.md 2: changes what is trained); default: neither");
  app->add_option("--tsp", f->tsp,
                  std::string("TSP degrees, with --allow tsp") + axis + " (default: powers of two from 2 to --max-tp)");
  app->add_option("--optimizer-offload", f->optimizer_offload,
                  "optimizer offload fractions in [0, 1] to try, a list (default 0: no offload): 0,1 or 0,0.5,1");
  add_search_sharding_flags(app, &f->sharding);
  app->add_option("--sdp-keep", f->sdp_keep, "SDP keep fractions in (0, 1), a list (with --allow sdp; default 0.5)");
  app->add_option("--top", f->top, "plans to list (default 10)")->check(positive_number());
  app->add_option("--threads", f->threads, "worker threads (default: all cores)")->check(positive_number());
  app->add_flag("--quiet", f->quiet, "no progress indicator");
  add_finetune_flags(app, &f->finetune);
}

void add_compare_flag(CLI::App* app, SearchFlags* f) {
  app->add_option("--compare", f->compare,
                  "evaluate the plan of this JSON file (search --emit json, predict --json, or a plan object; "
                  "docs/plan-json.md) in this search's problem and show its rank and its difference to rank 1");
}

void check_search_flags_fit(const SearchFlags& f, const ModelDesc& model) {
  if (model.moe) return;
  std::vector<std::string> errors;
  if (!f.ep.empty()) errors.push_back("--ep " + f.ep);
  if (f.ep_overlap_option && f.ep_overlap_option->count() > 0)
    errors.push_back(f.ep_overlap.value_or(false) ? "--ep-overlap" : "--no-ep-overlap");
  if (!f.moe_dispatcher.empty()) errors.push_back("--moe-dispatcher " + f.moe_dispatcher);
  if (!f.moe_max_nodes.empty()) errors.push_back("--moe-max-nodes " + f.moe_max_nodes);
  std::string msg;
  for (const std::string& e : errors)
    msg += (msg.empty() ? "" : "\n") + e + " applies to mixture-of-experts models, and " + model.name +
           " is dense (no experts)";
  if (!msg.empty()) throw ConfigError(msg);
}

std::vector<int> resolve_gpu_counts(const std::string& text) {
  if (text.empty()) throw ConfigError("give the GPU count: --gpus N (or a list a,b or a range a:b)");
  const AxisSpec a = parse_axis("--gpus", text);
  std::vector<int> counts = a.range ? powers_of_two(a.lo, a.hi) : a.values;
  if (counts.empty())
    throw ConfigError("--gpus: '" + text + "' names no GPU count (a:b takes the powers of two in it)");
  return counts;
}

namespace {

std::string join_dispatchers(const std::vector<MoeDispatcher>& v) {
  std::string s;
  for (MoeDispatcher d : v) s += (s.empty() ? "" : ", ") + std::string(to_string(d));
  return s;
}

/// The dispatcher and node-limit axes, each only where the framework offers it (Framework::moe_dispatchers,
/// offers_moe_max_nodes): unlisted, the framework's default dispatcher (an unset plan field) and no node limit.
/// Searching every dispatcher by default waits for the plan JSON to carry moe_dispatcher (a plan searched with
/// deepep would read back as alltoall).
void resolve_moe_axes(const SearchFlags& f, SpaceRequest* r) {
  const Framework& fw = resolve_framework(f.framework);
  for (const std::string& s : split_commas(f.moe_dispatcher)) {
    const std::optional<MoeDispatcher> d = parse_moe_dispatcher(s);
    if (!d)
      throw ConfigError("--moe-dispatcher: unknown dispatcher '" + s + "' (alltoall, allgather, deepep or hybridep)");
    if (std::find(fw.moe_dispatchers.begin(), fw.moe_dispatchers.end(), *d) == fw.moe_dispatchers.end())
      throw ConfigError("--moe-dispatcher: " + fw.name + " does not offer the " + s + " dispatcher (it offers " +
                        join_dispatchers(fw.moe_dispatchers) + ")");
    if (std::find(r->moe_dispatchers.begin(), r->moe_dispatchers.end(), *d) != r->moe_dispatchers.end())
      throw ConfigError("--moe-dispatcher: " + s + " is listed twice");
    r->moe_dispatchers.push_back(*d);
  }
  if (!f.moe_max_nodes.empty()) {
    const AxisSpec a = parse_axis("--moe-max-nodes", f.moe_max_nodes, 0);
    if (a.range) throw ConfigError("--moe-max-nodes takes a value or a list (0,4), not a range");
    for (int m : a.values)
      if (m > 0 && !fw.offers_moe_max_nodes)
        throw ConfigError("--moe-max-nodes: " + fw.name + " does not offer node-limited routing");
    r->moe_max_nodes = a.values;
  }
}

}  // namespace

SpaceRequest resolve_request(const SearchFlags& f) {
  SpaceRequest r;
  for (const std::string& name : split_commas(f.allow)) {
    if (name == "tsp") {
      r.allow_tsp = true;
      continue;
    }
    if (name == "sdp") {
      r.allow_sdp = true;
      continue;
    }
    bool searched = false;
    for (const Strategy* s : all_strategies()) searched = searched || name == s->name();
    if (searched) throw ConfigError("--allow: '" + name + "' is always searched; --allow takes tsp or sdp");
    const std::string near = io::closest_match(name, {"tsp", "sdp"});
    throw ConfigError("--allow: unknown strategy '" + name + "' (tsp or sdp)" +
                      (near.empty() ? "" : ", did you mean '" + near + "'?"));
  }
  if (!f.tsp.empty()) {
    if (!r.allow_tsp) throw ConfigError("--tsp " + f.tsp + " needs --allow tsp");
    r.tsp = parse_axis("--tsp", f.tsp);
  }
  for (const std::string& s : split_commas(f.sdp_keep)) {
    if (!r.allow_sdp) throw ConfigError("--sdp-keep " + f.sdp_keep + " needs --allow sdp");
    char* end = nullptr;
    const double keep = std::strtod(s.c_str(), &end);
    if (s.empty() || *end != '\0' || !(keep > 0.0 && keep < 1.0))
      throw ConfigError("--sdp-keep: '" + s + "' is not a fraction in (0, 1)");
    r.sdp_keep.push_back(keep);
  }
  for (const std::string& s : split_commas(f.optimizer_offload)) {
    char* end = nullptr;
    const double frac = std::strtod(s.c_str(), &end);
    if (s.empty() || *end != '\0' || !(frac >= 0.0 && frac <= 1.0))
      throw ConfigError("--optimizer-offload: '" + s + "' is not a fraction in [0, 1]");
    r.optimizer_offload.push_back(frac);
  }
  apply_search_sharding_flags(f.sharding, &r);
  r.finetune = resolve_finetune(f.finetune);
  r.global_batch = f.gbs.value_or(0);
  r.seq_len = f.seq.value_or(0);
  if (!f.tp.empty()) r.tp = parse_axis("--tp", f.tp);
  if (!f.cp.empty()) r.cp = parse_axis("--cp", f.cp);
  if (!f.pp.empty()) r.pp = parse_axis("--pp", f.pp);
  if (!f.vpp.empty()) r.vpp = parse_axis("--vpp", f.vpp);
  if (!f.zero.empty()) r.zero = parse_axis("--zero", f.zero, 0);
  else r.zero.values = resolve_framework(f.framework).zero_stages;  // the stages the software offers
  if (!f.mbs.empty()) r.mbs = parse_axis("--mbs", f.mbs);
  if (!f.ep.empty()) r.ep = parse_axis("--ep", f.ep);
  for (int z : r.zero.values)
    if (z > 3) throw ConfigError("--zero: stage " + std::to_string(z) + " does not exist (0, 1, 2 or 3)");
  if (f.max_tp) r.max_tp = *f.max_tp;
  if (f.max_pp) r.max_pp = *f.max_pp;
  if (f.max_cp) r.max_cp = *f.max_cp;
  if (f.sp && f.sp_option && f.sp_option->count() > 0) r.sp = {*f.sp};
  if (f.tp_overlap && f.tp_overlap_option && f.tp_overlap_option->count() > 0) r.tp_overlap = {*f.tp_overlap};
  else if (!resolve_framework(f.framework).offers_tp_overlap) r.tp_overlap = {false};  // nothing to overlap with
  if (f.ep_overlap && f.ep_overlap_option && f.ep_overlap_option->count() > 0) r.ep_overlap = {*f.ep_overlap};
  else if (!resolve_framework(f.framework).offers_ep_overlap) r.ep_overlap = {false};
  resolve_moe_axes(f, &r);
  for (const std::string& s : split_commas(f.recompute)) r.recompute.push_back(parse_recompute(s));
  if (!f.recompute_layers.empty()) {
    const AxisSpec a = parse_axis("--recompute-layers", f.recompute_layers);
    if (!a.range) r.recompute_layers = a.values;
    for (int n = a.lo; a.range && n <= a.hi; ++n) r.recompute_layers.push_back(n);
  }
  for (const std::string& s : split_commas(f.recompute_modules))
    r.recompute_modules.push_back(parse_recompute_modules_flag("--recompute-modules", s));
  if (!f.recompute_modules.empty() && r.recompute_modules.empty())
    throw ConfigError("--recompute-modules: no module set given");
  if (!r.recompute_modules.empty() && !r.recompute.empty() &&
      std::find(r.recompute.begin(), r.recompute.end(), Recompute::selective) == r.recompute.end())
    throw ConfigError("--recompute-modules needs selective among the --recompute options");
  for (const std::string& s : split_commas(f.precision)) {
    const Dtype d = parse_precision(s);
    if (std::find(r.precision.begin(), r.precision.end(), d) != r.precision.end())
      throw ConfigError("--precision: " + s + " repeats another fp8 recipe or value; one fp8 recipe per search");
    r.precision.push_back(d);
    if (d == Dtype::fp8) {
      r.fp8_recipe = precision_fp8_recipe(s);
    }
  }
  return r;
}

System system_for(const SearchFlags& f, int gpus) {
  SystemFlags s = f.system;
  s.gpus = gpus;
  return resolve_system(s);
}

SearchOptions search_options(const SearchFlags& f) {
  SearchOptions o;
  o.top_k = f.top;
  o.threads = f.threads;
  o.headroom = GiB(f.headroom_gib);
  return o;
}

std::string plan_label(const Plan& p) {
  std::string s =
      p.tsp > 1 ? "tsp" + std::to_string(p.tsp) : "tp" + std::to_string(p.tp) + " cp" + std::to_string(p.cp);
  s += " pp" + std::to_string(p.pp);
  if (p.vpp > 1) s += " vpp" + std::to_string(p.vpp);
  s += " dp" + std::to_string(p.dp);
  if (p.ep > 1) s += " ep" + std::to_string(p.ep);
  if (p.uneven_pipeline) s += " uneven";
  s += " z" + std::to_string(p.zero);
  if (p.sequence_parallel) s += " sp";
  if (p.tp_comm_overlap) s += " ovl";
  if (p.ep_comm_overlap) s += " epovl";
  if (p.ep > 1 && p.moe_dispatcher) s += std::string(" ") + to_string(*p.moe_dispatcher);
  if (p.moe_max_nodes > 0) s += " M" + std::to_string(p.moe_max_nodes);
  s += " mbs" + std::to_string(p.micro_batch) + " " + to_string(p.recompute);
  if (p.recompute_layers > 0) s += ":" + std::to_string(p.recompute_layers);
  if (p.recompute == Recompute::selective && p.recompute_modules != kRecomputeCoreAttn)
    s += ":" + recompute_modules_string(p.recompute_modules);
  s += " " + precision_name(p);
  if (p.optimizer_offload > 0) s += " offload" + fmt("%g", p.optimizer_offload);
  s += sharding_label(p);
  if (p.changes_training_semantics()) s += " sdp" + fmt("%g", p.sdp_keep) + "/" + to_string(p.sdp_mask);
  return s;
}

std::string predict_command(const SearchFlags& f, const Plan& p, int gpus) {
  std::string s = "shardplan predict --model " + f.model;
  const SystemFlags& sys = f.system;
  if (!sys.system.empty()) s += " --system " + sys.system;
  if (!sys.gpu.empty()) s += " --gpu " + sys.gpu;
  s += " --gpus " + std::to_string(gpus);
  if (sys.gpus_per_node) s += " --gpus-per-node " + std::to_string(*sys.gpus_per_node);
  if (sys.nvlink_domain) s += " --nvlink-domain " + std::to_string(*sys.nvlink_domain);
  if (sys.nic_gbps) s += " --nic-gbps " + fmt("%g", *sys.nic_gbps);
  if (sys.power_limit_w) s += " --power-limit-w " + fmt("%g", *sys.power_limit_w);
  return s + " " + plan_arguments(p, f.framework);
}

}  // namespace shardplan::cli
