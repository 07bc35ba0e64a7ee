#include "apps/plan_file.h"

#include "apps/report_table.h"
#include "apps/text.h"
#include "modeler/evaluate.h"
#include "modeler/units.h"

namespace shardplan::cli {

namespace {

std::string signed_percent(double now, double before) {
  if (before == 0) return "";
  const double d = 100 * (now - before) / before;
  return fmt(d >= 0 ? "+%.2f%%" : "%.2f%%", d);
}

}  // namespace

std::vector<std::string> apply_plan_file(const io::PlanFile& file, const CLI::App& cli, std::string* model,
                                         SystemFlags* system, PlanFlags* plan) {
  auto given = [&cli](const char* flag) { return cli.count(flag) > 0; };
  std::vector<std::string> overridden;
  plan->plan_file = file.file;
  const io::PlanFields& pf = file.plan;
  // Fills one flag from the file unless the command line gave it; a given flag that differs from the file's
  // field is recorded as replacing it.
  auto fill = [&](const char* flag, const char* key, auto* dst, const auto& src) {
    if (!src) return;
    if (given(flag)) {
      overridden.push_back(flag);
      return;
    }
    *dst = *src;
    plan->from_file[flag] = key;
  };

  // What the plan was predicted for: model, system, framework.
  const std::optional<std::string> file_model = file.inputs ? std::optional(file.inputs->model) : file.model;
  if (given("--model")) {
    if (file_model) overridden.push_back("--model");
  } else if (file_model) {
    *model = *file_model;
  } else {
    throw ConfigError(file.file + ": the " + file.kind + " names no model: give --model");
  }
  const bool system_given = given("--system") || given("--gpu");
  if (system_given) {
    if (file.inputs) overridden.push_back(given("--system") ? "--system" : "--gpu");
    if (file.inputs && !given("--gpus")) system->gpus = file.inputs->gpus;  // the same GPU count on another system
  } else if (file.inputs) {
    const io::PlanInputs& in = *file.inputs;
    system->system = in.system;
    system->gpu = in.gpu;
    if (!given("--gpus")) system->gpus = in.gpus;
    else overridden.push_back("--gpus");
    auto keep = [&](const char* flag, auto* dst, auto v) {
      if (given(flag)) overridden.push_back(flag);
      else if (v > 0) *dst = v;
    };
    keep("--gpus-per-node", &system->gpus_per_node, in.gpus_per_node);
    keep("--nvlink-domain", &system->nvlink_domain, in.nvlink_domain);
    keep("--nic-gbps", &system->nic_gbps, in.nic_gbps);
    keep("--power-limit-w", &system->power_limit_w, in.power_limit_w);
  } else {
    throw ConfigError(file.file + ": the " + file.kind +
                      " names no system: give --system CLUSTER or --gpu GPU --gpus N");
  }
  const std::optional<std::string> file_fw =
      file.inputs && !file.inputs->framework.empty() ? std::optional(file.inputs->framework) : file.framework;
  if (file_fw) {
    if (given("--framework")) overridden.push_back("--framework");
    else plan->framework = *file_fw;
  }

  // The plan. Derived fields follow what they derive from when a flag replaced it.
  fill("--tp", "tp", &plan->tp, pf.tp);
  fill("--pp", "pp", &plan->pp, pf.pp);
  fill("--vpp", "vpp", &plan->vpp, pf.vpp);
  fill("--cp", "cp", &plan->cp, pf.cp);
  fill("--tsp", "tsp", &plan->tsp, pf.tsp);
  const bool layout_replaced = given("--tp") || given("--pp") || given("--cp") || given("--tsp") || given("--gpus");
  if (!layout_replaced || given("--dp")) fill("--dp", "dp", &plan->dp, pf.dp);
  // A file's ep 1 and etp = tp are the defaults: writing them would make them look given (MoE flags on dense
  // models are errors), so only other values are filled.
  if (pf.ep && *pf.ep != 1) fill("--ep", "ep", &plan->ep, pf.ep);
  if (pf.etp && pf.tp && *pf.etp != *pf.tp && (!given("--tp") || given("--etp")))
    fill("--etp", "etp", &plan->etp, pf.etp);
  fill("--zero", "zero", &plan->zero, pf.zero);
  if (pf.sequence_parallel) {
    if (given("--sp") || given("--no-sp")) {
      overridden.push_back(given("--sp") ? "--sp" : "--no-sp");
    } else if (!given("--tp") && !given("--tsp")) {
      plan->sp_on = *pf.sequence_parallel;
      plan->sp_off = !*pf.sequence_parallel;
      plan->from_file[*pf.sequence_parallel ? "--sp" : "--no-sp"] = "sequence_parallel";
    }
  }
  auto fill_bool = [&](const char* flag, const char* negation, const char* key, bool* dst,
                       const std::optional<bool>& src) {
    if (!src) return;
    if (given(flag) || given(negation)) {  // one option: its value tells which spelling was given
      overridden.push_back(*dst ? flag : negation);
      return;
    }
    *dst = *src;
    if (*src) plan->from_file[flag] = key;
  };
  fill_bool("--tp-overlap", "--no-tp-overlap", "tp_comm_overlap", &plan->tp_overlap, pf.tp_comm_overlap);
  fill_bool("--ep-overlap", "--no-ep-overlap", "ep_comm_overlap", &plan->ep_overlap, pf.ep_comm_overlap);
  fill_bool("--uneven-pp", "--no-uneven-pp", "uneven_pipeline", &plan->uneven_pp, pf.uneven_pipeline);
  fill("--pipeline-layout", "pipeline_layout", &plan->pipeline_layout, pf.pipeline_layout);
  if (pf.mtp_layers && *pf.mtp_layers > 0) fill("--mtp-layers", "mtp_layers", &plan->mtp_layers, pf.mtp_layers);
  // Filled wherever the file runs context parallelism: the default is the framework's, so a file's ring is a
  // choice. A cp 1 plan's kind says nothing (and --cp-kind with cp 1 is an error).
  if (pf.cp_kind && (pf.cp.value_or(1) > 1 || given("--cp-kind"))) {
    const std::optional<std::string> kind = std::string(to_string(*pf.cp_kind));
    fill("--cp-kind", "cp_kind", &plan->cp_kind, kind);
  }
  fill("--mbs", "micro_batch", &plan->mbs, pf.micro_batch);
  fill("--gbs", "global_batch", &plan->gbs, pf.global_batch);
  fill("--seq", "seq_len", &plan->seq, pf.seq_len);
  if (pf.recompute) {
    const std::optional<std::string> r = std::string(to_string(*pf.recompute));
    fill("--recompute", "recompute", &plan->recompute, r);
  }
  if (pf.recompute_layers && *pf.recompute_layers > 0)
    fill("--recompute-layers", "recompute_layers", &plan->recompute_layers, pf.recompute_layers);
  if (pf.recompute_modules && *pf.recompute_modules != kRecomputeCoreAttn && !given("--recompute")) {
    const std::optional<std::string> m = recompute_modules_string(*pf.recompute_modules);
    fill("--recompute-modules", "recompute_modules", &plan->recompute_modules, m);
  }
  fill("--precision", "precision", &plan->precision, pf.precision);
  if (pf.optimizer_offload && *pf.optimizer_offload > 0)
    fill("--optimizer-offload", "optimizer_offload", &plan->optimizer_offload, pf.optimizer_offload);
  if (pf.dp_shard && *pf.dp_shard > 0) fill("--dp-shard", "dp_shard", &plan->sharding.dp_shard, pf.dp_shard);
  if (pf.zeropp && *pf.zeropp != "off") fill("--zeropp", "zeropp", &plan->sharding.zeropp, pf.zeropp);
  fill_bool("--param-offload", "--no-param-offload", "param_offload", &plan->sharding.param_offload, pf.param_offload);
  if (pf.offload_device && *pf.offload_device != "cpu")
    fill("--offload-device", "offload_device", &plan->sharding.offload_device, pf.offload_device);
  if (pf.activation_offload_layers && *pf.activation_offload_layers > 0)
    fill("--activation-offload-layers", "activation_offload_layers", &plan->sharding.activation_offload_layers,
         pf.activation_offload_layers);
  if (pf.peft && *pf.peft != "none") {
    fill("--peft", "peft", &plan->finetune.peft, pf.peft);
    fill("--lora-rank", "lora_rank", &plan->finetune.lora_rank, pf.lora_rank);
    fill("--lora-targets", "lora_targets", &plan->finetune.lora_targets, pf.lora_targets);
    if (pf.lora_dropout && *pf.lora_dropout > 0)
      fill("--lora-dropout", "lora_dropout", &plan->finetune.lora_dropout, pf.lora_dropout);
  }
  if (pf.optimizer && *pf.optimizer != "adamw")
    fill("--optimizer", "optimizer", &plan->finetune.optimizer, pf.optimizer);
  if (pf.moe_imbalance && *pf.moe_imbalance != 1.0)
    fill("--moe-imbalance", "moe_imbalance", &plan->moe_imbalance, pf.moe_imbalance);
  if (pf.capacity_factor && *pf.capacity_factor > 0)
    fill("--capacity-factor", "capacity_factor", &plan->capacity_factor, pf.capacity_factor);
  if (pf.moe_dispatcher) fill("--moe-dispatcher", "moe_dispatcher", &plan->moe_dispatcher, pf.moe_dispatcher);
  if (pf.moe_max_nodes && *pf.moe_max_nodes > 0)
    fill("--moe-max-nodes", "moe_max_nodes", &plan->moe_max_nodes, pf.moe_max_nodes);
  fill_bool("--moe-fp8-dispatch", "--no-moe-fp8-dispatch", "moe_fp8_dispatch", &plan->moe_fp8_dispatch,
            pf.moe_fp8_dispatch);
  if (pf.fp8_param_gather) {  // null in the file: the framework's, as without the flag
    if (given("--fp8-param-gather")) {  // either spelling: the option's value says which
      overridden.push_back(plan->fp8_param_gather.value_or(true) ? "--fp8-param-gather" : "--no-fp8-param-gather");
    } else {
      plan->fp8_param_gather = *pf.fp8_param_gather;
      plan->from_file[*pf.fp8_param_gather ? "--fp8-param-gather" : "--no-fp8-param-gather"] = "fp8_param_gather";
    }
  }
  if (pf.sdp_keep && *pf.sdp_keep < 1.0) {
    fill("--sdp-keep", "sdp_keep", &plan->sdp_keep, pf.sdp_keep);
    if (pf.sdp_mask) {
      const std::optional<std::string> m = std::string(to_string(*pf.sdp_mask));
      fill("--sdp-mask", "sdp_mask", &plan->sdp_mask, m);
    }
    if (pf.sdp_granularity) {
      const std::optional<std::string> g = std::string(to_string(*pf.sdp_granularity));
      fill("--sdp-granularity", "sdp_granularity", &plan->sdp_granularity, g);
    }
  }
  return overridden;
}

io::PlanInputs plan_inputs(const std::string& model, const SystemFlags& system, int gpus,
                           const std::string& framework) {
  io::PlanInputs in;
  in.model = model;
  in.framework = framework;
  in.system = system.system;
  in.gpu = system.gpu;
  in.gpus = gpus;
  in.gpus_per_node = system.gpus_per_node.value_or(0);
  in.nvlink_domain = system.nvlink_domain.value_or(0);
  in.nic_gbps = system.nic_gbps.value_or(0);
  in.power_limit_w = system.power_limit_w.value_or(0);
  return in;
}

std::string compare_with_file(const io::PredictedNumbers& file, const Estimate& now) {
  const double step = now.time.step().v;
  std::string s = "step " + fmt("%.4g s", step) + " (file " + fmt("%.4g s", file.step_s) + ", " +
                  signed_percent(step, file.step_s) + ")";
  if (file.tokens_per_s_per_gpu > 0)
    s += ", " + with_commas(now.tokens_per_s_per_gpu) + " tokens/s/GPU (file " +
         with_commas(file.tokens_per_s_per_gpu) + ", " +
         signed_percent(now.tokens_per_s_per_gpu, file.tokens_per_s_per_gpu) + ")";
  if (file.memory_bytes && *file.memory_bytes > 0)
    s += ", " + fmt("%.2f GiB", to_GiB(now.memory.total())) + " (file " +
         fmt("%.2f GiB", to_GiB(Bytes(*file.memory_bytes))) + ", " +
         signed_percent(now.memory.total().v, *file.memory_bytes) + ")";
  return s;
}

Comparison compare_plan(const io::PlanFile& file, const SearchFlags& f, const ModelDesc& model, const System& sys,
                        const Framework& fw, const SearchResult& r) {
  // The file's fields through the same flag table predict --plan uses, with nothing given on a command line.
  CLI::App cli;
  std::string file_model;
  SystemFlags system;
  PlanFlags flags;
  cli.add_option("--model", file_model);
  add_system_flags(&cli, &system, false);
  add_plan_flags(&cli, &flags);
  cli.parse(std::vector<std::string>{});
  const io::PlanFile without_system = [&] {
    io::PlanFile copy = file;
    if (!copy.inputs && copy.model) {  // a file naming no system is compared on the search's
      io::PlanInputs in;
      in.model = *copy.model;
      in.system = f.system.system;
      in.gpu = f.system.gpu;
      in.gpus = sys.gpus;
      copy.inputs = in;
    }
    return copy;
  }();
  if (file.inputs || file.model) {
    apply_plan_file(without_system, cli, &file_model, &system, &flags);
  } else {  // a bare plan object: the search's model and system
    file_model = f.model;
    system.gpus = sys.gpus;
    apply_plan_file(
        [&] {
          io::PlanFile copy = file;
          copy.inputs = io::PlanInputs{f.model, fw.name, f.system.system, f.system.gpu, sys.gpus, 0, 0, 0, 0};
          return copy;
        }(),
        cli, &file_model, &system, &flags);
  }
  auto mismatch = [&](const std::string& what, const std::string& file_value, const std::string& search_value) {
    throw ConfigError("--compare " + file.file + ": the file plans for " + what + " " + file_value +
                      ", this search for " + search_value + ": a plan for another problem cannot be ranked here");
  };
  if (file_model != f.model) mismatch("model", "'" + file_model + "'", "'" + f.model + "'");
  if (system.gpus && *system.gpus != sys.gpus)
    mismatch("GPU count", std::to_string(*system.gpus), std::to_string(sys.gpus));
  if (flags.gbs && f.gbs && *flags.gbs != *f.gbs)
    mismatch("global batch", std::to_string(*flags.gbs), std::to_string(*f.gbs));
  if (flags.seq && f.seq && *flags.seq != *f.seq)
    mismatch("sequence length", std::to_string(*flags.seq), std::to_string(*f.seq));
  if (!flags.gbs) flags.gbs = f.gbs;
  if (!flags.seq) flags.seq = f.seq;

  Comparison c;
  c.file = file.file;
  if (flags.framework != fw.name)
    c.notes.push_back("the file was predicted under framework " + flags.framework + "; compared under " + fw.name +
                      ", this search's");
  const std::string file_system = !system.system.empty() ? system.system : system.gpu;
  const std::string search_system = !f.system.system.empty() ? f.system.system : f.system.gpu;
  if (file_system != search_system)
    c.notes.push_back("the file was predicted on " + file_system + "; compared on " + search_system +
                      ", this search's");
  const Plan plan = resolve_plan(flags, sys);
  check_flags_fit(flags, model, plan);
  c.estimate = evaluate(model, sys, plan, fw);
  c.fitting = r.feasible;
  const bool fits = c.estimate.feasible() && memory_overflow(c.estimate, search_options(f).headroom).v <= 0;
  if (fits) c.rank = rank_among(r, c.estimate.time.step().v);
  return c;
}

std::string format_comparison(const Comparison& c, const SearchResult& r) {
  const Estimate& e = c.estimate;
  std::string s = "compare " + c.file + ": " + plan_label(e.plan) + "\n";
  for (const std::string& n : c.notes) s += "  note: " + n + "\n";
  if (e.time.compute.v <= 0 || c.rank == 0) {
    s += std::string("  ") + (e.time.compute.v <= 0 ? "invalid plan" : "does not fit") + " here:\n";
    for (const Problem& p : e.problems) s += "    " + p.message + "\n";
    if (e.problems.empty()) s += "    less than the required headroom free\n";
    if (e.time.compute.v <= 0) return s;
  }
  s += "  step " + fmt("%.3f s", e.time.step().v) + ", " + with_commas(e.tokens_per_s_per_gpu) + " tokens/s/GPU, MFU " +
       fmt("%.1f%%", 100 * e.mfu) + ", " + fmt("%.1f GiB", to_GiB(e.memory.total())) + "\n";
  if (c.rank > 0)
    s += "  rank " + with_commas(static_cast<double>(c.rank)) + " of " + with_commas(static_cast<double>(c.fitting)) +
         " fitting plans";
  if (!r.top.empty()) {
    const Estimate& best = r.top.front();
    s += std::string(c.rank > 0 ? "; " : "  ") + "step " +
         signed_percent(e.time.step().v, best.time.step().v) + " and tokens/s/GPU " +
         signed_percent(e.tokens_per_s_per_gpu, best.tokens_per_s_per_gpu) + " against rank 1 (" +
         plan_label(best.plan) + ")";
  }
  return s + "\n";
}

}  // namespace shardplan::cli
